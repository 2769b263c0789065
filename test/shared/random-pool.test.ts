// The pooled random bytes behind per-mail ids (src/random-pool.ts): each byte handed out once,
// across refills of the pool, and a draw stays as it was when the pool is filled anew; job ids
// keep their format.
import { expect, it } from "vitest";
import { pooledRandomBytes } from "../../src/random-pool.js";
import { JOB_ID_PATTERN, newJobId } from "../../src/store/job-id.js";

it("hands out each byte once, across refills, and never changes a draw afterwards", () => {
  const first = pooledRandomBytes(16);
  const kept = Buffer.from(first);
  const seen = new Set<string>();
  // 3,000 draws of 5 to 9 bytes: about 21 KB, the 4 KB pool filled five times over
  for (let i = 0; i < 3000; i++) {
    const draw = pooledRandomBytes(5 + (i % 5));
    expect(draw).toHaveLength(5 + (i % 5));
    if (draw.length >= 8) {
      const hex = draw.toString("hex");
      expect(seen.has(hex)).toBe(false);
      seen.add(hex);
    }
  }
  expect(first.equals(kept)).toBe(true);
  expect(pooledRandomBytes(10_000)).toHaveLength(10_000);
});

it("makes job ids of the same format", () => {
  // (their 5 random characters are 25 bits: ids of one millisecond are told apart by chance, as before)
  for (let i = 0; i < 2000; i++) expect(newJobId(1_764_433_200_000)).toMatch(JOB_ID_PATTERN);
});
