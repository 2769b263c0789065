// Back-pressure (issue 55): past `queue.maxWaiting` faxes not yet sent (queued, deferred, being
// handed to the service), every door answers "busy, try again" — SMTP 451 4.3.2 before the message
// is sent, the console 503 with Retry-After, `faxgate send` and the print folders a temporary
// refusal — instead of taking more, so sending servers hold their mail. Nothing already accepted is
// dropped. The depth is the store's count (the whole fleet's on PostgreSQL), read at most every
// REFRESH_MS, plus what this gateway queued since, so a burst between two reads is counted.
import type { Clock } from "../clock.js";
import { FaxgateError } from "../errors.js";
import type { Metrics } from "../metrics/index.js";
import type { QueueStore } from "../store/index.js";

/** How stale the store's count may be before the next check reads it again. */
export const REFRESH_MS = 1000;
/** What a busy answer asks the sender to wait (a console's Retry-After). */
export const BUSY_RETRY_SECONDS = 30;

export class QueuePressure {
  /** faxes not yet sent: the store's last count plus this gateway's recipients queued since */
  private waiting = 0;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | null = null;

  /** `maxWaiting` 0: no limit (the store is not read). */
  constructor(
    private readonly store: Pick<QueueStore, "counts">,
    private readonly maxWaiting: number,
    private readonly clock: Clock,
    private readonly metrics?: Pick<Metrics, "backPressure">,
  ) {}

  /** The refusal when the queue is at its depth by the count at hand (a fresh one is asked for meanwhile); null otherwise. */
  busyNow(door: string): FaxgateError | null {
    if (this.maxWaiting <= 0) return null;
    if (this.stale()) void this.refresh().catch(() => undefined);
    return this.judge(door);
  }

  /** Throws QUEUE_FULL when the queue is at its depth, by a count at most REFRESH_MS old. */
  async check(door: string): Promise<void> {
    if (this.maxWaiting <= 0) return;
    if (this.stale()) await this.refresh();
    const busy = this.judge(door);
    if (busy) throw busy;
  }

  /** `recipients` more faxes were queued by this gateway (counted until the next read). */
  queued(recipients: number): void {
    this.waiting += recipients;
  }

  private judge(door: string): FaxgateError | null {
    if (this.waiting < this.maxWaiting) return null;
    this.metrics?.backPressure.inc({ door, why: "queue" });
    return new FaxgateError(
      "QUEUE_FULL",
      `The fax queue is full (${this.maxWaiting} faxes waiting to be sent); try again in a few minutes`,
      {
        temporary: true,
        retryAfterSeconds: BUSY_RETRY_SECONDS,
        smtpReply: "451 4.3.2 The fax gateway is busy: too many faxes waiting to be sent, please try again later",
      },
    );
  }

  private stale(): boolean {
    return this.clock.now() - this.readAt >= REFRESH_MS;
  }

  /** One read of the store at a time, shared by every caller waiting for it. */
  private refresh(): Promise<void> {
    this.reading ??= (async () => {
      try {
        const at = this.clock.now();
        const { recipients } = await this.store.counts();
        this.waiting = recipients.queued + recipients.deferred + recipients.sending;
        this.readAt = at;
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }
}
