// The first bytes of a part as it is written (src/intake/documents/file-type.ts Head): what its
// type is told from, taken across chunks, a copy of its own.
import { expect, it } from "vitest";
import { HEAD_BYTES, Head, sniffBuffer } from "../../src/intake/documents/file-type.js";

const bytes = (n: number, seed: number): Buffer =>
  Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));

it("keeps the first HEAD_BYTES across chunks of any size, and nothing past them", () => {
  const whole = Buffer.concat([bytes(1000, 1), bytes(3000, 2), bytes(5000, 3), bytes(10, 4)]);
  for (const sizes of [[1000, 3000, 5000, 10], [HEAD_BYTES], [HEAD_BYTES + 1], [1, HEAD_BYTES - 1, 7], [9010]]) {
    const head = new Head();
    let at = 0;
    for (const n of sizes) {
      head.add(whole.subarray(at, at + n));
      at += n;
    }
    expect(Buffer.from(head.bytes())).toEqual(whole.subarray(0, Math.min(HEAD_BYTES, at)));
  }
});

it("is shorter for a short file, empty for an empty one", () => {
  const head = new Head();
  head.add(Buffer.from("%PDF-1.4\n"));
  head.add(Buffer.alloc(0));
  head.add(Buffer.from("%%EOF\n"));
  expect(Buffer.from(head.bytes()).toString("latin1")).toBe("%PDF-1.4\n%%EOF\n");
  expect(sniffBuffer(Buffer.from(head.bytes()))).toBe("application/pdf");
  expect(new Head().bytes()).toHaveLength(0);
});

it("is a copy: the chunks it was given may be reused afterwards", () => {
  const chunk = bytes(5000, 9);
  const head = new Head();
  head.add(chunk);
  const before = Buffer.from(chunk.subarray(0, HEAD_BYTES));
  chunk.fill(0);
  expect(Buffer.from(head.bytes())).toEqual(before);
});
