// The print dialog's dial string (CUPS `phone`, `faxPrefix`) to fax numbers.
import { describe, expect, it } from "vitest";
import { readPhoneOption } from "../../src/intake/print/dial-string.js";

describe("readPhoneOption", () => {
  it("takes a number as given, and several numbers separated by commas", () => {
    expect(readPhoneOption("+15551234567", undefined, "strip")).toEqual({
      ok: true,
      numbers: ["+15551234567"],
      notes: [],
    });
    expect(readPhoneOption("+15551234567,+1 (555) 765-4321", undefined, "strip")).toMatchObject({
      ok: true,
      numbers: ["+15551234567", "+1 (555) 765-4321"],
    });
  });

  it("strips the outside-line prefix that faxPrefix names, or keeps it by rule", () => {
    const strip = readPhoneOption("9,15551234567", "9", "strip");
    expect(strip).toMatchObject({ ok: true, numbers: ["15551234567"] });
    expect(strip.ok && strip.notes.join()).toMatch(/prefix 9 was stripped/);
    expect(readPhoneOption("9,15551234567", "9", "keep")).toMatchObject({ ok: true, numbers: ["915551234567"] });
    expect(readPhoneOption("9p15551234567", "9", "strip")).toMatchObject({ ok: true, numbers: ["15551234567"] });
    // faxPrefix alone (CUPS 2.4.3 sends the number without it)
    expect(readPhoneOption("15551234567", "9,", "strip")).toMatchObject({ ok: true, numbers: ["15551234567"] });
  });

  it("drops p and w pauses with a note", () => {
    const r = readPhoneOption("1555p123w4567", undefined, "strip");
    expect(r).toMatchObject({ ok: true, numbers: ["15551234567"] });
    expect(r.ok && r.notes.join()).toMatch(/pauses \(p, w\) .* dropped/);
  });

  it("refuses what it cannot dial, saying why, never guesses", () => {
    expect(readPhoneOption("9,15551234567", undefined, "strip")).toEqual({
      ok: false,
      reason: expect.stringMatching(/"9" .* too short .* -o faxPrefix=9/),
    });
    expect(readPhoneOption("15551234567,,123", undefined, "strip")).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/"123" .* too short/),
    });
    expect(readPhoneOption("*67 15551234567", undefined, "strip")).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/\* or #/),
    });
    expect(readPhoneOption("1555;rm", undefined, "strip")).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/characters a dial string cannot have/),
    });
    expect(readPhoneOption("p,w", undefined, "strip")).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/no fax number/),
    });
  });
});
