// The connector deliveries' worker (issue 52): claims due rows under a lease, delivers each through
// its connector, and ends every claimed row in delivered, a later try, or failed. Rows are worked
// per connector side by side, so one connector that is down holds back only its own: after its
// first temporary failure in a pass, the rest of its rows are put back untried. A final failure
// puts "not delivered to ...: why" on the fax's timeline and alerts the fax's user; the ledger
// records each delivery in the same transaction as the row.
import type { Clock } from "../clock.js";
import { describeError } from "../errors.js";
import type { Ledger } from "../ledger/index.js";
import { childLog, type Logger } from "../log/index.js";
import { Periodic } from "../periodic.js";
import {
  type QueueStore,
  claimDeliveries,
  type Delivery,
  deliveryDone,
  deliveryFailed,
  deliveryRetry,
  extendDelivery,
  getReceivedText,
} from "../store/index.js";
import type { Connector } from "./connector.js";
import { connectorFor, kindLabel } from "./targets.js";
import { isTemporary } from "./problem.js";
import { secretsFrom } from "./secrets.js";
import { SmartTokens } from "./smart-auth.js";

/** Waits after each try that did not deliver; the last repeats. */
export const DELIVERY_RETRY_MS = [30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 21_600_000];
/** Tries before a delivery that keeps failing for passing reasons fails for good (about a day). */
export const MAX_TRIES = 10;
const CLAIM_LIMIT = 20;
const LEASE_MS = 300_000;

export interface DeliveryQueueOptions {
  store: QueueStore;
  ledger: Ledger;
  /** the secrets file connectors read their credentials from */
  secretsFile: () => string | null;
  /** this gateway's name on the rows it holds */
  owner: string;
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
  /** tests: a pass that ends calls this */
  onRunEnd?: () => void;
}

export interface DeliveryPassResult {
  delivered: number;
  retried: number;
  failed: number;
}

export class DeliveryQueue {
  private readonly tokens: SmartTokens;
  private readonly loop: Periodic<DeliveryPassResult>;

  constructor(private readonly opts: DeliveryQueueOptions) {
    this.loop = new Periodic(() => this.pass(), {
      intervalMs: opts.intervalMs ?? 15_000,
      unref: true,
      onError: (err) => opts.logger.error({ err: describeError(err) }, "connector delivery pass failed"),
      ...(opts.onRunEnd ? { onRunEnd: opts.onRunEnd } : {}),
    });
    this.tokens = new SmartTokens(() => opts.clock.now());
  }

  start(): void {
    this.loop.start();
  }

  /** Waits for the pass in flight; rows it did not reach stay claimed until their lease runs out. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass now, or the one in flight. */
  runOnce(): Promise<DeliveryPassResult> {
    return this.loop.runOnce();
  }

  /** A fax was routed to a connector: deliver it now rather than at the next pass. */
  poke(): void {
    this.loop.wake();
  }

  private async pass(): Promise<DeliveryPassResult> {
    const out: DeliveryPassResult = { delivered: 0, retried: 0, failed: 0 };
    const db = this.opts.store.sql;
    for (;;) {
      const rows = await claimDeliveries(db, this.opts.owner, CLAIM_LIMIT, LEASE_MS);
      if (rows.length === 0) break;
      const byTarget = new Map<string, Delivery[]>();
      for (const r of rows) byTarget.set(r.target, [...(byTarget.get(r.target) ?? []), r]);
      await Promise.all([...byTarget.values()].map((list) => this.target(list, out)));
      if (rows.length < CLAIM_LIMIT || this.loop.stopped) break;
    }
    return out;
  }

  private async target(rows: Delivery[], out: DeliveryPassResult): Promise<void> {
    const db = this.opts.store.sql;
    let down: { problem: string; until: Date } | null = null;
    for (const row of rows) {
      if (down) {
        // not tried: the connector failed just before; its try is given back
        await deliveryRetry(db, row.id, this.opts.owner, down.problem, down.until, false);
        out.retried++;
        continue;
      }
      if (!(await extendDelivery(db, row.id, this.opts.owner, LEASE_MS))) continue;
      const r = await this.one(row);
      out[r.outcome]++;
      if (r.outcome === "retried") down = { problem: r.problem, until: r.until };
    }
  }

  private async one(
    row: Delivery,
  ): Promise<{ outcome: "delivered" } | { outcome: "failed" } | { outcome: "retried"; problem: string; until: Date }> {
    const { store, owner } = { store: this.opts.store, owner: this.opts.owner };
    const db = store.sql;
    const log = childLog(this.opts.logger, { delivery: row.id, received: row.faxId, connector: row.kind });
    const fax = await withText(store, row.faxId);
    let problem: unknown;
    if (fax) {
      try {
        const document = fax.hasDocument ? await store.readReceivedDocument(fax.id) : null;
        const connector: Connector = connectorFor(row.kind, row.spec, {
          secret: secretsFrom(this.opts.secretsFile),
          tokens: this.tokens,
          now: () => this.opts.clock.now(),
        });
        const res = await connector.deliver({ fax, document, rule: row.rule, deliveryId: row.id });
        await deliveryDone(
          db,
          row,
          owner,
          { where: res.where, timeline: `delivered to ${kindLabel(row.kind)} ${row.target}: ${res.where}` },
          (t) =>
            this.opts.ledger.record(
              {
                action: "delivered",
                actor: { kind: "gateway" },
                object: { kind: "received", id: row.faxId },
                door: "gateway",
                detail: { connector: row.kind, rule: row.rule, attempts: row.attempts },
              },
              t,
            ),
        );
        log.info({ attempts: row.attempts }, "DELIVERED received fax to its connector");
        return { outcome: "delivered" };
      } catch (err) {
        problem = err;
      }
    } else problem = new Error("the fax is no longer kept (purged)");
    const words = problem instanceof Error ? problem.message : String(problem);
    if (fax && isTemporary(problem) && row.attempts < MAX_TRIES) {
      const wait = DELIVERY_RETRY_MS[Math.min(row.attempts, DELIVERY_RETRY_MS.length) - 1]!;
      // a little jitter, so the rows of one connector that came back do not all go at once
      const until = new Date(this.opts.clock.now() + wait + Math.floor(Math.random() * (wait / 10)));
      await deliveryRetry(db, row.id, owner, words, until);
      log.warn({ attempts: row.attempts, problem: words }, "DEFERRED connector delivery; tried again later");
      return { outcome: "retried", problem: words, until };
    }
    const label = kindLabel(row.kind);
    if (await deliveryFailed(db, row, owner, words, `not delivered to ${label} ${row.target}: ${words}`)) {
      await store.enqueueNotification({
        kind: "alert",
        user: row.owner,
        dedupeKey: `delivery-failed:${row.id}:${new Date(this.opts.clock.now()).toISOString()}`,
        payload: {
          subject: `a received fax was not delivered to ${label}`,
          text: `Received fax ${row.faxId} (rule "${row.rule}") was not delivered to ${label} ${row.target} after ${row.attempts} ${row.attempts === 1 ? "try" : "tries"}: ${words}. It is kept in faxgate meanwhile.`,
          action: `Fix the cause, then deliver it again: "faxgate deliveries again ${row.id}" or the fax's page in the console.`,
        },
      });
    }
    log.error({ attempts: row.attempts, problem: words }, "FAILED connector delivery; the fax's user was alerted");
    return { outcome: "failed" };
  }
}

/** The fax with its OCR text where it was read (the {matter} rule and FHIR's text attachment use it). */
async function withText(store: QueueStore, faxId: string) {
  const fax = await store.getReceived(faxId);
  if (!fax) return null;
  const text = await getReceivedText(store.sql, faxId);
  return { ...fax, text: text?.state === "done" ? text.body : null };
}
