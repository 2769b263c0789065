// The text a reply sheet's QR code carries: FG1.<job>.<owner>.<mac>, or FG2.<job>.<owner>.<group>.<mac>
// for a fax whose owner answers for a group inbox, each part base64url. The mac is HMAC-SHA256
// over everything before it cut to 16 bytes: enough that a forger cannot guess one (2^-128),
// short enough that the code stays a low QR version a fax's 100 dpi still resolves. The group is
// signed too, so a reply cannot be steered into another group's inbox; FG1 sheets already out
// verify as before (no group).
import { createHmac, timingSafeEqual } from "node:crypto";

export const REPLY_CODE_PREFIX = "FG1";
/** A code naming the group whose inbox a reply lands in as well. */
export const REPLY_CODE_GROUP_PREFIX = "FG2";
const MAC_BYTES = 16;
// a job id, a person's id and a group's name are short; anything longer is not ours and is not parsed further
const MAX_CODE_CHARS = 400;

export interface ReplyTarget {
  jobId: string;
  owner: string;
  /** the group inbox (inbound.groups) the sent fax answered for, if any */
  group?: string | undefined;
}

export type ReplyCodeVerdict =
  | ({ kind: "valid" } & ReplyTarget)
  /** Not a reply code of any gateway (another QR code on the page): ignored, not logged. */
  | { kind: "foreign" }
  /** Looks like ours but the mac does not hold: altered or forged, logged as such. */
  | { kind: "forged"; why: string };

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64url");
const text = (s: string): string => Buffer.from(s, "base64url").toString("utf8");

function mac(key: Buffer, signed: string): Buffer {
  return createHmac("sha256", key).update(signed).digest().subarray(0, MAC_BYTES);
}

export function encodeReplyCode(key: Buffer, target: ReplyTarget): string {
  const signed = target.group
    ? `${REPLY_CODE_GROUP_PREFIX}.${b64(target.jobId)}.${b64(target.owner)}.${b64(target.group)}`
    : `${REPLY_CODE_PREFIX}.${b64(target.jobId)}.${b64(target.owner)}`;
  return `${signed}.${mac(key, signed).toString("base64url")}`;
}

export function verifyReplyCode(key: Buffer, code: string): ReplyCodeVerdict {
  const grouped = code.startsWith(`${REPLY_CODE_GROUP_PREFIX}.`);
  if (!grouped && !code.startsWith(`${REPLY_CODE_PREFIX}.`)) return { kind: "foreign" };
  if (code.length > MAX_CODE_CHARS) return { kind: "forged", why: "too long" };
  const parts = code.split(".");
  const want = grouped ? 5 : 4;
  if (parts.length !== want) return { kind: "forged", why: `not ${want === 5 ? "five" : "four"} parts` };
  const given = parts.pop()!;
  const fields = parts.slice(1);
  const b64url = /^[A-Za-z0-9_-]+$/;
  if (![...fields, given].every((p) => b64url.test(p))) return { kind: "forged", why: "not base64url" };
  const expected = mac(key, parts.join("."));
  const got = Buffer.from(given, "base64url");
  if (got.length !== expected.length || !timingSafeEqual(got, expected))
    return { kind: "forged", why: "signature does not hold" };
  const [job, owner, group] = fields.map(text) as [string, string, string | undefined];
  return { kind: "valid", jobId: job, owner, ...(group ? { group } : {}) };
}
