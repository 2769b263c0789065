import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { formatFaxNumber, normalizeFaxNumber, toContactFormat } from "../../src/recipients/fax-number.js";
import { sniffFileType } from "../../src/intake/documents/file-type.js";
import { notifyOption } from "../../src/fax/user-directory.js";
import { tempFolder } from "../tmp-dir.js";

describe("fax numbers as people write them", () => {
  it.each([
    ["15551234567", "+15551234567"],
    ["+1 (555) 123-4567", "+15551234567"],
    ["5551234567", "+15551234567"],
    ["555.123.4567", "+15551234567"],
    ["+44 20 7946 0000", "+442079460000"],
    ["0044 20 7946 0000", "+442079460000"],
    ["442079460000", "+442079460000"],
  ])("%s -> %s", (input, e164) => {
    expect(normalizeFaxNumber(input, "1")).toEqual({ ok: true, e164 });
  });

  it.each([
    ["abc", "contains characters other than digits"],
    ["555-CALL-NOW", "contains characters other than digits"],
    ["123", "must have 4 to 15 digits"],
    ["1234567890123456", "must have 4 to 15 digits"],
    ["", "no fax number was given"],
  ])("refuses %j with a reason", (input, reason) => {
    const r = normalizeFaxNumber(input, "1");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(reason);
  });

  it("uses the default country code for national numbers", () => {
    expect(normalizeFaxNumber("2079460000", "44")).toEqual({ ok: true, e164: "+442079460000" });
  });

  it("formats for people and for the contact format of the service", () => {
    expect(formatFaxNumber("+15551234567")).toBe("+1 555-123-4567");
    expect(formatFaxNumber("+442079460000")).toBe("+44 20 7946 0000");
    expect(toContactFormat("+15550100100")).toBe("(555) 010-0100");
    expect(toContactFormat("+442079460000")).toBe("+442079460000");
  });
});

describe("file types by content", () => {
  it("judges by bytes, not by name", async () => {
    const dir = tempFolder("sniff");
    try {
      const f = (name: string, data: Buffer | string) => {
        const p = path.join(dir, name);
        writeFileSync(p, data);
        return p;
      };
      expect(await sniffFileType(f("a.pdf", "%PDF-1.7\n..."))).toMatchObject({
        contentType: "application/pdf",
        faxable: true,
      });
      expect(
        await sniffFileType(f("scan.bin", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]))),
      ).toMatchObject({ contentType: "image/png", faxable: true });
      expect(await sniffFileType(f("notes.txt", "Dear Sir,\nplease find...\n"))).toMatchObject({
        contentType: "text/plain",
        faxable: true,
      });
      const zip = await sniffFileType(f("invoice.pdf", Buffer.from("PK\x03\x04rest-of-zip", "latin1")));
      expect(zip.faxable).toBe(false);
      expect(zip.reason).toContain("application/zip");
      expect((await sniffFileType(f("empty.pdf", ""))).reason).toContain("empty");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("notification options", () => {
  it("maps the service values and treats unknown ones as All", () => {
    expect(notifyOption("All")).toEqual({ option: "All", known: true });
    expect(notifyOption("Failure")).toEqual({ option: "Failure", known: true });
    expect(notifyOption("None")).toEqual({ option: "None", known: true });
    expect(notifyOption("Sometimes")).toEqual({ option: "All", known: false });
    expect(notifyOption(undefined)).toEqual({ option: "All", known: false });
  });
});
