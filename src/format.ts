// One way to write each kind of value a person reads, for every surface (mail, CLI, console API,
// transmission report): fax numbers, times, durations, sizes and counts. A surface that writes one
// of these by hand drifts from the others; the console's browser code gets these strings from the
// server (web/app.js formats only times, in the reader's own zone).
import { parsePhoneNumberFromString } from "libphonenumber-js";

/**
 * "+15551234567" -> "+1 555-123-4567"; a caller id without its country code ("5550100999") is read
 * with `defaultCountryCode` when that makes a possible number; anything else (a name, "anonymous")
 * is given back as it is. Null stays null.
 */
export function faxNumber(n: string | null | undefined, defaultCountryCode?: string): string | null {
  const raw = n?.trim();
  if (!raw) return null;
  const digits = raw.replace(/[\s\-.()]/g, "");
  if (!/^\+?\d{4,15}$/.test(digits)) return raw;
  const candidates = digits.startsWith("+")
    ? [digits]
    : [...(defaultCountryCode ? [`+${defaultCountryCode}${digits}`] : []), `+${digits}`];
  for (const c of candidates) {
    const parsed = parsePhoneNumberFromString(c);
    if (!parsed?.isPossible()) continue;
    // digits alone read as international only when long enough to carry a country code
    if (c === `+${digits}` && !digits.startsWith("+") && digits.length < 11 && !parsed.isValid()) continue;
    if (parsed.countryCallingCode === "1" && parsed.nationalNumber.length === 10) {
      const d = parsed.nationalNumber;
      return `+1 ${d.slice(0, 3)}-${d.slice(3, 6)}-${d.slice(6)}`;
    }
    return parsed.formatInternational();
  }
  return raw;
}

const timeFormats = new Map<string, Intl.DateTimeFormat>();

function timeFormat(timeZone: string): Intl.DateTimeFormat {
  let f = timeFormats.get(timeZone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat("en-US", { timeZone, dateStyle: "medium", timeStyle: "long" });
    } catch {
      // an unknown zone name (from the service or the environment) must not stop the output
      f = new Intl.DateTimeFormat("en-US", { timeZone: "UTC", dateStyle: "medium", timeStyle: "long" });
    }
    timeFormats.set(timeZone, f);
  }
  return f;
}

/** "Nov 21, 2026, 5:54:09 PM EST" in `timeZone` (UTC when none); null/invalid input gives null. */
export function localTime(iso: string | null | undefined, timeZone?: string | null): string | null {
  if (!iso) return null;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return null;
  return timeFormat(timeZone || "UTC").format(new Date(t));
}

/** ISO times inside a sentence ("next try at 2026-…Z") as `localTime`s (web/app.js localTimes does the same). */
export function localTimesIn(text: string | null, timeZone?: string | null): string | null {
  if (!text) return text;
  return text.replace(
    /\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)/g,
    (m) => localTime(m, timeZone) ?? m,
  );
}

/** The zone this process runs in (TZ, else the system's): what the CLI prints times in. */
export function hostTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** 65 -> "1 min 5 s"; 3 -> "3 s". */
export function duration(seconds: number | null | undefined): string | null {
  if (seconds == null || !Number.isFinite(seconds) || seconds < 0) return null;
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  const rest = s % 60;
  return rest ? `${m} min ${rest} s` : `${m} min`;
}

/** "25 MB", "1.5 MB", "300 KB": never a count of bytes. */
export function size(bytes: number): string {
  const mb = bytes / 1_048_576;
  if (mb >= 10) return `${Math.round(mb)} MB`;
  if (mb >= 1) return `${Number(mb.toFixed(1))} MB`;
  return `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

/** "1 page", "2 pages". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "1 page", "3 pages"; null for an unknown count. */
export function pages(n: number | null | undefined): string | null {
  return n == null ? null : plural(n, "page");
}
