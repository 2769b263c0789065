// SMTP AUTH passwords are stored as scrypt hashes ("scrypt$N$r$p$<salt>$<hash>", base64), made by
// `faxgate passwd`. The parameters travel with the hash so they can be raised later without
// breaking old entries; verification refuses absurd parameters instead of burning the CPU.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from "node:crypto";

const N = 16_384;
const R = 8;
const P = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;

function scrypt(plain: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCb(plain.normalize("NFC"), salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(plain: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await scrypt(plain, salt, KEY_BYTES, { N, r: R, p: P, maxmem: 64 * 1024 * 1024 });
  return `scrypt$${N}$${R}$${P}$${salt.toString("base64")}$${key.toString("base64")}`;
}

/** True when `plain` matches `hash`; false for a wrong password or a hash it cannot read. */
export async function verifyPassword(plain: string, hash: string): Promise<boolean> {
  const m = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/.exec(hash.trim());
  if (!m) return false;
  const [n, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // N a power of two up to 2^20, small r and p: anything else is a damaged or hostile entry.
  if (n < 2 || n > 1 << 20 || (n & (n - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return false;
  const salt = Buffer.from(m[4]!, "base64");
  const expected = Buffer.from(m[5]!, "base64");
  if (expected.length < 16 || expected.length > 128) return false;
  const maxmem = 128 * n * r * 2 + 1024 * 1024;
  let key: Buffer;
  try {
    key = await scrypt(plain, salt, expected.length, { N: n, r, p, maxmem });
  } catch {
    return false;
  }
  return timingSafeEqual(key, expected);
}

// Hashed once to spend the same time on an unknown user as on a known one, so that the answer's
// timing does not tell which names exist.
const DUMMY_HASH = "scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

/** Checks a sign-in: false for a user without a password, after the same work as a real check. */
export async function verifySignIn(plain: string, hash: string | undefined): Promise<boolean> {
  if (hash) return verifyPassword(plain, hash);
  await verifyPassword(plain, DUMMY_HASH);
  return false;
}
