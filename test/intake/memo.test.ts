import { describe, expect, it } from "vitest";
import { normalizeFaxNumber } from "../../src/recipients/fax-number.js";
import { memoize } from "../../src/memo.js";

describe("memoize", () => {
  it("asks the function once per input, and forgets everything once the table is full", () => {
    const asked: string[] = [];
    const f = memoize((k: string) => {
      asked.push(k);
      return k.length;
    }, 3);
    expect([f("a"), f("bb"), f("a"), f("ccc"), f("bb")]).toEqual([1, 2, 1, 3, 2]);
    expect(asked).toEqual(["a", "bb", "ccc"]);
    // a fourth input clears the table: hostile input cannot grow it past its bound
    f("dddd");
    f("a");
    expect(asked).toEqual(["a", "bb", "ccc", "dddd", "a"]);
  });

  it("a remembered fax number is the same answer for each default country, and cannot be changed by a caller", () => {
    const us = normalizeFaxNumber("5551234567", "1");
    expect(us).toEqual({ ok: true, e164: "+15551234567" });
    expect(normalizeFaxNumber("5551234567", "44")).not.toEqual(us);
    expect(normalizeFaxNumber("5551234567", "1")).toBe(us);
    expect(() => {
      (us as { e164: string }).e164 = "+19005550000";
    }).toThrow(TypeError);
  });
});
