// A fax to a new number that its owner did not confirm (intake/confirm-new.ts) does not wait for
// ever: past smtp.senderAuth.confirmWait it ends, cancelled, never faxed; the store's step to a
// final state queues the outcome notice, which tells the owner (notify/outcome-mail.ts). One
// gateway at a time does it (a duty on a shared PostgreSQL queue); a click racing it is one
// guarded step in the store, so one of them wins.
import type { Clock } from "../clock.js";
import { describeError } from "../errors.js";
import type { Logger } from "../log/index.js";
import { Sweep } from "../periodic.js";
import type { QueueStore } from "../store/index.js";

export interface ConfirmExpiryOptions {
  store: Pick<QueueStore, "expireWaiting" | "holdsDuty">;
  clock: Clock;
  logger: Logger;
  /** smtp.senderAuth.confirmWait, ms */
  waitMs: number;
}

export class ConfirmExpiry extends Sweep<number> {
  constructor(private readonly opts: ConfirmExpiryOptions) {
    // a sixtieth of the wait, between 1 and 15 minutes: late by a little at most
    const every = Math.min(15 * 60_000, Math.max(60_000, opts.waitMs / 60));
    super({
      intervalMs: every,
      firstDelayMs: every,
      unref: true,
      onError: (err) =>
        opts.logger.warn({ err: describeError(err) }, "confirmation expiry sweep failed; will try again"),
    });
  }

  /** Ends the faxes past the wait; answers how many ended. */
  protected async sweep(): Promise<number> {
    if (!(await this.opts.store.holdsDuty("confirm-expiry"))) return 0;
    const hours = this.opts.waitMs / 3_600_000;
    const ended = await this.opts.store.expireWaiting(
      "confirmation",
      new Date(this.opts.clock.now() - this.opts.waitMs),
      `not confirmed within ${hours} hour${hours === 1 ? "" : "s"}; never sent`,
    );
    for (const job of ended)
      this.opts.logger.info({ job: job.id, user: job.user }, "CANCELLED a new number was not confirmed in time");
    return ended.length;
  }
}
