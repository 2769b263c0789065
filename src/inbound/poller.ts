// Looks for faxes the users received (history, direction inbound, with each user's own key) and
// hands each to the one door for received faxes (received-intake.ts), as a webhook's push does:
// kept once per service message id, attributed by the service's record, routed by the rules. The
// first start marks what is already there as seen, so a new install does not mail years of faxes
// (unless notify.inbound.mailBacklog).
import type { Clock } from "../clock.js";
import { systemClock } from "../clock.js";
import type { NotifyConfig, UserConfig } from "../config/index.js";
import { describeError } from "../errors.js";
import type { FaxApi, FaxRecord } from "../fax/index.js";
import type { Logger } from "../log/index.js";
import { Sweep } from "../periodic.js";
import type { Metrics } from "../metrics/index.js";
import type { QueueStore } from "../store/index.js";
import { advanceCursor, isBehind, isSeen, parseCursor, serializeCursor } from "./poller-cursor.js";
import type { ReceivedFaxIntake } from "./received-intake.js";

export interface InboundPollerOptions {
  notify: NotifyConfig;
  /** The configured users as they are now (a reload replaces them). */
  users: () => readonly UserConfig[];
  store: QueueStore;
  clientFor: (user: string) => FaxApi;
  logger: Logger;
  clock?: Clock;
  metrics?: Metrics;
  /** Where each fax found is kept and routed: the same door a webhook's push goes through. */
  intake: Pick<ReceivedFaxIntake, "receive">;
}

/** Records read per history page. */
const PAGE = 100;
/** Most records read per user and poll: bounds a first start on a huge history. */
const MAX_READ = 2000;

export function inboundStateKey(user: string): string {
  return `notify.inbound.cursor:${user}`;
}

export class InboundPoller extends Sweep<void> {
  private readonly log: Logger;
  private readonly clock: Clock;
  /** Users whose last poll failed, so a long outage logs once, not every interval. */
  private readonly failing = new Set<string>();

  constructor(private readonly opts: InboundPollerOptions) {
    super({
      intervalMs: opts.notify.inbound.interval,
      onError: (err) => opts.logger.error({ err: describeError(err) }, "inbound poll failed"),
    });
    this.log = opts.logger;
    this.clock = opts.clock ?? systemClock;
  }

  /**
   * One look at every user's inbound history, by one gateway at a time (a duty: always this one on
   * SQLite; on PostgreSQL the holder of its advisory lock, checked each period, so another takes
   * over when the holder dies).
   */
  protected async sweep(): Promise<void> {
    if (await this.opts.store.holdsDuty("inbound")) await this.pollAll();
  }

  private async pollAll(): Promise<void> {
    for (const user of this.opts.users()) {
      if (this.stopped) return;
      try {
        await this.pollUser(user.name);
        if (this.failing.delete(user.name)) this.log.info({ user: user.name }, "inbound history readable again");
      } catch (err) {
        if (!this.failing.has(user.name))
          this.log.warn({ user: user.name, err: describeError(err) }, "could not read inbound history; will try again");
        this.failing.add(user.name);
      }
    }
  }

  private async pollUser(user: string): Promise<void> {
    const key = inboundStateKey(user);
    const cursor = parseCursor(await this.opts.store.getState(key));
    const fresh: FaxRecord[] = [];
    const client = this.opts.clientFor(user);
    for await (const r of client.historyAll({ direction: "inbound", limit: PAGE })) {
      if (r.direction && r.direction !== "inbound") continue;
      if (cursor && isBehind(r, cursor)) break;
      if (cursor && isSeen(r, cursor)) continue;
      fresh.push(r);
      if (fresh.length >= MAX_READ) break;
    }
    const now = this.clock.now();

    if (!cursor && !this.opts.notify.inbound.mailBacklog) {
      await this.opts.store.setState(key, serializeCursor(advanceCursor(null, fresh, now, true)));
      this.log.info(
        { user, faxes: fresh.length },
        "first look at inbound history: existing faxes marked as seen, not mailed",
      );
      return;
    }

    // oldest first: kept (and mailed) in the order the faxes arrived
    for (const r of [...fresh].reverse()) await this.opts.intake.receive(user, r, "poll");
    await this.opts.store.setState(key, serializeCursor(advanceCursor(cursor, fresh, now)));
  }
}
