// Faxes in a group's shared inbox that nobody has taken: after the group's escalateAfter
// they are sent again (to the group, a named user, or an address), once per that interval, with
// the clock injected so tests drive it by hand. Received faxes past their time go by the
// retention rule (retention/), which sees legal holds.
import type { Clock } from "../clock.js";
import { systemClock } from "../clock.js";
import type { InboundConfig, UserConfig } from "../config/index.js";
import { describeError } from "../errors.js";
import type { Logger } from "../log/index.js";
import { Sweep } from "../periodic.js";
import type { QueueStore } from "../store/index.js";
import { keptFaxPayload, type ReceivedFax } from "../received/index.js";

export interface EscalationOptions {
  store: QueueStore;
  inbound: () => InboundConfig;
  users: () => readonly UserConfig[];
  logger: Logger;
  clock?: Clock;
}

export class InboxEscalation extends Sweep<number> {
  private readonly clock: Clock;

  constructor(private readonly opts: EscalationOptions) {
    super({
      intervalMs: opts.inbound().escalationCheck,
      onError: (err) => opts.logger.error({ err: describeError(err) }, "inbox escalation failed"),
    });
    this.clock = opts.clock ?? systemClock;
  }

  /** One look (one gateway at a time holds the duty); answers how many faxes were sent again. */
  protected async sweep(): Promise<number> {
    return (await this.opts.store.holdsDuty("inbox")) ? this.pass() : 0;
  }

  private async pass(): Promise<number> {
    const cfg = this.opts.inbound();
    const now = this.clock.now();
    let sent = 0;
    for (const [group, def] of Object.entries(cfg.groups)) {
      if (!def.escalateAfter) continue;
      const after = def.escalateAfter;
      const cutoff = new Date(now - after).toISOString();
      for (const fax of await this.opts.store.listReceived({
        groups: [group],
        states: ["new"],
        receivedBefore: cutoff,
        limit: 500,
      })) {
        if (fax.escalatedAt && fax.escalatedAt > cutoff) continue;
        const at = new Date(now).toISOString();
        const target = def.escalateTo ?? group;
        // the row changes only while still untaken: one taken meanwhile is left alone
        const changed = await this.opts.store.changeReceived(fax.id, {
          set: { escalatedAt: at },
          expect: ["new"],
          event: {
            action: "escalated",
            actor: null,
            detail: `not taken after ${after / 60_000} min: sent again to ${target}`,
          },
        });
        if (!changed) continue;
        await this.notify(fax, group, target, at);
        this.opts.logger.info({ received: fax.id, group, to: target }, "ESCALATED an untaken fax");
        sent++;
      }
    }
    return sent;
  }

  private async notify(fax: ReceivedFax, group: string, target: string, at: string): Promise<void> {
    const payload = keptFaxPayload(fax, { group, escalated: true });
    const key = (who: string) => `escalate:${fax.id}:${at}:${who}`;
    const members = this.opts.inbound().groups[group]?.members ?? [];
    if (target.includes("@")) {
      await this.opts.store.enqueueNotification({
        kind: "inbound",
        user: fax.user,
        jobId: null,
        dedupeKey: key(target.toLowerCase()),
        payload: { ...payload, to: target },
      });
      return;
    }
    const users = target === group ? members : [target];
    for (const u of users) {
      if (this.opts.users().some((x) => x.name === u))
        await this.opts.store.enqueueNotification({
          kind: "inbound",
          user: u,
          jobId: null,
          dedupeKey: key(u),
          payload,
        });
    }
  }
}
