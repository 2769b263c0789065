// Random bytes for the ids made for every mail (job ids, a message's work folder), taken from one
// buffer of the CSPRNG filled 4 KB at a time: a randomBytes call per id (a call into OpenSSL,
// a buffer made for a few bytes) was 1% of the daemon's main thread receiving mail (issue 54,
// docs/bench.md). The same source, and each byte is handed out once, so an id is as unguessable
// as before. For keys and secrets, call randomBytes itself.
import { randomBytes, randomFillSync } from "node:crypto";

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let taken = POOL_BYTES;

/** `n` fresh random bytes, a copy of its own (the pool is filled anew once used up). */
export function pooledRandomBytes(n: number): Buffer {
  if (n > POOL_BYTES) return randomBytes(n);
  if (taken + n > POOL_BYTES) {
    randomFillSync(pool);
    taken = 0;
  }
  const out = Buffer.from(pool.subarray(taken, taken + n));
  taken += n;
  return out;
}
