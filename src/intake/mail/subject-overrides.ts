// Per-message choices written in the subject: [cover], [nocover], [page] (the mail's text as a
// page of its own), [reply] (a reply sheet with a signed QR code as the last page), [at 2026-11-22 14:30] (a local time in the user's account time zone). They
// are taken out of the cover subject, as are a mailbox's addressing tags [fax 15551234567] (read
// by mailbox/addressing.ts).
import { FaxgateError } from "../../errors.js";

export interface SubjectOverrides {
  subject: string;
  cover?: boolean;
  /** [page]: the text of the mail is faxed as a first page, attachments or not */
  page?: boolean;
  /** [reply]: a reply sheet with a signed QR code is the fax's last page (docs/inbound.md) */
  reply?: boolean;
  /** Local wall time "YYYY-MM-DDTHH:MM" to be placed in the account's zone. */
  at?: string;
}

// A subject longer than this is cut before it is read for tags (mail-parse cuts it there too):
// nothing a person types is that long, and every step after this is linear in it anyway.
export const MAX_SUBJECT_CHARS = 1000;

const AT = /^at\s+/i;
const FAX_TAG = /^fax\s*:?\s+\S/;

/**
 * One pass over the subject, no regex over the whole of it: a tag is the text between a "[" and
 * the next "]" with no other "[" in between. (A single regex with `[^\]]*` tried every "[" to
 * the end of the subject: "[at " repeated 50,000 times took 23 s on the main thread.)
 */
export function parseSubjectOverrides(subject: string): SubjectOverrides {
  const text = subject.length > MAX_SUBJECT_CHARS ? subject.slice(0, MAX_SUBJECT_CHARS) : subject;
  const out: SubjectOverrides = { subject: text };
  const kept: string[] = [];
  let from = 0; // start of text not yet copied to `kept`
  let open = -1; // the last "[" not yet closed
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === 0x5b) open = i;
    else if (c === 0x5d && open >= 0) {
      if (readTag(text.slice(open + 1, i), out)) {
        kept.push(text.slice(from, open), " ");
        from = i + 1;
      }
      open = -1;
    }
  }
  kept.push(text.slice(from));
  out.subject = kept
    .join("")
    .replace(/\s{2,}/g, " ")
    .trim();
  return out;
}

/** Applies one tag's content ("cover", "at 2026-11-22 14:30"...); false when it is not a tag. */
function readTag(inner: string, out: SubjectOverrides): boolean {
  const word = inner.trim().toLowerCase();
  if (word === "cover") out.cover = true;
  else if (word === "nocover" || word === "no cover" || word === "no-cover") out.cover = false;
  else if (word === "page") out.page = true;
  else if (word === "reply") out.reply = true;
  else if (AT.test(word)) out.at = parseWallTime(inner.trim().replace(AT, "").replace(/^\s+/, ""));
  else if (!FAX_TAG.test(word)) return false;
  return true;
}

function bad(text: string): never {
  throw new FaxgateError("NOTHING_TO_FAX", `cannot read the send time "${text}"`, {
    smtpReply: `554 5.6.0 Cannot read the send time [at ${text.slice(0, 40)}]: write [at YYYY-MM-DD HH:MM]`,
  });
}

function parseWallTime(text: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T]+(\d{1,2}):(\d{2})$/.exec(text.trim());
  if (!m) bad(text);
  const [y, mo, d, h, mi] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])];
  const probe = new Date(Date.UTC(y, mo - 1, d, h, mi));
  if (probe.getUTCFullYear() !== y || probe.getUTCMonth() !== mo - 1 || probe.getUTCDate() !== d || h > 23 || mi > 59)
    bad(text);
  return `${m[1]}-${m[2]}-${m[3]}T${String(h).padStart(2, "0")}:${m[5]}`;
}

/** Offset (ms) of `zone` from UTC at instant `utcMs`. */
function zoneOffset(utcMs: number, zone: string): number {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  }).formatToParts(new Date(utcMs));
  const v = (t: string): number => Number(parts.find((p) => p.type === t)?.value);
  return (
    Date.UTC(v("year"), v("month") - 1, v("day"), v("hour"), v("minute"), v("second")) - Math.floor(utcMs / 1000) * 1000
  );
}

/** "2026-11-22T14:30" in `zone` -> the UTC instant (ISO). Unknown zones count as UTC. */
export function wallTimeToUtc(wall: string, zone: string): string {
  const [date, time] = wall.split("T");
  const [y, mo, d] = date!.split("-").map(Number);
  const [h, mi] = time!.split(":").map(Number);
  const asUtc = Date.UTC(y!, mo! - 1, d!, h!, mi!);
  let tz = zone;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
  } catch {
    tz = "UTC";
  }
  // Two passes settle the offset around DST changes.
  let t = asUtc - zoneOffset(asUtc, tz);
  t = asUtc - zoneOffset(t, tz);
  return new Date(t).toISOString();
}
