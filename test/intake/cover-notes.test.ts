// coverNotes reads a line at a time and stops once the notes are longer than the cover takes: the
// same notes as cutting the whole text (the reference below is the first, whole-text form), and a
// bounded read gives their exact beginning, which is all the cover and fitsNotes look at.
import { describe, expect, it } from "vitest";
import { coverNotes, DISCLAIMER as NOTICE } from "../../src/intake/mail/body-text.js";
import { COVER_LIMITS, coverSpec, cut } from "../../src/intake/mail/cover.js";

function reference(text: string): string {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  let end = lines.findIndex((l) => l === "-- " || l === "--");
  if (end < 0) end = lines.length;
  const disclaimer = lines.slice(0, end).findIndex((l) => NOTICE.some((re) => re.test(l)));
  if (disclaimer > 0 && lines.slice(0, disclaimer).some((l) => l.trim() !== "")) end = disclaimer;
  return lines.slice(0, end).join("\n").trim();
}

/** A small deterministic generator (no seed from the clock: a failure is the same on every run). */
function lcg(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

const PIECES = [
  "",
  "   ",
  "Please see attached.",
  "Dear Dr. Smith,",
  "-- ",
  "--",
  "-- not a separator",
  "CONFIDENTIALITY NOTICE: this e-mail is confidential",
  "Disclaimer",
  "Sent from my iPhone",
  // a line of each notice, after punctuation, and near misses (coverNotes tries them as one expression)
  "*** Privacy statement ***",
  "Legal   warning: read this",
  "DISCLAIMER   ",
  "disclaimer: none",
  "The disclaimer follows",
  "This e-mail and its attachments are confidential",
  "The message below is privileged",
  "this transmission is intended solely for the addressee",
  "> The information contained in this communication is secret",
  "If you have received this message in error, delete it",
  "if you received this email in error",
  "-- Sent from my Galaxy",
  "Sent from my desk",
  "\tindented line\t",
  "Grüße 😀 aus Köln",
  "x".repeat(90),
];

function mail(r: () => number, lines: number): string {
  const out: string[] = [];
  for (let i = 0; i < lines; i += 1) out.push(PIECES[Math.floor(r() * PIECES.length)]!);
  return out.join(r() < 0.5 ? "\n" : "\r\n");
}

describe("cut", () => {
  it("counts characters, not UTF-16 units: a text of max emoji is kept whole, one more is cut", () => {
    expect(cut("😀".repeat(5), 5)).toBe("😀".repeat(5));
    expect(cut("😀".repeat(6), 5)).toBe(`${"😀".repeat(4)}…`);
    expect(cut("abcde", 5)).toBe("abcde");
    expect(cut("abcdef", 5)).toBe("abcd…");
    expect(cut("  \n ", 5)).toBeUndefined();
  });
});

describe("coverNotes", () => {
  it("gives the same notes as cutting the whole text, for 3,000 made-up mails", () => {
    const r = lcg(7);
    for (let i = 0; i < 3000; i += 1) {
      const text = mail(r, 1 + Math.floor(r() * 30));
      expect(coverNotes(text), JSON.stringify(text)).toBe(reference(text));
    }
  });

  it("read up to a bound, gives the notes' exact beginning past it, and the cover is the same", () => {
    const r = lcg(11);
    for (let i = 0; i < 300; i += 1) {
      const text = mail(r, 50 + Math.floor(r() * 2000));
      const whole = reference(text);
      const bound = 200 + Math.floor(r() * 400);
      const read = coverNotes(text, bound);
      if (whole.length <= bound) expect(read).toBe(whole);
      else {
        expect(read.length).toBeGreaterThan(bound);
        expect(whole.startsWith(read)).toBe(true);
      }
    }
    // the bound the mail door uses: the cover made from either is the same
    const long = `${"Line of a long letter.\n".repeat(5000)}-- \nsignature`;
    const read = coverNotes(long, COVER_LIMITS.notes * 4);
    expect(read.length).toBeLessThan(long.length / 2);
    expect(coverSpec({ enabled: true, notes: read })).toEqual(coverSpec({ enabled: true, notes: reference(long) }));
  });
});
