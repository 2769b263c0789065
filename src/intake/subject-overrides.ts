// Per-message choices written in the subject: [cover], [nocover], [at 2026-11-22 14:30]
// (a local time in the user's account time zone). They are taken out of the cover subject.
import { FaxgateError } from '../errors.js';

export interface SubjectOverrides {
  subject: string;
  cover?: boolean;
  /** Local wall time "YYYY-MM-DDTHH:MM" to be placed in the account's zone. */
  at?: string;
}

const TAG = /\[\s*(cover|nocover|no cover|no-cover|at\s+([^\]]*))\s*\]/gi;

export function parseSubjectOverrides(subject: string): SubjectOverrides {
  const out: SubjectOverrides = { subject };
  out.subject = subject
    .replace(TAG, (_m, word: string, when: string | undefined) => {
      const w = word.toLowerCase();
      if (w === 'cover') out.cover = true;
      else if (w.startsWith('at')) out.at = parseWallTime(when ?? '');
      else out.cover = false;
      return ' ';
    })
    .replace(/\s{2,}/g, ' ')
    .trim();
  return out;
}

function bad(text: string): never {
  throw new FaxgateError('NOTHING_TO_FAX', `cannot read the send time "${text}"`, {
    smtpReply: `554 5.6.0 Cannot read the send time [at ${text.slice(0, 40)}]: write [at YYYY-MM-DD HH:MM]`,
  });
}

function parseWallTime(text: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T]+(\d{1,2}):(\d{2})$/.exec(text.trim());
  if (!m) bad(text);
  const [y, mo, d, h, mi] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])];
  const probe = new Date(Date.UTC(y, mo - 1, d, h, mi));
  if (probe.getUTCFullYear() !== y || probe.getUTCMonth() !== mo - 1 || probe.getUTCDate() !== d || h > 23 || mi > 59) bad(text);
  return `${m[1]}-${m[2]}-${m[3]}T${String(h).padStart(2, '0')}:${m[5]}`;
}

/** Offset (ms) of `zone` from UTC at instant `utcMs`. */
function zoneOffset(utcMs: number, zone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
  }).formatToParts(new Date(utcMs));
  const v = (t: string): number => Number(parts.find((p) => p.type === t)?.value);
  return Date.UTC(v('year'), v('month') - 1, v('day'), v('hour'), v('minute'), v('second')) - Math.floor(utcMs / 1000) * 1000;
}

/** "2026-11-22T14:30" in `zone` -> the UTC instant (ISO). Unknown zones count as UTC. */
export function wallTimeToUtc(wall: string, zone: string): string {
  const [date, time] = wall.split('T');
  const [y, mo, d] = date!.split('-').map(Number);
  const [h, mi] = time!.split(':').map(Number);
  const asUtc = Date.UTC(y!, mo! - 1, d!, h!, mi!);
  let tz = zone;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    tz = 'UTC';
  }
  // Two passes settle the offset around DST changes.
  let t = asUtc - zoneOffset(asUtc, tz);
  t = asUtc - zoneOffset(t, tz);
  return new Date(t).toISOString();
}
