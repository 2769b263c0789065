// Print now, address later: a print job that waits for its owner's number does not wait for ever.
// Past spool.addressWait it ends, cancelled, never faxed; the store's step to a
// final state queues the outcome notice, which tells the owner (notify/outcome-mail.ts). One
// gateway at a time does it (a duty on a shared PostgreSQL queue).
import type { Clock } from "../clock.js";
import { describeError } from "../errors.js";
import type { Logger } from "../log/index.js";
import { Sweep } from "../periodic.js";
import type { QueueStore } from "../store/index.js";

export interface AddressExpiryOptions {
  store: Pick<QueueStore, "expireWaiting" | "holdsDuty">;
  clock: Clock;
  logger: Logger;
  /** spool.addressWait, ms */
  waitMs: number;
  /** How often to look (default: a sixtieth of the wait, between 1 and 15 minutes). */
  intervalMs?: number;
}

export class AddressExpiry extends Sweep<number> {
  private readonly waitMs: number;

  constructor(private readonly opts: AddressExpiryOptions) {
    const waitMs = opts.waitMs;
    const every = opts.intervalMs ?? Math.min(15 * 60_000, Math.max(60_000, waitMs / 60));
    super({
      intervalMs: every,
      firstDelayMs: every,
      unref: true,
      onError: (err) => opts.logger.warn({ err: describeError(err) }, "address expiry sweep failed; will try again"),
    });
    this.waitMs = waitMs;
  }

  /** Ends the jobs past the wait; answers how many ended. */
  protected async sweep(): Promise<number> {
    if (!(await this.opts.store.holdsDuty("address-expiry"))) return 0;
    const hours = this.waitMs / 3_600_000;
    const ended = await this.opts.store.expireWaiting(
      "address",
      new Date(this.opts.clock.now() - this.waitMs),
      `no fax number was given within ${hours} hour${hours === 1 ? "" : "s"}`,
    );
    for (const job of ended)
      this.opts.logger.info({ job: job.id, user: job.user }, "CANCELLED no address was given in time");
    return ended.length;
  }
}
