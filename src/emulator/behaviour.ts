// Switches for what the public evidence about the real service leaves unsettled, so the product
// can be tested against each reading: set at start (startEmulator options, `faxgate emulator`
// flags) and at run time (PUT /_emulator/behaviour). Defaults follow the evidence where it leans
// one way; docs/emulator.md says why each default was chosen.
import { invalid } from "./api-error.js";

export interface Behaviour {
  /** history `offset`: a number of pages of `limit` records, or a number of records */
  offsetMode: "pages" | "records";
  /** custom fields (`cf`) on records: echoed as sent, absent, or always `{}` */
  cfMode: "kept" | "dropped" | "empty";
  /** per-recipient errors: `{input:{faxNumber},error}` or `{error,recipientFax}` */
  recipientErrorShape: "input" | "recipientFax";
  /** fax history calls allowed per account per minute; 0 = unlimited */
  historyPerMinute: number;
  /** whether a history 429 carries Retry-After */
  historyRetryAfter: boolean;
  /** API calls allowed per account in any one second (every route but /ping); 0 = unlimited */
  ratePerSecond: number;
  /** multiplies the webhook retry schedule (5 s, 25 s, 2 min, 10 min, 52 min, 4 h, 22 h) */
  webhookRetryScale: number;
  /**
   * who a fax info's `users` names (fax-api.md does not say): its owner, or everyone who can see
   * it, the holders of the account's admin keys first, then its owner
   */
  infoUsers: "owner" | "viewers";
}

export const DEFAULT_BEHAVIOUR: Readonly<Behaviour> = Object.freeze({
  offsetMode: "pages",
  cfMode: "kept",
  recipientErrorShape: "input",
  historyPerMinute: 8,
  historyRetryAfter: false,
  ratePerSecond: 0,
  webhookRetryScale: 1,
  infoUsers: "owner",
});

const CHOICES = {
  offsetMode: ["pages", "records"],
  cfMode: ["kept", "dropped", "empty"],
  recipientErrorShape: ["input", "recipientFax"],
  infoUsers: ["owner", "viewers"],
} as const;

/** `base` with the fields of `input` applied; anything unknown or out of range is refused by name. */
export function applyBehaviour(base: Behaviour, input: unknown): Behaviour {
  if (!input || typeof input !== "object" || Array.isArray(input)) throw invalid("behaviour must be a JSON object");
  const next: Behaviour = { ...base };
  for (const [k, v] of Object.entries(input as Record<string, unknown>)) {
    switch (k) {
      case "offsetMode":
      case "cfMode":
      case "recipientErrorShape":
      case "infoUsers": {
        const allowed = CHOICES[k] as readonly string[];
        if (typeof v !== "string" || !allowed.includes(v)) throw invalid(`${k} must be one of ${allowed.join(", ")}`);
        (next as unknown as Record<string, unknown>)[k] = v;
        break;
      }
      case "historyPerMinute": {
        const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
        if (typeof n !== "number" || !Number.isInteger(n) || n < 0)
          throw invalid("historyPerMinute must be a whole number >= 0 (0 = unlimited)");
        next.historyPerMinute = n;
        break;
      }
      case "ratePerSecond": {
        const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
        if (typeof n !== "number" || !Number.isInteger(n) || n < 0)
          throw invalid("ratePerSecond must be a whole number >= 0 (0 = unlimited)");
        next.ratePerSecond = n;
        break;
      }
      case "historyRetryAfter": {
        if (typeof v !== "boolean" && v !== "true" && v !== "false")
          throw invalid("historyRetryAfter must be true or false");
        next.historyRetryAfter = v === true || v === "true";
        break;
      }
      case "webhookRetryScale": {
        const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
        if (typeof n !== "number" || !Number.isFinite(n) || n <= 0)
          throw invalid("webhookRetryScale must be a number > 0");
        next.webhookRetryScale = n;
        break;
      }
      default:
        throw invalid(`unknown behaviour "${k.slice(0, 40)}" (${Object.keys(DEFAULT_BEHAVIOUR).join(", ")})`);
    }
  }
  return next;
}

/**
 * A fixed one-minute window per account for fax history calls: the window opens with the first
 * call and the calls over the limit are refused (not counted) until it closes.
 */
export class HistoryBudget {
  private windows = new Map<string, { start: number; used: number }>();

  /** null when the call may go ahead, else the milliseconds until the window resets. */
  take(accountId: string, perMinute: number, now: number): number | null {
    if (perMinute <= 0) return null;
    let w = this.windows.get(accountId);
    if (!w || now - w.start >= 60_000) {
      w = { start: now, used: 0 };
      this.windows.set(accountId, w);
    }
    if (w.used >= perMinute) return w.start + 60_000 - now;
    w.used += 1;
    return null;
  }
}

/** What one account met from the service's limits (GET /_emulator/limits). */
export interface AccountLoad {
  /** calls answered by a route (refused ones included), all routes but /ping */
  calls: number;
  /** the most calls that arrived within any one second (refused ones included) */
  peakPerSecond: number;
  /** calls refused with 429 for the account's rate, and for its history budget */
  refusedRate: number;
  refusedHistory: number;
}

/**
 * The account's call rate as the service counts it: at most `perSecond` calls arrive within any
 * one second; the one over it is refused (not counted against the limit) with a Retry-After of
 * the wait until the oldest call of that second is a second old. Every arrival is counted for the peak, so a test can
 * say whether a client kept under the account's rate whether or not the limit is switched on.
 */
export class AccountRate {
  /** per account: the calls let through within the last second, and every arrival (for the peak) */
  private readonly admitted = new Map<string, number[]>();
  private readonly arrivals = new Map<string, number[]>();
  private readonly load = new Map<string, AccountLoad>();

  /** null when the call may go ahead, else the milliseconds until it would. */
  take(accountId: string, perSecond: number, now: number): number | null {
    const l = this.loadOf(accountId);
    l.calls += 1;
    const seen = lastSecond(this.arrivals, accountId, now);
    seen.push(now);
    l.peakPerSecond = Math.max(l.peakPerSecond, seen.length);
    const ok = lastSecond(this.admitted, accountId, now);
    if (perSecond > 0 && ok.length >= perSecond) {
      l.refusedRate += 1;
      return Math.max(1, ok[ok.length - perSecond]! + 1000 - now);
    }
    ok.push(now);
    return null;
  }

  historyRefused(accountId: string): void {
    this.loadOf(accountId).refusedHistory += 1;
  }

  report(): Record<string, AccountLoad> {
    return Object.fromEntries([...this.load].map(([k, v]) => [k, { ...v }]));
  }

  reset(): void {
    this.admitted.clear();
    this.arrivals.clear();
    this.load.clear();
  }

  private loadOf(accountId: string): AccountLoad {
    let l = this.load.get(accountId);
    if (!l) {
      l = { calls: 0, peakPerSecond: 0, refusedRate: 0, refusedHistory: 0 };
      this.load.set(accountId, l);
    }
    return l;
  }
}

/** `map`'s times for `key` within the second before `now` (older ones dropped). */
function lastSecond(map: Map<string, number[]>, key: string, now: number): number[] {
  let times = map.get(key);
  if (!times) {
    times = [];
    map.set(key, times);
  }
  while (times.length > 0 && times[0]! <= now - 1000) times.shift();
  return times;
}
