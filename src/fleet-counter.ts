// Counts shared by every gateway of a fleet (issue 55): sign-in failures, messages per user and
// per client, console calls per user. rate-limiter-flexible's RateLimiterPostgres keeps one row
// per key in the queue's own database (rate_limits, made by a schema step: the library never
// creates a table, so a rolling upgrade's steps stay the only DDL). A counter counts within a
// fixed window from its first count. On SQLite there is one gateway, whose own counters (by the
// injected clock) are already the whole fleet's: the composition root hands out none there.
import type pg from "pg";
import { RateLimiterPostgres, RateLimiterRes } from "rate-limiter-flexible";

/** One count taken: whether it was within `max`, how many are counted now, when the window ends. */
export interface CountTaken {
  allowed: boolean;
  count: number;
  /** milliseconds until the window ends and the count starts again */
  resetMs: number;
}

/** A count per key within a window, kept where every gateway sees it. */
export interface WindowCounter {
  /** Counts one for `key` (refused past `max`: then nothing more is allowed until the window ends). */
  take(key: string): Promise<CountTaken>;
  /** Gives one count back (an attempt that turned out not to count, like a right password). */
  giveBack(key: string): Promise<void>;
}

/** Makes the fleet's counters, or null for each: this gateway's own counters are the fleet's. */
export type FleetCounters = (name: string, max: number, windowMs: number) => WindowCounter | null;

/** No fleet to share with (SQLite: one gateway on the data folder). */
export const localCounters: FleetCounters = () => null;

/** Counters in PostgreSQL's rate_limits table, through rate-limiter-flexible. */
export function postgresCounters(pool: pg.Pool): FleetCounters {
  return (name, max, windowMs) => {
    const rl = new RateLimiterPostgres({
      storeClient: pool,
      storeType: "pool",
      tableName: "rate_limits",
      tableCreated: true,
      keyPrefix: name,
      points: max,
      duration: Math.max(1, Math.ceil(windowMs / 1000)),
    });
    return {
      async take(key) {
        try {
          const r = await rl.consume(key, 1);
          return { allowed: true, count: r.consumedPoints, resetMs: r.msBeforeNext };
        } catch (err) {
          // a refusal is an answer; anything else (the database away) is the store's trouble
          if (err instanceof RateLimiterRes)
            return { allowed: false, count: err.consumedPoints, resetMs: err.msBeforeNext };
          throw err;
        }
      },
      async giveBack(key) {
        await rl.reward(key, 1);
      },
    };
  };
}
