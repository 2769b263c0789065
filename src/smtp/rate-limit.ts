// Messages per user per minute, a sliding window over the injected clock. Counted when a
// transaction starts (MAIL FROM), so a client cannot open many at once to get round it.
import type { Clock } from '../clock.js';

export class RateLimiter {
  private readonly hits = new Map<string, number[]>();

  constructor(private readonly perMinute: number, private readonly clock: Clock) {}

  /** Records one message for `key` and says whether it is within the limit. */
  take(key: string): boolean {
    const now = this.clock.now();
    const since = now - 60_000;
    const list = (this.hits.get(key) ?? []).filter((t) => t > since);
    if (list.length >= this.perMinute) {
      this.hits.set(key, list);
      return false;
    }
    list.push(now);
    this.hits.set(key, list);
    return true;
  }
}
