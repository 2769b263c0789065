import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/sha256.js";

const reference = (data: string | Uint8Array): string => createHash("sha256").update(data).digest("hex");

describe("sha256Hex", () => {
  it("is createHash's digest of strings (as UTF-8) and of bytes", () => {
    const inputs: Array<string | Uint8Array> = [
      "",
      "mid:<a@b>\nalice@example.com\n15551234567",
      "Zürich 東京 \u{1F4E0}",
      "x".repeat(100_000),
      new Uint8Array(0),
      Buffer.from([0, 1, 2, 255]),
      Uint8Array.from({ length: 70_000 }, (_, i) => (i * 7) & 0xff),
    ];
    for (const data of inputs) expect(sha256Hex(data)).toBe(reference(data));
  });

  it("hashes only a view's own bytes, not the buffer under it", () => {
    const whole = Buffer.from("0123456789abcdef");
    const view = whole.subarray(4, 9);
    expect(sha256Hex(view)).toBe(reference(Buffer.from("45678")));
    expect(sha256Hex(view)).not.toBe(reference(whole));
  });

  it("gives 64 lowercase hex digits", () => {
    expect(sha256Hex("fax")).toMatch(/^[0-9a-f]{64}$/);
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });
});
