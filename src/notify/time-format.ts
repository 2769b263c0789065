// Times and durations as people read them, in the account's own timezone.

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat("en-US", { timeZone, dateStyle: "medium", timeStyle: "long" });
    } catch {
      // an unknown zone name from the service must not stop the mail: fall back to UTC
      f = new Intl.DateTimeFormat("en-US", { timeZone: "UTC", dateStyle: "medium", timeStyle: "long" });
    }
    formatters.set(timeZone, f);
  }
  return f;
}

/** "Nov 21, 2026, 5:54:09 PM EST"; null/invalid input gives null. */
export function formatTime(iso: string | null | undefined, timeZone: string | null | undefined): string | null {
  if (!iso) return null;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return null;
  return formatter(timeZone || "UTC").format(new Date(t));
}

/** 65 -> "1 min 5 s"; 3 -> "3 s". */
export function formatDuration(seconds: number | null | undefined): string | null {
  if (seconds == null || !Number.isFinite(seconds) || seconds < 0) return null;
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  const rest = s % 60;
  return rest ? `${m} min ${rest} s` : `${m} min`;
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
