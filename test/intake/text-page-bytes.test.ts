// The text page's bytes are written without joining the text and its line break (issue 54):
// they must be exactly the bytes of `${text}\n` for any text, broken surrogates included.
import { describe, expect, it } from "vitest";
import { textPageBytes } from "../../src/intake/mail/mail-to-job.js";

const PIECES = ["a", "Z", " ", "\n", "\r\n", "é", "ß", "€", "日本", "😀", "\ud800", "\udfff", "\u0000", "\u00ff"];

function randomText(seed: number, length: number): string {
  let x = seed;
  let s = "";
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += PIECES[x % PIECES.length];
  }
  return s;
}

describe("textPageBytes", () => {
  it("gives the bytes of the text and a line break, for any text", () => {
    const texts = ["", "x", "a".repeat(5000), " padded text \n".repeat(8000).trim()];
    for (let seed = 1; seed <= 500; seed++) texts.push(randomText(seed, seed % 7 === 0 ? 3000 : seed % 90));
    for (const t of texts) expect(textPageBytes(t).equals(Buffer.from(`${t}\n`, "utf8"))).toBe(true);
  });

  it("writes into the scratch buffer it is lent, exactly, and into a new one when none is", () => {
    const lent = Buffer.alloc(64 * 1024, 0xee);
    for (let seed = 1; seed <= 200; seed++) {
      const t = randomText(seed, seed % 90);
      const want = Buffer.from(`${t}\n`, "utf8");
      const got = textPageBytes(t, (n) => lent.subarray(0, n));
      expect(got.equals(want)).toBe(true);
      expect(got.buffer).toBe(lent.buffer);
      expect(textPageBytes(t, () => null).equals(want)).toBe(true);
    }
  });
});
