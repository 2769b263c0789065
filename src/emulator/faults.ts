// Trouble on demand, so the gateway's retry and reconciliation paths can be driven: slow answers,
// 503s, 429s and dropped connections after a fax was created. Decisions come from a seeded PRNG so
// a run can be repeated; the rates are probabilities per request.
import { invalid } from "./api-error.js";

export interface FaultSettings {
  latencyMs: number;
  errorRate: number;
  rateLimitRate: number;
  /** the next this many API calls are answered 429 (whoever makes them), then none: one 429 seen first by one client */
  rateLimitNext: number;
  /** the Retry-After (seconds) of the faults' 429s */
  retryAfter: number;
  dropRate: number;
  /** what DELETE /v1/fax/{id} does: deletes (normal), answers 500 (refuse), answers 200 and keeps the fax (ignore) */
  deleteMode: DeleteMode;
}

export const DELETE_MODES = ["normal", "refuse", "ignore"] as const;
export type DeleteMode = (typeof DELETE_MODES)[number];

export class Faults {
  private settings: FaultSettings = {
    latencyMs: 0,
    errorRate: 0,
    rateLimitRate: 0,
    rateLimitNext: 0,
    retryAfter: 1,
    dropRate: 0,
    deleteMode: "normal",
  };
  private state: number;

  constructor(seed = 0x5eed) {
    this.state = seed >>> 0;
  }

  get(): FaultSettings {
    return { ...this.settings };
  }

  /** Changes the named settings; anything omitted keeps its value. */
  set(input: unknown): FaultSettings {
    if (!input || typeof input !== "object") throw invalid("faults must be a JSON object");
    const next = { ...this.settings };
    for (const [k, v] of Object.entries(input as Record<string, unknown>)) {
      if (!(k in next))
        throw invalid(
          `unknown fault "${k}" (latencyMs, errorRate, rateLimitRate, rateLimitNext, retryAfter, dropRate, deleteMode)`,
        );
      if (k === "deleteMode") {
        if (!DELETE_MODES.includes(v as DeleteMode))
          throw invalid(`deleteMode must be one of ${DELETE_MODES.join(", ")}`);
        next.deleteMode = v as DeleteMode;
        continue;
      }
      const n = typeof v === "string" ? Number(v) : v;
      if (typeof n !== "number" || !Number.isFinite(n) || n < 0) throw invalid(`${k} must be a number >= 0`);
      if (k === "rateLimitNext" && !Number.isInteger(n)) throw invalid(`${k} must be a whole number`);
      if (k.endsWith("Rate") && n > 1) throw invalid(`${k} is a probability between 0 and 1`);
      next[k as Exclude<keyof FaultSettings, "deleteMode">] = n;
    }
    this.settings = next;
    return this.get();
  }

  /** mulberry32 */
  private random(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  private roll(rate: number): boolean {
    return rate > 0 && (rate >= 1 || this.random() < rate);
  }

  /** What to do with an incoming API request before handling it. */
  beforeRequest(): "error" | "rateLimit" | null {
    if (this.roll(this.settings.errorRate)) return "error";
    if (this.settings.rateLimitNext > 0) {
      this.settings.rateLimitNext -= 1;
      return "rateLimit";
    }
    if (this.roll(this.settings.rateLimitRate)) return "rateLimit";
    return null;
  }

  /** The Retry-After (seconds) a fault's 429 carries. */
  retryAfter(): number {
    return this.settings.retryAfter;
  }

  deleteMode(): DeleteMode {
    return this.settings.deleteMode;
  }

  latencyMs(): number {
    return this.settings.latencyMs;
  }

  /** Whether to drop the connection after a fax creation call did its work. */
  dropAfterCreate(): boolean {
    return this.roll(this.settings.dropRate);
  }
}
