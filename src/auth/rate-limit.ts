// Messages per user per minute, a sliding window over the injected clock. Counted when a
// transaction starts (MAIL FROM), so a client cannot open many at once to get round it. Several
// gateways on one PostgreSQL count in the store instead (fleet-counter.ts: a fixed minute from the
// first message, rate-limiter-flexible's window), so a fleet grants one rate, not N.
import type { Clock } from "../clock.js";
import type { FleetCounters, WindowCounter } from "../fleet-counter.js";

/** One key's hits, oldest first; those before `head` have left the window. */
interface Hits {
  times: number[];
  head: number;
}

export class RateLimiter {
  private readonly hits = new Map<string, Hits>();
  private readonly shared: WindowCounter | null;

  /** `name`: what the fleet's counter is called (one per limit). */
  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
    counters: FleetCounters,
    name: string,
  ) {
    this.shared = counters(`rate:${name}`, perMinute, 60_000);
  }

  /** Records one message for `key`, in the fleet's count where there is one; whether it is within the limit. */
  async allow(key: string): Promise<boolean> {
    return this.shared ? (await this.shared.take(key)).allowed : this.take(key);
  }

  /**
   * Records one message for `key` in this process and says whether it is within the limit. Hits are kept in time
   * order, so those that left the window are at the front: a take costs the hits that left since
   * the one before, not a pass over the whole minute (with a high limit at 250 messages a second,
   * that pass copied 15,000 timestamps for every message).
   */
  take(key: string): boolean {
    const now = this.clock.now();
    const since = now - 60_000;
    let h = this.hits.get(key);
    if (!h) {
      h = { times: [], head: 0 };
      this.hits.set(key, h);
    }
    if (now < (h.times[h.times.length - 1] ?? now)) {
      // the clock was set back: hits "in the future" are forgotten, the rest stay in time order
      h.times = h.times.slice(h.head).filter((t) => t <= now);
      h.head = 0;
    }
    while (h.head < h.times.length && h.times[h.head]! <= since) h.head += 1;
    // cut once the hits that left are the larger part, so copying stays linear overall
    if (h.head > 64 && h.head * 2 > h.times.length) {
      h.times = h.times.slice(h.head);
      h.head = 0;
    }
    if (h.times.length - h.head >= this.perMinute) return false;
    h.times.push(now);
    return true;
  }
}
