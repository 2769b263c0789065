// One gate for every call to the fax service from this process: calls are spaced to
// api.ratePerSecond, at most api.concurrency are out at once, and history calls (which the service
// limits per account) share one budget that a 429 closes until its window has passed. The
// dispatcher has a reserved lane (api.dispatchShare) the other callers can never use; they share
// the rest in priority order (intake, background, console), so a console burst delays no fax and a
// busy dispatcher cannot starve the console.
// A 429 on any call slows the whole gate down, as TCP's congestion window does: the rate is halved
// (at most once a second, down to a sixteenth) and every caller waits out the Retry-After; each
// calm second gives back a tenth of the configured rate. Before, a gateway set above the account's
// real limit went straight back to its full rate and kept 47% of its calls refused (issue 55).
// On PostgreSQL a fleet of gateways shares one budget per account (GateFleet, store/sql/
// fleet-budget.ts): this gate still orders its own callers, and each call then waits for its slot
// of the fleet's rate; concurrency is this gateway's share, history calls are counted fleet-wide.
import { setTimeout as sleep } from "node:timers/promises";

/** Who is calling, highest priority first (docs/architecture.md, "The API gate"). */
export const GATE_CLASSES = ["dispatch", "intake", "background", "console"] as const;
export type GateClass = (typeof GATE_CLASSES)[number];

export interface ApiGateOptions {
  ratePerSecond: number;
  /** Calls out at once, all classes together (api.concurrency). */
  concurrency: number;
  /** Fraction of the rate and of the concurrency only the dispatch class may use (api.dispatchShare). */
  dispatchShare: number;
  /** History calls per minute for the whole account (api.historyPerMinute). */
  historyPerMinute: number;
  now?: () => number;
  /** Waits `ms` of the same clock as `now` (injected with it, for tests that run time fast). */
  sleep?: (ms: number) => Promise<unknown>;
  /** Told of every wait on the history budget, e.g. for a log line. */
  onHistoryWait?: (ms: number, why: "budget" | "429") => void;
  /** Told when a 429 slows the gate down, and when it is back at the configured rate. */
  onPaceChange?: (ratePerSecond: number, why: "429" | "calm") => void;
  /** The fleet's shared budget (PostgreSQL); absent, this process is the whole budget. */
  fleet?: GateFleet;
}

/** The account's budget shared by a fleet on one store (store/sql/fleet-budget.ts). */
export interface GateFleet {
  /** Resolves when the fleet lets one call of the lane go out. */
  slot(lane: "dispatch" | "others"): Promise<void>;
  /** This gateway's part of api.concurrency (0 while the fleet has more gateways than calls). */
  concurrencyShare(): number;
  /** A 429: the window closed and the pace cut for every gateway. */
  rateLimited(retryAfterMs: number | undefined): void;
  /** 0 when a history call may go out now (counted for the fleet), else how long to wait. */
  historySlot(): Promise<number>;
  historyAvailable(reserve: number): boolean;
  historyLimited(retryAfterMs: number | undefined): number;
}

/** What a call's end tells the gate (the function admit() answers). */
export type GateRelease = (answer?: { rateLimited: true; retryAfterMs?: number }) => void;

/** The lowest share of api.ratePerSecond a run of 429s brings the gate down to. */
export const MIN_PACE = 1 / 16;
/** The share of the configured rate each calm second gives back. */
export const PACE_STEP = 0.1;
/** At most one change of pace this often: the 429s of calls already out at once count as one. */
export const PACE_HOLD_MS = 1000;

/** The service's minute, and 2 s more: its window starts when our first call arrives, a little after we sent it. */
export const HISTORY_WINDOW_MS = 62_000;

interface Waiter {
  cls: GateClass;
  wake: () => void;
}

export class ApiGate {
  /** The dispatcher's lane: its reserved share of the rate. */
  private dispatchNextAt = 0;
  private readonly dispatchSpacingMs: number;
  /** The other classes' lane and bound, what the dispatcher's reserved share leaves them. */
  private othersNextAt = 0;
  private readonly othersSpacingMs: number;
  private readonly concurrency: number;
  private readonly share: number;
  private inFlight = 0;
  private othersInFlight = 0;
  private readonly waiting = new Map<GateClass, Waiter[]>(GATE_CLASSES.map((c) => [c, []]));
  readonly historyPerMinute: number;
  /** Start times of the history calls of the last window. */
  private readonly historyCalls: number[] = [];
  private historyBlockedUntil = 0;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<unknown>;
  /** Counted for /metrics and tests: history calls made, and 429s met. */
  historyMade = 0;
  historyRefused = 0;
  /** Calls let through, by class (for /metrics and tests). */
  readonly admitted: Record<GateClass, number> = { dispatch: 0, intake: 0, background: 0, console: 0 };
  /** The share of the configured rate used now (1: all of it; see the file's head). */
  private pace = 1;
  private paceChangedAt = Number.NEGATIVE_INFINITY;
  /** 429s met by calls other than history (for /metrics and tests). */
  rateRefused = 0;

  constructor(private readonly opts: ApiGateOptions) {
    const share = Math.min(0.9, Math.max(0.05, opts.dispatchShare));
    this.share = share;
    const spacingMs = 1000 / opts.ratePerSecond;
    this.dispatchSpacingMs = spacingMs / share;
    this.othersSpacingMs = spacingMs / (1 - share);
    this.concurrency = opts.concurrency;
    this.historyPerMinute = opts.historyPerMinute;
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? ((ms) => sleep(ms));
  }

  /**
   * Resolves when `op` may go out, with the function to call once its answer is read (the call's
   * place in the concurrency bound is held until then).
   */
  async admit(op: string, cls: GateClass = "background"): Promise<GateRelease> {
    if (op === "history") await this.admitHistory();
    let wake!: () => void;
    let woken = new Promise<void>((r) => (wake = r));
    const me: Waiter = { cls, wake: () => wake() };
    const queue = this.waiting.get(cls)!;
    queue.push(me);
    for (;;) {
      const wait = this.waitFor(me);
      if (wait === 0) break;
      await (Number.isFinite(wait) ? Promise.race([this.sleep(wait), woken]) : woken);
      woken = new Promise<void>((r) => (wake = r));
    }
    queue.shift();
    const other = cls !== "dispatch";
    const now = this.now();
    // a dispatcher call uses its own lane when it can, else the others' (borrowed: none waited)
    if (other || this.dispatchNextAt > now)
      this.othersNextAt = Math.max(now, this.othersNextAt) + this.othersSpacingMs / this.pace;
    else this.dispatchNextAt = Math.max(now, this.dispatchNextAt) + this.dispatchSpacingMs / this.pace;
    this.inFlight += 1;
    if (other) this.othersInFlight += 1;
    this.admitted[cls] += 1;
    this.wakeAll();
    let released = false;
    const release: GateRelease = (answer) => {
      if (released) return;
      released = true;
      this.inFlight -= 1;
      if (other) this.othersInFlight -= 1;
      if (answer?.rateLimited && op !== "history") {
        this.slowDown(answer.retryAfterMs);
        this.opts.fleet?.rateLimited(answer.retryAfterMs);
      } else this.speedUp();
      this.wakeAll();
    };
    // the fleet's slot, with this call's place held: the sum over the fleet is the account's rate
    if (this.opts.fleet) {
      try {
        await this.opts.fleet.slot(other ? "others" : "dispatch");
      } catch (err) {
        // a command's slot cannot be had (the store or the account unknown): its place is freed
        release();
        throw err;
      }
    }
    return release;
  }

  /** Calls out at once now: api.concurrency, or this gateway's part of it in a fleet. */
  private limit(): number {
    const fleet = this.opts.fleet;
    return fleet ? Math.min(this.concurrency, fleet.concurrencyShare()) : this.concurrency;
  }

  /**
   * The others' bound: what the dispatcher's reserved share leaves them, at least one call at a
   * time, or they would never run (with concurrency 1 the dispatcher's share is its priority and
   * its part of the rate only).
   */
  private othersLimit(): number {
    return Math.max(1, Math.floor(this.limit() * (1 - this.share)));
  }

  /** The rate the gate lets calls out at now (api.ratePerSecond, less after 429s). */
  currentRate(): number {
    return this.opts.ratePerSecond * this.pace;
  }

  /** A 429: half the pace (once per PACE_HOLD_MS), and no call of any class before its Retry-After. */
  private slowDown(retryAfterMs: number | undefined): void {
    const now = this.now();
    this.rateRefused += 1;
    if (retryAfterMs !== undefined && retryAfterMs > 0) {
      this.dispatchNextAt = Math.max(this.dispatchNextAt, now + retryAfterMs);
      this.othersNextAt = Math.max(this.othersNextAt, now + retryAfterMs);
    }
    if (now - this.paceChangedAt < PACE_HOLD_MS || this.pace <= MIN_PACE) return;
    this.pace = Math.max(MIN_PACE, this.pace / 2);
    this.paceChangedAt = now;
    this.opts.onPaceChange?.(this.currentRate(), "429");
  }

  /** A call answered without a 429: a tenth of the rate back per calm second. */
  private speedUp(): void {
    if (this.pace >= 1) return;
    const now = this.now();
    if (now - this.paceChangedAt < PACE_HOLD_MS) return;
    this.pace = Math.min(1, this.pace + PACE_STEP);
    this.paceChangedAt = now;
    if (this.pace === 1) this.opts.onPaceChange?.(this.currentRate(), "calm");
  }

  /** Calls waiting in the gate now, by class. */
  waitingCalls(): Record<GateClass, number> {
    return Object.fromEntries(GATE_CLASSES.map((c) => [c, this.waiting.get(c)!.length])) as Record<GateClass, number>;
  }

  /**
   * 0 when `me` may go now; else how long until it might (Infinity: until a call ends). Only the
   * first waiter of a class may go. Among the other classes a higher one goes first; the
   * dispatcher is held only by its own lane, and takes the others' lane too while none waits.
   */
  private waitFor(me: Waiter): number {
    const q = this.waiting.get(me.cls)!;
    if (q[0] !== me) return Infinity;
    const limit = this.limit();
    // a fleet with more gateways than calls leaves this one none for now: look again in a second
    if (limit === 0) return 1000;
    if (this.inFlight >= limit) return Infinity;
    const now = this.now();
    if (me.cls === "dispatch") {
      const own = this.dispatchNextAt - now;
      if (own <= 0) return 0;
      const othersWait = GATE_CLASSES.some((c) => c !== "dispatch" && this.waiting.get(c)!.length > 0);
      return othersWait ? own : Math.max(0, Math.min(own, this.othersNextAt - now));
    }
    for (const c of GATE_CLASSES) {
      if (c === "dispatch") continue;
      if (c === me.cls) break;
      if (this.waiting.get(c)!.length > 0) return Infinity;
    }
    if (this.othersInFlight >= this.othersLimit()) return Infinity;
    return Math.max(0, this.othersNextAt - now);
  }

  private wakeAll(): void {
    for (const q of this.waiting.values()) for (const w of q) w.wake();
  }

  private async admitHistory(): Promise<void> {
    const fleet = this.opts.fleet;
    while (fleet) {
      const wait = await fleet.historySlot().catch(() => 500);
      if (wait <= 0) {
        this.historyMade += 1;
        return;
      }
      this.opts.onHistoryWait?.(wait, "budget");
      await this.sleep(wait);
    }
    for (;;) {
      const now = this.now();
      while (this.historyCalls.length > 0 && this.historyCalls[0]! <= now - HISTORY_WINDOW_MS)
        this.historyCalls.shift();
      let wait = this.historyBlockedUntil - now;
      let why: "budget" | "429" = "429";
      if (wait <= 0 && this.historyCalls.length >= this.historyPerMinute) {
        wait = this.historyCalls[0]! + HISTORY_WINDOW_MS - now;
        why = "budget";
      }
      if (wait <= 0) {
        this.historyCalls.push(now);
        this.historyMade += 1;
        return;
      }
      this.opts.onHistoryWait?.(wait, why);
      await this.sleep(wait);
    }
  }

  /**
   * Whether a history call could go out now without waiting (no 429 window, and more than
   * `reserve` calls of the budget left: status polling leaves those to reconciliation and inbound).
   */
  historyAvailable(reserve = 0): boolean {
    if (this.opts.fleet) return this.opts.fleet.historyAvailable(reserve);
    const now = this.now();
    if (this.historyBlockedUntil > now) return false;
    const used = this.historyCalls.filter((t) => t > now - HISTORY_WINDOW_MS).length;
    return used < this.historyPerMinute - Math.min(reserve, this.historyPerMinute - 1);
  }

  /**
   * The service refused a history call (429). Returns how long history is closed: `retryAfterMs`
   * when the service said, else until a minute after the oldest call of ours in its window (at
   * least a second, so an unexpected 429 is never hammered).
   */
  historyLimited(retryAfterMs: number | undefined): number {
    const now = this.now();
    this.historyRefused += 1;
    if (this.opts.fleet) return this.opts.fleet.historyLimited(retryAfterMs);
    const oldest = this.historyCalls[0] ?? now;
    const wait = retryAfterMs ?? Math.max(1000, oldest + HISTORY_WINDOW_MS - now);
    this.historyBlockedUntil = Math.max(this.historyBlockedUntil, now + wait);
    return wait;
  }
}
