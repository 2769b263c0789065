// The text a reply sheet's QR code carries: FG1.<job>.<owner>.<mac>, each part base64url. The mac
// is HMAC-SHA256 over "FG1.<job>.<owner>" cut to 16 bytes: enough that a forger cannot guess one
// (2^-128), short enough that the code stays a low QR version a fax's 100 dpi still resolves.
import { createHmac, timingSafeEqual } from "node:crypto";

export const REPLY_CODE_PREFIX = "FG1";
const MAC_BYTES = 16;
// a job id and a person's id are short; anything longer is not ours and is not parsed further
const MAX_CODE_CHARS = 400;

export interface ReplyTarget {
  jobId: string;
  owner: string;
}

export type ReplyCodeVerdict =
  | ({ kind: "valid" } & ReplyTarget)
  /** Not a reply code of any gateway (another QR code on the page): ignored, not logged. */
  | { kind: "foreign" }
  /** Looks like ours but the mac does not hold: altered or forged, logged as such. */
  | { kind: "forged"; why: string };

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64url");

function mac(key: Buffer, signed: string): Buffer {
  return createHmac("sha256", key).update(signed).digest().subarray(0, MAC_BYTES);
}

export function encodeReplyCode(key: Buffer, target: ReplyTarget): string {
  const signed = `${REPLY_CODE_PREFIX}.${b64(target.jobId)}.${b64(target.owner)}`;
  return `${signed}.${mac(key, signed).toString("base64url")}`;
}

export function verifyReplyCode(key: Buffer, text: string): ReplyCodeVerdict {
  if (!text.startsWith(`${REPLY_CODE_PREFIX}.`)) return { kind: "foreign" };
  if (text.length > MAX_CODE_CHARS) return { kind: "forged", why: "too long" };
  const parts = text.split(".");
  if (parts.length !== 4) return { kind: "forged", why: "not four parts" };
  const [, job, owner, given] = parts as [string, string, string, string];
  const b64url = /^[A-Za-z0-9_-]+$/;
  if (!b64url.test(job) || !b64url.test(owner) || !b64url.test(given)) return { kind: "forged", why: "not base64url" };
  const want = mac(key, `${REPLY_CODE_PREFIX}.${job}.${owner}`);
  const got = Buffer.from(given, "base64url");
  if (got.length !== want.length || !timingSafeEqual(got, want))
    return { kind: "forged", why: "signature does not hold" };
  return {
    kind: "valid",
    jobId: Buffer.from(job, "base64url").toString("utf8"),
    owner: Buffer.from(owner, "base64url").toString("utf8"),
  };
}
