// Keys of older releases, still read: each is renamed to its key of today before the schema parses,
// its number turned into a duration string ("24" hours -> "24h"), and each use reported, so that
// `faxgate config check` and the daemon's start (and reload) can say what to write instead. A config
// that gives both the old and the new key is refused: which one was meant cannot be known.
import { formatDuration, UNIT_MS } from "./duration.js";

interface OldKey {
  /** where the old key sits: dotted, `[]` for every item of a list, `*` for every entry of a map */
  old: string;
  /** its name of today, in the same place (the last part only differs) */
  now: string;
  /** the unit its numbers were in */
  unit: keyof typeof UNIT_MS;
}

/** Old key -> key of today. Add a row when a key is renamed; never remove one. */
export const OLD_KEYS: readonly OldKey[] = [
  { old: "api.contactCacheSeconds", now: "contactCache", unit: "s" },
  { old: "dns.timeoutMs", now: "timeout", unit: "ms" },
  { old: "smtp.socketTimeoutMs", now: "socketTimeout", unit: "ms" },
  { old: "smtp.greetingDelayMs", now: "greetingDelay", unit: "ms" },
  { old: "smtp.idleSessionMs", now: "idleSessionTimeout", unit: "ms" },
  { old: "smtp.senderAuth.confirmHours", now: "confirmWait", unit: "h" },
  { old: "spool.stableMs", now: "stableFor", unit: "ms" },
  { old: "spool.dedupeWindowMinutes", now: "dedupeWindow", unit: "m" },
  { old: "spool.maxWriteMinutes", now: "maxWriteTime", unit: "m" },
  { old: "spool.addressWaitHours", now: "addressWait", unit: "h" },
  { old: "imap.mailboxes[].pollSeconds", now: "pollInterval", unit: "s" },
  { old: "queue.maxAgeHours", now: "maxAge", unit: "h" },
  // same name: its numbers were seconds, now each step says its unit
  { old: "queue.retrySchedule", now: "retrySchedule", unit: "s" },
  { old: "queue.pollIntervalMs", now: "pollInterval", unit: "ms" },
  { old: "queue.leaseMs", now: "lease", unit: "ms" },
  { old: "queue.reconcileGraceMs", now: "reconcileGrace", unit: "ms" },
  { old: "queue.scheduleAheadHours", now: "scheduleAhead", unit: "h" },
  { old: "queue.keyRecheckMs", now: "keyRecheck", unit: "ms" },
  { old: "notify.preferenceRefreshMs", now: "preferenceRefresh", unit: "ms" },
  { old: "notify.inbound.intervalMs", now: "interval", unit: "ms" },
  { old: "web.sessionHours", now: "sessionLifetime", unit: "h" },
  { old: "web.idleMinutes", now: "idleTimeout", unit: "m" },
  { old: "web.livePollMs", now: "livePoll", unit: "ms" },
  { old: "webhooks.pollIntervalMs", now: "pollInterval", unit: "ms" },
  { old: "inbound.escalationCheckMs", now: "escalationCheck", unit: "ms" },
  { old: "inbound.groups.*.escalateAfterMinutes", now: "escalateAfter", unit: "m" },
  { old: "office.timeoutMs", now: "timeout", unit: "ms" },
];

/** One old key found in a config: where, and what to write instead. */
export interface OldKeyUse {
  /** the old key as written, e.g. "queue.leaseMs" or "imap.mailboxes[0].pollSeconds" */
  old: string;
  /** the key of today, e.g. "queue.lease" */
  now: string;
  /** the value to write under it, e.g. "60s" (a list for retrySchedule) */
  value: string | string[];
}

/** The line `config check` prints and the daemon logs for one use. */
export function describeOldKey(u: OldKeyUse): string {
  const value = Array.isArray(u.value) ? `[${u.value.map((v) => `"${v}"`).join(", ")}]` : `"${u.value}"`;
  return u.old === u.now
    ? `${u.old}: numbers of seconds are an old form; write ${u.now}: ${value}`
    : `${u.old} is an old key; write ${u.now}: ${value} instead`;
}

/** A problem an old key has that no renaming can fix: it names the key, for the config error. */
export interface OldKeyProblem {
  key: string;
  message: string;
}

/**
 * Renames the old keys of `raw` (the YAML after ${ENV} substitution) in a copy. Returns the copy,
 * each use, and the problems: an old key next to its new one, or a value that is not a number.
 */
export function renameOldKeys(raw: unknown): { raw: unknown; uses: OldKeyUse[]; problems: OldKeyProblem[] } {
  const uses: OldKeyUse[] = [];
  const problems: OldKeyProblem[] = [];
  let out = raw;
  for (const row of OLD_KEYS) {
    const parts = row.old.split(".");
    const leaf = parts.pop()!;
    out = visit(out, parts, "", (section, at) => {
      if (!(leaf in section)) return section;
      const old = `${at}.${leaf}`;
      const now = `${at}.${row.now}`;
      const value = section[leaf];
      const converted = convert(value, row.unit);
      if (row.old.endsWith(`.${row.now}`)) {
        // same key, older form: only numbers are old; strings are today's form
        if (!Array.isArray(value) || !value.some((v) => typeof v === "number")) return section;
      } else if (row.now in section) {
        problems.push({ key: old, message: `an old key next to ${now}: keep only ${now}` });
        return section;
      }
      if (converted === null) {
        problems.push({
          key: old,
          message: `an old key; its value must be a number of ${UNIT_NAMES[row.unit]} (better: write ${now} as "30s", "5m", "24h" or "90d")`,
        });
        return section;
      }
      uses.push({ old, now, value: converted });
      const copy: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(section)) {
        if (k === leaf) copy[row.now] = converted;
        else copy[k] = v;
      }
      return copy;
    });
  }
  return { raw: out, uses, problems };
}

const UNIT_NAMES = { ms: "milliseconds", s: "seconds", m: "minutes", h: "hours", d: "days" } as const;

/** A number in `unit` as a duration string; a list of them (strings left as they are); else null. */
function convert(value: unknown, unit: keyof typeof UNIT_MS): string | string[] | null {
  const one = (v: unknown): string | null =>
    typeof v === "number" && Number.isFinite(v) && v >= 0 ? formatDuration(Math.round(v * UNIT_MS[unit])) : null;
  if (Array.isArray(value)) {
    const list = value.map((v) => (typeof v === "string" ? v : one(v)));
    return list.every((v): v is string => v !== null) ? list : null;
  }
  return one(value);
}

type Section = Record<string, unknown>;

function isSection(v: unknown): v is Section {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Calls `fn` on every object at `path` (with `[]` and `*` fanning out), replacing it by the result. */
function visit(node: unknown, path: string[], at: string, fn: (s: Section, at: string) => Section): unknown {
  if (path.length === 0) return isSection(node) ? fn(node, at) : node;
  if (!isSection(node)) return node;
  const [head, ...rest] = path as [string, ...string[]];
  const list = head.endsWith("[]");
  const name = list ? head.slice(0, -2) : head;
  if (name === "*") {
    const copy: Section = {};
    for (const [k, v] of Object.entries(node)) copy[k] = visit(v, rest, `${at}.${k}`, fn);
    return copy;
  }
  if (!(name in node)) return node;
  const here = at ? `${at}.${name}` : name;
  const child = node[name];
  const next = list
    ? Array.isArray(child)
      ? child.map((item, i) => visit(item, rest, `${here}[${i}]`, fn))
      : child
    : visit(child, rest, here, fn);
  return next === child ? node : { ...node, [name]: next };
}
