// The durable queue on PostgreSQL, for several gateways sharing one queue: the facade over the
// parts in this folder, as sqlite/store.ts is over its own. Same semantics as the SQLite store:
// the same transition table (rendered to SQL by ../transition-sql.ts), the same derived job
// state and outcome notice, the same dedupe window, leases and purge rules. What several
// instances need differs: claims lock rows and numbers (leases.ts), documents live in the
// database with a cached copy per instance (documents.ts), duties and new-job news ride on one
// session of their own (duties.ts).
import { promises as fsp } from "node:fs";
import path from "node:path";
import { FaxgateError } from "../../errors.js";
import type {
  ClaimedGroup,
  ClaimOptions,
  DeferOptions,
  FailOptions,
  FaxResultFields,
  OperatorStep,
  OwnerWait,
  QueueStore,
  RecipientFilter,
  RecipientKey,
} from "../queue-store.js";
import type { ReceivedChange, ReceivedFilter } from "../received.js";
import type { NewReceivedFax, ReceivedEvent, ReceivedFax } from "../../received/index.js";
import type {
  CoverSpec,
  Job,
  JobEvent,
  JobFilter,
  JobMeta,
  JobSource,
  NewDocument,
  NewJob,
  NewNotification,
  NewRecipient,
  Notification,
  QueueCounts,
  Recipient,
  StoredDocument,
} from "../types.js";
import { createPgContext, type PgContext, type PgStoreOptions } from "./context.js";
import * as documents from "./documents.js";
import { DutyConnection } from "./duties.js";
import * as intake from "./enqueue.js";
import type { Db } from "../sql/db.js";
import type { JobLedgerRows } from "../sql/ledger.js";
import * as kv from "../sql/kv.js";
import * as operator from "../sql/operator.js";
import type { RetentionPort } from "../queue-store.js";
import * as reads from "../sql/read.js";
import * as transitions from "../sql/transitions.js";
import * as notifications from "../sql/notifications.js";
import { releaseSignedMessage, type SignedUse, type SignedUseAnswer, useSignedMessage } from "../signed-uses.js";
import { pgDb } from "./pg-db.js";
import type pg from "pg";
import * as leases from "../sql/leases.js";
import * as waiting from "../sql/waiting.js";
import * as received from "../sql/received.js";
import { migrate } from "./schema.js";

export type { PgStoreOptions } from "./context.js";

export class PgStore implements QueueStore {
  readonly backend = "postgres" as const;
  readonly dataDir: string;
  /** Cached copies of documents, one folder per job: `documentPath()` hands these out. */
  readonly cacheDir: string;
  /** The URL with its password masked, for messages and logs. */
  readonly shownUrl: string;
  private readonly ctx: PgContext;
  /** The query layer's port (../sql/db.ts): the operations written once for both stores run on it. */
  private readonly q: Db;
  private readonly enqueuedListeners = new Set<(job: Job) => void>();
  private readonly duties: DutyConnection;
  /** A job as this instance hands it out: its documents' paths in this instance's cache. */
  private readonly local = (job: Job): Job => documents.withLocalPaths(this.ctx, job);

  get fleetPool(): pg.Pool {
    return this.ctx.pool;
  }

  get sql(): Db {
    return this.q;
  }

  /** Connects, brings the schema up to date (one instance at a time) and sweeps stale cached copies. */
  static async open(opts: PgStoreOptions): Promise<PgStore> {
    const store = new PgStore(createPgContext(opts));
    try {
      await migrate(store.ctx);
    } catch (err) {
      await store.ctx.pool.end().catch(() => undefined);
      const cause = store.ctx.error(err, "open");
      throw new FaxgateError(
        "STORE_UNAVAILABLE",
        `the queue store ${store.shownUrl} cannot be opened: ${cause.message}`,
        {
          temporary: true,
          cause,
        },
      );
    }
    documents.sweepCache(store.ctx);
    return store;
  }

  private constructor(ctx: PgContext) {
    this.ctx = ctx;
    this.q = pgDb(ctx);
    this.dataDir = ctx.dataDir;
    this.cacheDir = ctx.cacheDir;
    this.shownUrl = ctx.shownUrl;
    this.duties = new DutyConnection(
      ctx,
      (id) =>
        void this.getJob(id).then(
          (job) => job && this.announce(job),
          () => undefined,
        ),
      () => this.enqueuedListeners.size > 0,
    );
  }

  private announce(job: Job): void {
    for (const fn of this.enqueuedListeners) fn(job);
  }

  // ---- documents and intake

  readDocument(doc: StoredDocument): Promise<Buffer> {
    return documents.readDocument(this.ctx, doc);
  }

  jobFilesDir(jobId: string): string {
    return path.join(this.ctx.cacheDir, jobId);
  }

  documentPath(doc: StoredDocument): Promise<string> {
    return documents.documentPath(this.ctx, doc);
  }

  async enqueue(input: NewJob, ledger?: JobLedgerRows): Promise<{ job: Job; duplicate: boolean }> {
    const result = await intake.enqueue(this.ctx, this.q, this.local, input, ledger);
    if (!result.duplicate) this.announce(result.job);
    return result;
  }

  /**
   * New jobs of this instance at once, and those of the other instances on the shared queue as
   * PostgreSQL delivers their NOTIFY (duties.ts).
   */
  onEnqueued(fn: (job: Job) => void): () => void {
    this.enqueuedListeners.add(fn);
    this.duties.listen();
    return () => this.enqueuedListeners.delete(fn);
  }

  enqueueCorrupt(input: {
    source: JobSource;
    user: string;
    reason: string;
    original: NewDocument;
    meta?: JobMeta;
  }): Promise<Job> {
    return intake.enqueueCorrupt(this.q, this.local, input);
  }

  // ---- reading

  getJob(id: string): Promise<Job | null> {
    return reads.jobById(this.q, this.local, id);
  }

  listJobs(filter: JobFilter = {}): Promise<Job[]> {
    return reads.listJobs(this.q, this.local, filter);
  }

  countJobs(filter: JobFilter = {}): Promise<number> {
    return reads.countJobs(this.q, filter);
  }

  counts(): Promise<QueueCounts> {
    return reads.counts(this.q);
  }

  listEvents(jobId: string): Promise<JobEvent[]> {
    return reads.listEvents(this.q, jobId);
  }

  listRecipients(filter: RecipientFilter): Promise<Array<Recipient & { user: string }>> {
    return reads.listRecipients(this.q, filter);
  }

  isKnownMessage(messageId: string): Promise<boolean> {
    return reads.isKnownMessage(this.q, messageId);
  }

  nextDueAt(): Promise<string | null> {
    return reads.nextDueAt(this.q);
  }

  // ---- dispatcher side

  async claimDue(owner: string, limit: number, leaseMs: number, opts: ClaimOptions = {}): Promise<ClaimedGroup[]> {
    const groups = await leases.claimDue(this.q, this.local, owner, limit, leaseMs, opts);
    // the documents on this host before the send reads them
    await Promise.all(groups.map((g) => documents.cacheDocuments(this.ctx, g.job)));
    return groups;
  }

  extendLease(owner: string, keys: RecipientKey[], leaseMs: number): Promise<void> {
    return leases.extendLease(this.q, owner, keys, leaseMs);
  }

  /** Leases expire by time only: several instances share the queue, so `all` is ignored here. */
  releaseExpired(opts: { all?: boolean } = {}): Promise<{ unknown: number; released: number }> {
    return leases.releaseExpired(this.q, opts);
  }

  releaseOwner(owner: string): Promise<number> {
    return leases.releaseOwner(this.q, owner);
  }

  markCallLeaving(owner: string, sendId: string, keys: RecipientKey[]): Promise<boolean> {
    return leases.markCallLeaving(this.q, owner, sendId, keys);
  }

  markAccepted(
    key: RecipientKey,
    sendId: string,
    fields: FaxResultFields & { messageId: string },
    apiCalls = 0,
  ): Promise<boolean> {
    return transitions.markAccepted(this.q, key, sendId, fields, apiCalls);
  }

  markUnknown(key: RecipientKey, sendId: string, error: string): Promise<boolean> {
    return transitions.markUnknown(this.q, key, sendId, error);
  }

  postponeUnknown(key: RecipientKey, sendId: string, error: string, nextAttemptAt: Date): Promise<boolean> {
    return transitions.postponeUnknown(this.q, key, sendId, error, nextAttemptAt);
  }

  defer(key: RecipientKey, opts: DeferOptions): Promise<boolean> {
    return transitions.defer(this.q, key, opts);
  }

  fail(key: RecipientKey, opts: FailOptions): Promise<boolean> {
    return transitions.fail(this.q, key, opts);
  }

  complete(key: RecipientKey, fields: FaxResultFields): Promise<boolean> {
    return transitions.complete(this.q, key, fields);
  }

  recordProgress(key: RecipientKey, fields: FaxResultFields): Promise<void> {
    return transitions.recordProgress(this.q, key, fields);
  }

  addApiCalls(keys: RecipientKey[], calls: number): Promise<void> {
    return transitions.addApiCalls(this.q, keys, calls);
  }

  wakeDeferred(user: string, errorPrefix: string): Promise<number> {
    return transitions.wakeDeferred(this.q, user, errorPrefix);
  }

  // ---- operators

  operate(id: string, step: OperatorStep, by?: string): Promise<Job> {
    return operator.operate(this.q, this.local, id, step, by);
  }

  async address(id: string, input: { recipients: NewRecipient[]; cover: CoverSpec }): Promise<Job> {
    const job = await waiting.address(this.q, this.local, id, input);
    this.announce(job);
    return job;
  }

  expireWaiting(what: OwnerWait, before: Date, reason: string): Promise<Job[]> {
    return waiting.expireWaitingFor(this.q, this.local, what, before, reason);
  }

  faxedNumbers(user: string, numbers: readonly string[]): Promise<string[]> {
    return waiting.faxedNumbers(this.q, user, numbers);
  }

  async confirm(id: string, by: string): Promise<{ job: Job; moved: number }> {
    const out = await waiting.confirm(this.q, this.local, id, by);
    if (out.moved > 0) this.announce(out.job);
    return out;
  }

  fleetDb(): Db | null {
    return this.q;
  }

  retentionPort(): RetentionPort {
    return {
      db: this.q,
      removeJobFiles: (id) => fsp.rm(path.join(this.ctx.cacheDir, id), { recursive: true, force: true }),
    };
  }

  async purge(olderThanMs: number): Promise<number> {
    const { purged, cutoff } = await operator.purge(this.q, olderThanMs, (id) =>
      fsp.rm(path.join(this.ctx.cacheDir, id), { recursive: true, force: true }),
    );
    if (purged > 0) this.ctx.log.info({ jobs: purged, cutoff }, "purged finished jobs");
    return purged;
  }

  // ---- notifications

  enqueueNotification(n: NewNotification): Promise<{ id: number; duplicate: boolean }> {
    return notifications.enqueueNotification(this.q, n);
  }

  claimNotifications(owner: string, limit: number, leaseMs: number): Promise<Notification[]> {
    return notifications.claimNotifications(this.q, owner, limit, leaseMs);
  }

  completeNotification(id: number, state: "sent" | "skipped"): Promise<void> {
    return notifications.completeNotification(this.q, id, state);
  }

  deferNotification(id: number, error: string, nextAttemptAt: Date): Promise<void> {
    return notifications.deferNotification(this.q, id, error, nextAttemptAt);
  }

  failNotification(id: number, error: string): Promise<void> {
    return notifications.failNotification(this.q, id, error);
  }

  listNotifications(filter: { jobId?: string; kind?: string; user?: string } = {}): Promise<Notification[]> {
    return notifications.listNotifications(this.q, filter);
  }

  // ---- received faxes (../sql/received.ts)

  keepReceived(f: NewReceivedFax): Promise<{ fax: ReceivedFax; duplicate: boolean }> {
    return received.keepReceived(this.q, f);
  }

  getReceived(id: string): Promise<ReceivedFax | null> {
    return received.getReceived(this.q, id);
  }

  listReceived(filter: ReceivedFilter = {}): Promise<ReceivedFax[]> {
    return received.listReceived(this.q, filter);
  }

  readReceivedDocument(id: string): Promise<Buffer | null> {
    return received.readReceivedDocument(this.q, id);
  }

  changeReceived(id: string, change: ReceivedChange): Promise<ReceivedFax | null> {
    return received.changeReceived(this.q, id, change);
  }

  listReceivedEvents(id: string): Promise<ReceivedEvent[]> {
    return received.listReceivedEvents(this.q, id);
  }

  purgeReceived(olderThanMs: number): Promise<number> {
    return received.purgeReceived(this.q, olderThanMs);
  }

  // ---- key/value and duties

  getState(key: string): Promise<string | null> {
    return kv.getState(this.q, key);
  }

  setState(key: string, value: string): Promise<void> {
    return kv.setState(this.q, key, value);
  }

  // ---- the replay record of signed mail
  useSignedMessage(use: SignedUse): Promise<SignedUseAnswer> {
    return useSignedMessage(this.q, use);
  }

  releaseSignedMessage(claim: string): Promise<void> {
    return releaseSignedMessage(this.q, claim);
  }

  /** A session advisory lock per duty on the duty connection (duties.ts). */
  holdsDuty(duty: string): Promise<boolean> {
    return this.duties.holdsDuty(duty);
  }

  async close(): Promise<void> {
    if (this.ctx.closed) return;
    this.ctx.close();
    await this.duties.close();
    await this.ctx.pool.end().catch(() => undefined);
  }
}
