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
  /** multiplies the webhook retry schedule (5 s, 25 s, 2 min, 10 min, 52 min, 4 h, 22 h) */
  webhookRetryScale: number;
}

export const DEFAULT_BEHAVIOUR: Readonly<Behaviour> = Object.freeze({
  offsetMode: "pages",
  cfMode: "kept",
  recipientErrorShape: "input",
  historyPerMinute: 8,
  historyRetryAfter: false,
  webhookRetryScale: 1,
});

const CHOICES = {
  offsetMode: ["pages", "records"],
  cfMode: ["kept", "dropped", "empty"],
  recipientErrorShape: ["input", "recipientFax"],
} as const;

/** `base` with the fields of `input` applied; anything unknown or out of range is refused by name. */
export function applyBehaviour(base: Behaviour, input: unknown): Behaviour {
  if (!input || typeof input !== "object" || Array.isArray(input)) throw invalid("behaviour must be a JSON object");
  const next: Behaviour = { ...base };
  for (const [k, v] of Object.entries(input as Record<string, unknown>)) {
    switch (k) {
      case "offsetMode":
      case "cfMode":
      case "recipientErrorShape": {
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
