// The random streams of the patch tests (test/patches/): a seeded generator whose seed is said in
// every failure (FAXGATE_FUZZ_SEED replays one), and the cuts of an input into chunks that every
// stream parser must read the same way however its bytes arrive.
import { prng } from "./prng.js";

/** A seeded stream of numbers in [0, 1): FAXGATE_FUZZ_SEED's seed, else a new one each run. */
export function fuzzStream(): { seed: number; next: () => number } {
  const seed = Number(process.env.FAXGATE_FUZZ_SEED ?? Date.now() % 100_000);
  return { seed, next: prng(seed) };
}

/** `input` cut into chunks of `size()` bytes each (the last may be shorter). */
export function randomCuts(input: Buffer, size: () => number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < input.length; ) {
    const n = size();
    out.push(input.subarray(at, at + n));
    at += n;
  }
  return out;
}

/** `input` one byte a chunk. */
export const byteCuts = (input: Buffer): Buffer[] =>
  Array.from({ length: input.length }, (_, k) => input.subarray(k, k + 1));
