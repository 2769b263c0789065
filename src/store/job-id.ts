// Job and send ids: Crockford base32 of the time in ms (so ids sort by creation) plus random
// characters (so two processes enqueuing in the same millisecond do not collide). Upper-case
// letters and digits only: safe in file names, SMTP replies and the service's cf fields.
import { pooledRandomBytes } from "../random-pool.js";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

function encodeTime(ms: number, chars: number): string {
  let out = "";
  let n = Math.floor(ms);
  for (let i = 0; i < chars; i++) {
    out = ALPHABET[n % 32] + out;
    n = Math.floor(n / 32);
  }
  return out;
}

function randomChars(chars: number): string {
  const bytes = pooledRandomBytes(chars);
  let out = "";
  for (let i = 0; i < chars; i++) out += ALPHABET[bytes[i]! % 32];
  return out;
}

/** e.g. "FG1JQ8Z3K7M2XQ4R": "FG", 9 time characters, 5 random ones. */
export function newJobId(nowMs: number): string {
  return `FG${encodeTime(nowMs, 9)}${randomChars(5)}`;
}

/** Identity of one send call, carried in the fax's cf.faxgateSend. */
export function newSendId(nowMs: number): string {
  return `S${encodeTime(nowMs, 9)}${randomChars(6)}`;
}

export const JOB_ID_PATTERN = /^FG[0-9A-Z]{14}$/;
