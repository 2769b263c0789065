// The durable queue on one box: one SQLite file (WAL, synchronous=FULL; intake's commits are
// made on a thread of their own and flushed in groups, see intake-writer.ts) plus a folder per job
// for its documents. Several processes (daemon, CLI) may open it at once, so every rule that must
// hold across them lives in SQL transactions, never in memory. This class is the thin facade of
// QueueStore over the operations written once for both stores (../sql/, on the port sqlite-db.ts)
// and SQLite's own part: documents as files and intake's commits (enqueue.ts); the connection,
// flushes and threads it wires come from small factories (open-database.ts, disk-syncs.ts,
// context.ts).
import type Database from "better-sqlite3";
import { promises as fsp, readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { systemClock, type Clock } from "../../clock.js";
import { FaxgateError } from "../../errors.js";
import { tempNameFor, type GroupSync } from "../../fs/index.js";
import { silentLogger, type Logger } from "../../log/index.js";
import type {
  ClaimedGroup,
  ClaimOptions,
  FaxResultFields,
  OperatorStep,
  OwnerWait,
  QueueStore,
  RecipientFilter,
  RecipientKey,
} from "../queue-store.js";
import type {
  CoverSpec,
  NewRecipient,
  Job,
  JobEvent,
  JobFilter,
  JobMeta,
  JobSource,
  NewDocument,
  NewJob,
  NewNotification,
  Notification,
  QueueCounts,
  Recipient,
  RecipientState,
  StoredDocument,
} from "../types.js";
import { Checkpointer } from "./checkpointer.js";
import { createContext, intakeWriter, type SqliteContext, statementCache } from "./context.js";
import { diskSyncs } from "./disk-syncs.js";
import type { IntakeWriter } from "./intake-writer.js";
import { openDatabase } from "./open-database.js";
import * as enq from "./enqueue.js";
import * as kv from "../sql/kv.js";
import * as ops from "../sql/operator.js";
import type { RetentionPort } from "../queue-store.js";
import * as reads from "../sql/read.js";
import * as steps from "../sql/transitions.js";
import * as notes from "../sql/notifications.js";
import { releaseSignedMessage, type SignedUse, type SignedUseAnswer, useSignedMessage } from "../signed-uses.js";
import { readWhole } from "../spliced-original.js";
import { SqliteDb } from "./sqlite-db.js";
import type { Db } from "../sql/db.js";
import type { JobLedgerRows } from "../sql/ledger.js";
import * as leases from "../sql/leases.js";
import * as waiting from "../sql/waiting.js";
import * as received from "../sql/received.js";
import type { ReceivedChange, ReceivedFilter } from "../received.js";
import type { NewReceivedFax, ReceivedEvent, ReceivedFax } from "../../received/index.js";

export interface StoreOptions {
  dataDir: string;
  clock?: Clock;
  logger?: Logger;
  /** How long a dedupeKey is remembered (default 24 h). */
  dedupeWindowMs?: number;
  /**
   * Start the store's threads at once (the daemon), the WAL checkpoints' (checkpointer.ts) and
   * intake's commits' (intake-writer.ts), rather than when first needed.
   */
  threadsNow?: boolean;
}

/** Jobs are handed out as stored: their documents' paths are this data folder's. */
const same = (job: Job): Job => job;

const ORPHAN_AGE_MS = 60 * 60 * 1000;

export class SqliteStore implements QueueStore {
  readonly backend = "sqlite" as const;
  readonly dataDir: string;
  readonly documentsDir: string;
  private readonly db: Database.Database;
  private readonly c: SqliteContext;
  /** The query layer's port (../sql/db.ts): the operations written once for both stores run on it. */
  private readonly q: SqliteDb;
  private readonly enqueuedListeners = new Set<(job: Job) => void>();
  private closed = false;
  private syncs: GroupSync[] = [];
  private readonly checkpoints: Checkpointer;
  private readonly writer: IntakeWriter;

  readonly fleetPool = null;

  get sql(): Db {
    return this.q;
  }

  static open(opts: StoreOptions): SqliteStore {
    return new SqliteStore(opts);
  }

  private constructor(opts: StoreOptions) {
    this.dataDir = path.resolve(opts.dataDir);
    this.documentsDir = path.join(this.dataDir, "documents");
    const log = opts.logger ?? silentLogger();
    this.db = openDatabase(this.dataDir, this.documentsDir);
    const dbFile = path.join(this.dataDir, "faxgate.db");
    const sql = statementCache(this.db);
    const syncs = diskSyncs(this.dataDir, this.documentsDir);
    this.syncs = [syncs.wal, syncs.documents, syncs.dataDir];
    // WAL checkpoints on a thread of their own, not inside the main thread's commits (checkpointer.ts)
    this.checkpoints = new Checkpointer(this.db, dbFile, log);
    this.writer = intakeWriter(this.db, dbFile, log, sql);
    this.checkpoints.beforeRestart(() => this.writer.quiet());
    if (opts.threadsNow) {
      this.checkpoints.start();
      this.writer.start();
    }
    this.c = createContext({
      clock: opts.clock ?? systemClock,
      log,
      dataDir: this.dataDir,
      documentsDir: this.documentsDir,
      dedupeWindowMs: opts.dedupeWindowMs ?? 24 * 60 * 60 * 1000,
      checkpoints: this.checkpoints,
      writer: this.writer,
      syncs,
    });
    this.q = new SqliteDb(this.db, sql, this.c.clock, (blobBytes) => this.checkpoints.committed(blobBytes));
    this.sweepOrphans(sql);
  }

  /** Document folders without a job row are leftovers of an enqueue that crashed before its commit. */
  private sweepOrphans(sql: (text: string) => Database.Statement): void {
    const now = this.c.clock.now();
    let names: string[];
    try {
      names = readdirSync(this.documentsDir);
    } catch {
      return;
    }
    const exists = sql("SELECT 1 FROM jobs WHERE id = ?");
    for (const name of names) {
      const dir = path.join(this.documentsDir, name);
      try {
        // Young folders may belong to an enqueue still running in another process.
        if (now - statSync(dir).mtimeMs < ORPHAN_AGE_MS) continue;
        if (exists.get(name)) continue;
        rmSync(dir, { recursive: true, force: true });
        this.c.log.info({ folder: name }, "removed orphan document folder");
      } catch {
        // best effort
      }
    }
  }

  // ---- intake
  async enqueue(input: NewJob, ledger?: JobLedgerRows): Promise<{ job: Job; duplicate: boolean }> {
    const result = await enq.enqueue(this.c, this.q, input, ledger);
    if (!result.duplicate) for (const fn of this.enqueuedListeners) fn(result.job);
    return result;
  }

  async enqueueCorrupt(input: {
    source: JobSource;
    user: string;
    reason: string;
    original: NewDocument;
    meta?: JobMeta;
  }): Promise<Job> {
    return enq.enqueueCorrupt(this.c, this.q, input);
  }

  /** Called after each new job is committed (not for duplicates): the daemon wakes its dispatcher. */
  onEnqueued(fn: (job: Job) => void): () => void {
    this.enqueuedListeners.add(fn);
    return () => this.enqueuedListeners.delete(fn);
  }

  // ---- reading
  async getJob(id: string): Promise<Job | null> {
    return reads.jobById(this.q, same, id);
  }

  async listJobs(filter: JobFilter = {}): Promise<Job[]> {
    return reads.listJobs(this.q, same, filter);
  }

  async countJobs(filter: JobFilter = {}): Promise<number> {
    return reads.countJobs(this.q, filter);
  }

  async counts(): Promise<QueueCounts> {
    return reads.counts(this.q);
  }

  async listEvents(jobId: string): Promise<JobEvent[]> {
    return reads.listEvents(this.q, jobId);
  }

  async readDocument(doc: StoredDocument): Promise<Buffer> {
    return (await this.inlineData(doc)) ?? fsp.readFile(doc.path);
  }

  /**
   * A document is a file in the job's folder, or (small, types.ts SMALL_DOCUMENT_BYTES) a row of
   * document_data: that one is written out to its path for whoever reads files (the sender), each
   * time it is asked for. Not fsynced: the database holds it, and a copy a crash spoiled is
   * written again by the next ask.
   */
  jobFilesDir(jobId: string): string {
    return path.join(this.documentsDir, jobId);
  }

  async documentPath(doc: StoredDocument): Promise<string> {
    const data = await this.inlineData(doc);
    if (!data) return doc.path;
    await fsp.mkdir(path.dirname(doc.path), { recursive: true, mode: 0o750 });
    // under a temp name, then renamed: a reader of the path never sees half of it
    const tmp = tempNameFor(doc.path);
    try {
      await fsp.writeFile(tmp, data, { flag: "wx", mode: 0o640 });
      await fsp.rename(tmp, doc.path);
    } catch (err) {
      await fsp.unlink(tmp).catch(() => undefined);
      throw new FaxgateError(
        "STORE_UNAVAILABLE",
        `the document ${JSON.stringify(doc.name)} could not be written out: ${(err as Error).message}`,
        { cause: err, temporary: true },
      );
    }
    return doc.path;
  }

  /** The bytes of a document kept in the database, or null for one kept as a file. */
  private inlineData(doc: StoredDocument): Promise<Buffer | null> {
    const jobId = path.basename(path.dirname(doc.path));
    // an original may be kept without its documents' base64 (../spliced-original.ts)
    return readWhole(doc, (file) => this.inlineRow(jobId, file));
  }

  private async inlineRow(jobId: string, file: string): Promise<Buffer | null> {
    const row = await this.q.get<{ data: Buffer }>("SELECT data FROM document_data WHERE job_id = ? AND file = ?", [
      jobId,
      file,
    ]);
    return row ? row.data : null;
  }

  // ---- dispatcher
  async claimDue(owner: string, limit: number, leaseMs: number, opts: ClaimOptions = {}): Promise<ClaimedGroup[]> {
    const groups = await leases.claimDue(this.q, same, owner, limit, leaseMs, opts);
    // nothing is sent on a claim the disk may not hold (context.ts stillWritable)
    if (groups.length > 0) await this.c.stillWritable();
    return groups;
  }

  async extendLease(owner: string, keys: RecipientKey[], leaseMs: number): Promise<void> {
    return leases.extendLease(this.q, owner, keys, leaseMs);
  }

  async releaseExpired(opts: { all?: boolean } = {}): Promise<{ unknown: number; released: number }> {
    return leases.releaseExpired(this.q, opts);
  }

  async releaseOwner(owner: string): Promise<number> {
    return leases.releaseOwner(this.q, owner);
  }

  async markCallLeaving(owner: string, sendId: string, keys: RecipientKey[]): Promise<boolean> {
    return leases.markCallLeaving(this.q, owner, sendId, keys);
  }

  async markAccepted(
    key: RecipientKey,
    sendId: string,
    fields: FaxResultFields & { messageId: string },
    apiCalls = 0,
  ): Promise<boolean> {
    return steps.markAccepted(this.q, key, sendId, fields, apiCalls);
  }

  async markUnknown(key: RecipientKey, sendId: string, error: string): Promise<boolean> {
    return steps.markUnknown(this.q, key, sendId, error);
  }

  async postponeUnknown(key: RecipientKey, sendId: string, error: string, nextAttemptAt: Date): Promise<boolean> {
    return steps.postponeUnknown(this.q, key, sendId, error, nextAttemptAt);
  }

  async defer(
    key: RecipientKey,
    opts: {
      error: string;
      nextAttemptAt: Date;
      sendId?: string;
      faxTry?: boolean;
      refundAttempt?: boolean;
      expect?: RecipientState[];
    },
  ): Promise<boolean> {
    return steps.defer(this.q, key, opts);
  }

  async fail(
    key: RecipientKey,
    opts: { reason: string; fields?: FaxResultFields; sendId?: string; expect?: RecipientState[] },
  ): Promise<boolean> {
    return steps.fail(this.q, key, opts);
  }

  async complete(key: RecipientKey, fields: FaxResultFields): Promise<boolean> {
    return steps.complete(this.q, key, fields);
  }

  async recordProgress(key: RecipientKey, fields: FaxResultFields): Promise<void> {
    return steps.recordProgress(this.q, key, fields);
  }

  async addApiCalls(keys: RecipientKey[], calls: number): Promise<void> {
    return steps.addApiCalls(this.q, keys, calls);
  }

  async listRecipients(filter: RecipientFilter): Promise<Array<Recipient & { user: string }>> {
    return reads.listRecipients(this.q, filter);
  }

  async isKnownMessage(messageId: string): Promise<boolean> {
    return reads.isKnownMessage(this.q, messageId);
  }

  async wakeDeferred(user: string, errorPrefix: string): Promise<number> {
    return steps.wakeDeferred(this.q, user, errorPrefix);
  }

  async nextDueAt(): Promise<string | null> {
    return reads.nextDueAt(this.q);
  }

  // ---- operators
  async operate(id: string, step: OperatorStep, by?: string): Promise<Job> {
    return ops.operate(this.q, same, id, step, by);
  }

  fleetDb(): Db | null {
    return null;
  }

  retentionPort(): RetentionPort {
    return {
      db: this.q,
      removeJobFiles: (id) => fsp.rm(path.join(this.documentsDir, id), { recursive: true, force: true }),
    };
  }

  async purge(olderThanMs: number): Promise<number> {
    const { purged, cutoff } = await ops.purge(this.q, olderThanMs, (id) =>
      fsp.rm(path.join(this.documentsDir, id), { recursive: true, force: true }),
    );
    if (purged > 0) this.c.log.info({ jobs: purged, cutoff }, "purged finished jobs");
    return purged;
  }

  async address(id: string, input: { recipients: NewRecipient[]; cover: CoverSpec }): Promise<Job> {
    const job = await waiting.address(this.q, same, id, input);
    // newly sendable, as a new job is
    for (const fn of this.enqueuedListeners) fn(job);
    return job;
  }

  async expireWaiting(what: OwnerWait, before: Date, reason: string): Promise<Job[]> {
    return waiting.expireWaitingFor(this.q, same, what, before, reason);
  }

  async faxedNumbers(user: string, numbers: readonly string[]): Promise<string[]> {
    return waiting.faxedNumbers(this.q, user, numbers);
  }

  async confirm(id: string, by: string): Promise<{ job: Job; moved: number }> {
    const out = await waiting.confirm(this.q, same, id, by);
    // newly sendable, as a new job is
    if (out.moved > 0) for (const fn of this.enqueuedListeners) fn(out.job);
    return out;
  }

  // ---- notifications
  async enqueueNotification(n: NewNotification): Promise<{ id: number; duplicate: boolean }> {
    return notes.enqueueNotification(this.q, n);
  }

  async claimNotifications(owner: string, limit: number, leaseMs: number): Promise<Notification[]> {
    return notes.claimNotifications(this.q, owner, limit, leaseMs);
  }

  async completeNotification(id: number, state: "sent" | "skipped"): Promise<void> {
    return notes.completeNotification(this.q, id, state);
  }

  async deferNotification(id: number, error: string, nextAttemptAt: Date): Promise<void> {
    return notes.deferNotification(this.q, id, error, nextAttemptAt);
  }

  async failNotification(id: number, error: string): Promise<void> {
    return notes.failNotification(this.q, id, error);
  }

  async listNotifications(filter: { jobId?: string; kind?: string; user?: string } = {}): Promise<Notification[]> {
    return notes.listNotifications(this.q, filter);
  }

  // ---- received faxes (../sql/received.ts)
  async keepReceived(f: NewReceivedFax): Promise<{ fax: ReceivedFax; duplicate: boolean }> {
    return received.keepReceived(this.q, f);
  }

  async getReceived(id: string): Promise<ReceivedFax | null> {
    return received.getReceived(this.q, id);
  }

  async listReceived(filter: ReceivedFilter = {}): Promise<ReceivedFax[]> {
    return received.listReceived(this.q, filter);
  }

  async readReceivedDocument(id: string): Promise<Buffer | null> {
    return received.readReceivedDocument(this.q, id);
  }

  async changeReceived(id: string, change: ReceivedChange): Promise<ReceivedFax | null> {
    return received.changeReceived(this.q, id, change);
  }

  async listReceivedEvents(id: string): Promise<ReceivedEvent[]> {
    return received.listReceivedEvents(this.q, id);
  }

  async purgeReceived(olderThanMs: number): Promise<number> {
    return received.purgeReceived(this.q, olderThanMs);
  }

  // ---- key/value
  async getState(key: string): Promise<string | null> {
    return kv.getState(this.q, key);
  }

  async setState(key: string, value: string): Promise<void> {
    return kv.setState(this.q, key, value);
  }

  // ---- the replay record of signed mail
  async useSignedMessage(use: SignedUse): Promise<SignedUseAnswer> {
    return useSignedMessage(this.q, use);
  }

  async releaseSignedMessage(claim: string): Promise<void> {
    return releaseSignedMessage(this.q, claim);
  }

  /** The daemon lock already makes this process the only one on this queue. */
  async holdsDuty(_duty: string): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // intake's last commits answered before either thread goes
    await this.writer.close();
    const stopping = this.checkpoints.close();
    if (stopping) await stopping;
    this.db.close();
    await Promise.all(this.syncs.map((s) => s.close()));
  }
}
