// The retention pass (issue 56): local copies whose time is up go (jobs with their documents,
// received faxes), with a ledger row each in the same transaction; their service copies are deleted
// at the fax service and checked gone, each done with its own ledger row, tried again on a schedule
// and raised as an alert when the service does not let go; outbox mails past their time go too.
// Legal holds are seen by the store transaction that chooses (store/sql/retention.ts). One gateway
// at a time runs it (the "purge" duty).
import { promises as fsp } from "node:fs";
import path from "node:path";
import type { Clock } from "../clock.js";
import type { RetentionConfig } from "../config/index.js";
import { describeError } from "../errors.js";
import type { FaxApi } from "../fax/index.js";
import type { Ledger } from "../ledger/index.js";
import { childLog, type Logger } from "../log/index.js";
import { Sweep } from "../periodic.js";
import {
  type QueueStore,
  claimServicePurges,
  purgeExpired,
  queueServiceCopies,
  RETENTION_BATCH,
  type PurgedItem,
  type ServicePurge,
  servicePurged,
  servicePurgeFailed,
  takeBackServicePurges,
} from "../store/index.js";
import { RetentionRule } from "./rule.js";
import { deleteServiceCopy } from "./service-copy.js";

/** Waits between tries of a service delete that did not take; the last repeats. */
export const SERVICE_RETRY_MS = [60_000, 300_000, 1_800_000, 7_200_000, 21_600_000, 86_400_000];
/** Tries after which a person is told the service does not purge (the tries go on). */
export const ALERT_AFTER_TRIES = 3;
/** Service deletes one pass claims, and how long a claim is this gateway's. */
const CLAIM_LIMIT = 50;
const CLAIM_LEASE_MS = 300_000;

export interface RetentionOptions {
  store: QueueStore;
  ledger: Ledger;
  retention: () => RetentionConfig;
  /** the client of the user whose copy it is (their key may delete their faxes) */
  clientFor: (user: string) => FaxApi;
  /** the outbox folder of notify.transport outbox:, if any */
  outboxDir: () => string | null;
  clock: Clock;
  logger: Logger;
}

export interface RetentionPassResult {
  purged: number;
  serviceDeleted: number;
  serviceFailed: number;
  outboxRemoved: number;
}

export class Retention extends Sweep<RetentionPassResult> {
  private readonly rule: RetentionRule;
  /** whether the last pass held the purge duty (taking it takes back a former holder's claims) */
  private dutyHeld = false;

  constructor(private readonly opts: RetentionOptions) {
    super({
      intervalMs: opts.retention().checkEvery,
      unref: true,
      onError: (err) => opts.logger.error({ err: describeError(err) }, "retention pass failed"),
    });
    this.rule = new RetentionRule(opts.retention);
  }

  protected async sweep(): Promise<RetentionPassResult> {
    const holds = await this.opts.store.holdsDuty("purge");
    // just taken (PostgreSQL): claims left are a former holder's, which lost the duty
    if (holds && !this.dutyHeld && this.opts.store.backend !== "sqlite") await this.takeBackDeadClaims();
    this.dutyHeld = holds;
    if (!holds) return { purged: 0, serviceDeleted: 0, serviceFailed: 0, outboxRemoved: 0 };
    return this.pass();
  }

  /**
   * Service deletes an earlier run left claimed go back to pending, to be redone by the next pass
   * rather than after their 5-minute lease. SQLite: at start (the data folder is locked to this
   * gateway, so no other can hold a claim). PostgreSQL: when this gateway takes the purge duty
   * (only its holder claims, so a claim left is a former holder's that died or lost PostgreSQL; one
   * that still finishes its delete is harmless: servicePurged writes the row once).
   */
  async takeBackDeadClaims(): Promise<void> {
    const taken = await takeBackServicePurges(this.opts.store.retentionPort().db);
    if (taken > 0)
      this.opts.logger.warn({ deletes: taken }, "took back service deletes an earlier run left unfinished");
  }

  /** One whole pass, as the duty holder runs it. */
  async pass(): Promise<RetentionPassResult> {
    const purged = await this.purgeLocal();
    const port = this.opts.store.retentionPort();
    const now = this.opts.clock.now();
    await queueServiceCopies(
      port.db,
      {
        jobs: RetentionRule.before(now, this.rule.shortestService("job")),
        received: RetentionRule.before(now, this.rule.shortestService("received")),
      },
      (item) => RetentionRule.due(item.at, this.rule.service(item)),
    );
    let serviceDeleted = 0;
    let serviceFailed = 0;
    for (const p of await claimServicePurges(port.db, CLAIM_LIMIT, CLAIM_LEASE_MS)) {
      if (await this.deleteAtService(p)) serviceDeleted++;
      else serviceFailed++;
    }
    const outboxRemoved = await this.pruneOutbox();
    return { purged, serviceDeleted, serviceFailed, outboxRemoved };
  }

  private async purgeLocal(): Promise<number> {
    const port = this.opts.store.retentionPort();
    let total = 0;
    for (;;) {
      const now = this.opts.clock.now();
      const gone = await purgeExpired(
        port.db,
        {
          jobsBefore: RetentionRule.before(now, this.rule.shortestLocal("job")),
          receivedBefore: RetentionRule.before(now, this.rule.shortestLocal("received")),
          expired: (item) => {
            const keep = this.rule.local(item);
            return keep !== null && Date.parse(item.at) + keep <= now;
          },
          serviceDue: (item) => RetentionRule.due(item.at, this.rule.service(item)),
          purged: (t, item) => this.opts.ledger.record(purgedEvent(item), t),
        },
        (id) => port.removeJobFiles(id),
      );
      total += gone.length;
      if (gone.length) this.opts.ledger.sealSoon();
      if (gone.length) this.opts.logger.info({ purged: gone.length }, "PURGED local copies past their retention");
      // a batch of candidates may hold none that is due (another user's longer time): then stop
      if (gone.length === 0 || gone.length < RETENTION_BATCH) break;
    }
    return total;
  }

  /** Deletes one service copy and checks it gone; true when it is. */
  private async deleteAtService(p: ServicePurge): Promise<boolean> {
    const db = this.opts.store.retentionPort().db;
    const log = childLog(this.opts.logger, { messageId: p.messageId, object: `${p.objectKind}:${p.objectId}` });
    const out = await deleteServiceCopy(this.opts.clientFor(p.user), p.messageId);
    if (out.gone) {
      await servicePurged(db, p.messageId, (t) =>
        this.opts.ledger.record(
          {
            action: "purged",
            actor: { kind: "gateway" },
            object: { kind: p.objectKind, id: p.objectId },
            door: "gateway",
            ...(p.number ? { number: p.number } : {}),
            detail: { copy: "service", messageId: p.messageId, ...(out.deletedAt ? { deletedAt: out.deletedAt } : {}) },
          },
          t,
        ),
      );
      this.opts.ledger.sealSoon();
      log.info("PURGED the service copy");
      return true;
    }
    const wait = SERVICE_RETRY_MS[Math.min(p.attempts, SERVICE_RETRY_MS.length) - 1]!;
    const alert = !p.alerted && p.attempts >= ALERT_AFTER_TRIES;
    if (alert) await this.alert(p, out.problem);
    await servicePurgeFailed(db, p.messageId, out.problem, new Date(this.opts.clock.now() + wait), alert);
    log.warn({ attempts: p.attempts, problem: out.problem }, "the service copy is not gone yet; tried again later");
    return false;
  }

  private async alert(p: ServicePurge, problem: string): Promise<void> {
    await this.opts.store.enqueueNotification({
      kind: "alert",
      user: p.user,
      dedupeKey: `service-not-purged:${p.messageId}`,
      payload: {
        subject: "the fax service does not delete a fax past its retention",
        text: `The retention rule asked the fax service to delete the copy of ${p.objectKind} ${p.objectId} (service id ${p.messageId}); after ${p.attempts} tries it is still there: ${problem}. The gateway goes on trying.`,
        action:
          "Check the fax service account (its storeFaxesTime and the key's rights), or delete the fax there by hand.",
      },
    });
    this.opts.logger.error(
      { messageId: p.messageId, attempts: p.attempts },
      "SERVICE NOT PURGED: the fax service keeps a copy past its retention; an alert was sent",
    );
  }

  private async pruneOutbox(): Promise<number> {
    const dir = this.opts.outboxDir();
    const keep = this.opts.retention().outbox;
    if (!dir || keep === null) return 0;
    const before = this.opts.clock.now() - keep;
    let removed = 0;
    let names: string[];
    try {
      names = await fsp.readdir(dir);
    } catch {
      return 0;
    }
    for (const name of names) {
      if (!name.endsWith(".eml")) continue;
      const file = path.join(dir, name);
      const st = await fsp.lstat(file).catch(() => null);
      if (!st?.isFile() || st.mtimeMs >= before) continue;
      await fsp.rm(file, { force: true });
      removed++;
    }
    return removed;
  }
}

function purgedEvent(item: PurgedItem) {
  return {
    action: "purged" as const,
    actor: { kind: "gateway" as const },
    object: { kind: item.kind, id: item.id },
    door: "gateway" as const,
    detail: { copy: "local", serviceCopies: item.copies.length },
  };
}
