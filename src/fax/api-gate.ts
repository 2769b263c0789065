// One gate for every call to the fax service from this process (dispatcher, notifier, inbound
// poller, SMTP contact lookups, spool): calls are spaced to api.ratePerSecond, and fax history
// calls, which the service is reported to limit to about 8 a minute per account, share one
// budget of api.historyPerMinute. A 429 on history closes the budget until the service's window
// has passed: Retry-After when given, else a minute after the oldest call we know is in it.
import { setTimeout as sleep } from 'node:timers/promises';

export interface ApiGateOptions {
  ratePerSecond: number;
  /** Default 8. */
  historyPerMinute?: number;
  now?: () => number;
  /** Waits `ms` of the same clock as `now` (injected with it, for tests that run time fast). */
  sleep?: (ms: number) => Promise<unknown>;
  /** Told of every wait on the history budget, e.g. for a log line. */
  onHistoryWait?: (ms: number, why: 'budget' | '429') => void;
}

/** The service's minute, and 2 s more: its window starts when our first call arrives, a little after we sent it. */
export const HISTORY_WINDOW_MS = 62_000;
export const DEFAULT_HISTORY_PER_MINUTE = 8;

export class ApiGate {
  private nextAt = 0;
  private readonly spacingMs: number;
  readonly historyPerMinute: number;
  /** Start times of the history calls of the last window. */
  private readonly historyCalls: number[] = [];
  private historyBlockedUntil = 0;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<unknown>;
  /** Counted for /metrics and tests: history calls made, and 429s met. */
  historyMade = 0;
  historyRefused = 0;

  constructor(private readonly opts: ApiGateOptions) {
    this.spacingMs = 1000 / opts.ratePerSecond;
    this.historyPerMinute = opts.historyPerMinute ?? DEFAULT_HISTORY_PER_MINUTE;
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? ((ms) => sleep(ms));
  }

  /** Resolves when `op` may go out. */
  async admit(op: string): Promise<void> {
    if (op === 'history') await this.admitHistory();
    const now = this.now();
    const at = Math.max(now, this.nextAt);
    this.nextAt = at + this.spacingMs;
    if (at > now) await this.sleep(at - now);
  }

  private async admitHistory(): Promise<void> {
    for (;;) {
      const now = this.now();
      while (this.historyCalls.length > 0 && this.historyCalls[0]! <= now - HISTORY_WINDOW_MS) this.historyCalls.shift();
      let wait = this.historyBlockedUntil - now;
      let why: 'budget' | '429' = '429';
      if (wait <= 0 && this.historyCalls.length >= this.historyPerMinute) {
        wait = this.historyCalls[0]! + HISTORY_WINDOW_MS - now;
        why = 'budget';
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
    const oldest = this.historyCalls[0] ?? now;
    const wait = retryAfterMs ?? Math.max(1000, oldest + HISTORY_WINDOW_MS - now);
    this.historyBlockedUntil = Math.max(this.historyBlockedUntil, now + wait);
    return wait;
  }
}
