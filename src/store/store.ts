// The durable queue: one SQLite file (WAL, synchronous=FULL) plus a folder per job for its
// documents. Several processes (daemon, CLI) may open it at once, so every rule that must hold
// across them lives in SQL transactions, never in memory.
import Database from 'better-sqlite3';
import { mkdirSync, promises as fsp, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { systemClock, type Clock } from '../clock.js';
import { FaxgateError } from '../errors.js';
import { silentLogger, type Logger } from '../log/logger.js';
import { fsyncDir } from '../fs/atomic.js';
import { placeFile, safeFileName } from './durable-files.js';
import { newJobId, newSendId } from './job-id.js';
import { deriveJobState, isFinalJobState } from './job-state.js';
import { MIGRATIONS } from './migrations.js';
import { toJob, toNotification, toRecipient, type JobRow, type NotificationRow, type RecipientRow } from './rows.js';
import type { ClaimedGroup, ClaimOptions, FaxResultFields, QueueStore, RecipientKey } from './queue-store.js';
import type {
  Job, JobEvent, JobFilter, JobMeta, JobSource, JobState, NewDocument, NewJob, NewNotification, Notification,
  QueueCounts, Recipient, RecipientState, StoredDocument,
} from './types.js';
import { JOB_STATES, RECIPIENT_STATES } from './types.js';

export interface StoreOptions {
  dataDir: string;
  clock?: Clock;
  logger?: Logger;
  /** How long a dedupeKey is remembered (default 24 h). */
  dedupeWindowMs?: number;
}

const ORPHAN_AGE_MS = 60 * 60 * 1000;
const MAX_CACHED_STATEMENTS = 200;

export class SqliteStore implements QueueStore {
  readonly backend = 'sqlite' as const;
  readonly dataDir: string;
  readonly documentsDir: string;
  private readonly db: Database.Database;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly dedupeWindowMs: number;
  private readonly enqueuedListeners = new Set<(job: Job) => void>();
  /** Compiled statements by their SQL text: every enqueue, claim and poll reuses them. */
  private readonly statements = new Map<string, Database.Statement>();
  private closed = false;

  static open(opts: StoreOptions): SqliteStore {
    return new SqliteStore(opts);
  }

  private constructor(opts: StoreOptions) {
    this.dataDir = path.resolve(opts.dataDir);
    this.documentsDir = path.join(this.dataDir, 'documents');
    this.clock = opts.clock ?? systemClock;
    this.log = opts.logger ?? silentLogger();
    this.dedupeWindowMs = opts.dedupeWindowMs ?? 24 * 60 * 60 * 1000;
    try {
      mkdirSync(this.documentsDir, { recursive: true, mode: 0o750 });
      this.db = new Database(path.join(this.dataDir, 'faxgate.db'));
      this.db.pragma('busy_timeout = 10000');
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      this.db.pragma('foreign_keys = ON');
      this.migrate();
    } catch (err) {
      throw new FaxgateError('STORE_UNAVAILABLE', `the queue store in ${this.dataDir} cannot be opened: ${(err as Error).message}`, { cause: err, temporary: true });
    }
    this.sweepOrphans();
  }

  private migrate(): void {
    // Opening a current store takes no write lock: `faxgate jobs` beside a busy daemon must not
    // make the daemon's commits wait.
    if ((this.db.pragma('user_version', { simple: true }) as number) >= MIGRATIONS.length) return;
    const step = this.db.transaction(() => {
      const version = this.db.pragma('user_version', { simple: true }) as number;
      for (let v = version; v < MIGRATIONS.length; v++) {
        this.db.exec(MIGRATIONS[v]!);
        this.db.pragma(`user_version = ${v + 1}`);
      }
    });
    step.immediate();
  }

  /** Document folders without a job row are leftovers of an enqueue that crashed before its commit. */
  private sweepOrphans(): void {
    const now = this.clock.now();
    let names: string[];
    try {
      names = readdirSync(this.documentsDir);
    } catch {
      return;
    }
    const exists = this.sql('SELECT 1 FROM jobs WHERE id = ?');
    for (const name of names) {
      const dir = path.join(this.documentsDir, name);
      try {
        // Young folders may belong to an enqueue still running in another process.
        if (now - statSync(dir).mtimeMs < ORPHAN_AGE_MS) continue;
        if (exists.get(name)) continue;
        rmSync(dir, { recursive: true, force: true });
        this.log.info({ folder: name }, 'removed orphan document folder');
      } catch {
        // best effort
      }
    }
  }

  /** The compiled statement for `text`, compiled once (SQL built with a LIMIT varies; the cache is bounded). */
  private sql(text: string): Database.Statement {
    let stmt = this.statements.get(text);
    if (!stmt) {
      if (this.statements.size >= MAX_CACHED_STATEMENTS) this.statements.clear();
      stmt = this.db.prepare(text);
      this.statements.set(text, stmt);
    }
    return stmt;
  }

  private now(): string {
    return new Date(this.clock.now()).toISOString();
  }

  // ---------------------------------------------------------------- intake

  async enqueue(input: NewJob): Promise<{ job: Job; duplicate: boolean }> {
    if (input.recipients.length === 0) throw new FaxgateError('NO_DESTINATION', 'a job needs at least one recipient');
    if (input.dedupeKey) {
      const existing = this.findDuplicate(input.dedupeKey);
      if (existing) return { job: existing, duplicate: true };
    }
    const id = newJobId(this.clock.now());
    const dir = path.join(this.documentsDir, id);
    const { documents, original } = await this.placeDocuments(dir, input.documents, input.original);
    const numbers = new Set<string>();
    const recipients = input.recipients.filter((r) => !numbers.has(r.number) && numbers.add(r.number));

    const insert = this.db.transaction((): { job: Job; duplicate: boolean } => {
      if (input.dedupeKey) {
        // Checked again inside the write lock: another process may have won the race.
        const dup = this.findDuplicate(input.dedupeKey);
        if (dup) return { job: dup, duplicate: true };
      }
      const now = this.now();
      this.sql(
        `INSERT INTO jobs (id, source, user, state, cover, documents, original, scheduled_at, tags, dedupe_key, meta, created_at, updated_at)
         VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(id, input.source, input.user, JSON.stringify(input.cover), JSON.stringify(documents), original ? JSON.stringify(original) : null,
        isoUtc(input.scheduledAt), JSON.stringify(input.tags ?? []), input.dedupeKey ?? null, JSON.stringify(input.meta ?? {}), now, now);
      const ins = this.sql(
        `INSERT INTO recipients (job_id, idx, number, name, state, budget_from, created_at, updated_at) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?)`,
      );
      recipients.forEach((r, i) => ins.run(id, i, r.number, r.name ?? null, now, now, now));
      return { job: this.jobById(id)!, duplicate: false };
    });
    let result: { job: Job; duplicate: boolean };
    try {
      result = insert.immediate();
    } catch (err) {
      await fsp.rm(dir, { recursive: true, force: true });
      throw new FaxgateError('STORE_UNAVAILABLE', `the job could not be stored: ${(err as Error).message}`, { cause: err, temporary: true });
    }
    if (result.duplicate) await fsp.rm(dir, { recursive: true, force: true });
    else for (const fn of this.enqueuedListeners) fn(result.job);
    return result;
  }

  /** Called after each new job is committed (not for duplicates): the daemon wakes its dispatcher. */
  onEnqueued(fn: (job: Job) => void): () => void {
    this.enqueuedListeners.add(fn);
    return () => this.enqueuedListeners.delete(fn);
  }

  private findDuplicate(key: string): Job | null {
    const since = new Date(this.clock.now() - this.dedupeWindowMs).toISOString();
    const row = this.sql('SELECT id FROM jobs WHERE dedupe_key = ? AND created_at >= ? ORDER BY created_at DESC LIMIT 1').get(key, since) as { id: string } | undefined;
    return row ? this.jobById(row.id) : null;
  }

  private async placeDocuments(dir: string, docs: NewDocument[], orig?: NewDocument): Promise<{ documents: StoredDocument[]; original: StoredDocument | null }> {
    await fsp.mkdir(dir, { recursive: true, mode: 0o750 });
    try {
      // The files are independent: copy and fsync them at the same time (the fsyncs dominate).
      const place = async (d: NewDocument, dest: string): Promise<StoredDocument> => ({
        path: dest,
        name: d.name,
        contentType: d.contentType,
        bytes: await placeFile(d.path, dest, d.move === true, d.data),
      });
      // allSettled, not all: on a failure no copy may still be writing when the folder is removed.
      const settled = await Promise.allSettled([
        orig ? place(orig, path.join(dir, `00-original-${safeFileName(orig.name, 0).slice(3)}`)) : Promise.resolve(null),
        ...docs.map((d, i) => place(d, path.join(dir, safeFileName(d.name, i + 1)))),
      ]);
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      const [original, ...documents] = settled.map((r) => (r as PromiseFulfilledResult<StoredDocument | null>).value);
      await fsyncDir(dir);
      await fsyncDir(this.documentsDir);
      return { documents: documents as StoredDocument[], original };
    } catch (err) {
      await fsp.rm(dir, { recursive: true, force: true });
      throw new FaxgateError('STORE_UNAVAILABLE', `a document could not be stored: ${(err as Error).message}`, { cause: err, temporary: true });
    }
  }

  async enqueueCorrupt(input: { source: JobSource; user: string; reason: string; original: NewDocument; meta?: JobMeta }): Promise<Job> {
    const id = newJobId(this.clock.now());
    const dir = path.join(this.documentsDir, id);
    const { original } = await this.placeDocuments(dir, [], input.original);
    const insert = this.db.transaction((): Job => {
      const now = this.now();
      this.sql(
        `INSERT INTO jobs (id, source, user, state, cover, documents, original, tags, meta, corrupt_reason, created_at, updated_at, finished_at)
         VALUES (?, ?, ?, 'corrupt', ?, '[]', ?, '[]', ?, ?, ?, ?, ?)`,
      ).run(id, input.source, input.user, JSON.stringify({ enabled: false }), JSON.stringify(original), JSON.stringify(input.meta ?? {}), input.reason, now, now, now);
      this.insertNotification({ kind: 'rejected', user: input.user, jobId: id, dedupeKey: `rejected:${id}`, payload: { jobId: id, reason: input.reason } });
      return this.jobById(id)!;
    });
    try {
      return insert.immediate();
    } catch (err) {
      throw new FaxgateError('STORE_UNAVAILABLE', `the rejected input could not be stored: ${(err as Error).message}`, { cause: err, temporary: true });
    }
  }

  // ---------------------------------------------------------------- reading

  async getJob(id: string): Promise<Job | null> {
    return this.jobById(id);
  }

  /** The job as committed, read inside the caller's transaction. */
  private jobById(id: string): Job | null {
    const row = this.sql('SELECT * FROM jobs WHERE id = ?').get(id) as JobRow | undefined;
    if (!row) return null;
    return toJob(row, this.recipientsOf(id));
  }

  private recipientsOf(jobId: string): Recipient[] {
    return (this.sql('SELECT * FROM recipients WHERE job_id = ? ORDER BY idx').all(jobId) as RecipientRow[]).map(toRecipient);
  }

  private mustGet(id: string): Job {
    const job = this.jobById(id);
    if (!job) throw new FaxgateError('JOB_NOT_FOUND', `no job has the id ${JSON.stringify(id)}`);
    return job;
  }

  async listJobs(filter: JobFilter = {}): Promise<Job[]> {
    const { where, args } = jobWhere(filter);
    const limit = Math.max(1, Math.min(filter.limit ?? 1000, 100_000));
    const offset = Math.max(0, Math.floor(filter.offset ?? 0));
    const rows = this.sql(`SELECT * FROM jobs ${where} ORDER BY created_at DESC, rowid DESC LIMIT ${limit} OFFSET ${offset}`).all(...args) as JobRow[];
    if (rows.length === 0) return [];
    const recs = this.sql(`SELECT * FROM recipients WHERE job_id IN (SELECT value FROM json_each(?)) ORDER BY job_id, idx`).all(JSON.stringify(rows.map((r) => r.id))) as RecipientRow[];
    const byJob = new Map<string, Recipient[]>();
    for (const r of recs) {
      const list = byJob.get(r.job_id) ?? [];
      list.push(toRecipient(r));
      byJob.set(r.job_id, list);
    }
    return rows.map((r) => toJob(r, byJob.get(r.id) ?? []));
  }

  async countJobs(filter: JobFilter = {}): Promise<number> {
    const { where, args } = jobWhere(filter);
    return (this.sql(`SELECT COUNT(*) AS n FROM jobs ${where}`).get(...args) as { n: number }).n;
  }

  async listEvents(_jobId: string): Promise<JobEvent[]> {
    return [];
  }

  async readDocument(doc: StoredDocument): Promise<Buffer> {
    return fsp.readFile(await this.documentPath(doc));
  }

  /** SQLite keeps each document as a file in the job's folder: the path is the file itself. */
  async documentPath(doc: StoredDocument): Promise<string> {
    return doc.path;
  }

  async counts(): Promise<QueueCounts> {
    const jobs = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    for (const r of this.sql('SELECT state, COUNT(*) AS n FROM jobs GROUP BY state').all() as Array<{ state: JobState; n: number }>) jobs[r.state] = r.n;
    const recipients = Object.fromEntries(RECIPIENT_STATES.map((s) => [s, 0])) as Record<RecipientState, number>;
    for (const r of this.sql('SELECT state, COUNT(*) AS n FROM recipients GROUP BY state').all() as Array<{ state: RecipientState; n: number }>) recipients[r.state] = r.n;
    const oldest = this.sql(`SELECT MIN(created_at) AS t FROM jobs WHERE state IN ('queued','active','held')`).get() as { t: string | null };
    const pending = this.sql(`SELECT COUNT(*) AS n FROM notifications WHERE state = 'pending'`).get() as { n: number };
    return {
      jobs,
      recipients,
      oldestActiveAgeSeconds: oldest.t ? Math.max(0, Math.round((this.clock.now() - Date.parse(oldest.t)) / 1000)) : null,
      notificationsPending: pending.n,
    };
  }

  // ---------------------------------------------------------------- job state bookkeeping

  /**
   * Recomputes the job's state column after recipient changes; call inside the same
   * transaction. On the step to a final state, enqueues the outcome notification.
   */
  private refreshJob(jobId: string): void {
    const job = this.sql('SELECT state, user, finals FROM jobs WHERE id = ?').get(jobId) as { state: JobState; user: string; finals: number } | undefined;
    if (!job || job.state === 'corrupt') return;
    const states = (this.sql('SELECT state FROM recipients WHERE job_id = ?').all(jobId) as Array<{ state: RecipientState }>).map((r) => r.state);
    const next = deriveJobState(states);
    const now = this.now();
    if (next === job.state) {
      this.sql('UPDATE jobs SET updated_at = ? WHERE id = ?').run(now, jobId);
      return;
    }
    const becomesFinal = isFinalJobState(next) && !isFinalJobState(job.state);
    this.sql('UPDATE jobs SET state = ?, updated_at = ?, finished_at = ?, finals = finals + ? WHERE id = ?')
      .run(next, now, isFinalJobState(next) ? now : null, becomesFinal ? 1 : 0, jobId);
    if (becomesFinal) {
      // A job finished again after an operator retry gets its own notice.
      const key = job.finals === 0 ? `outcome:${jobId}` : `outcome:${jobId}:${job.finals + 1}`;
      this.insertNotification({ kind: 'outcome', user: job.user, jobId, dedupeKey: key, payload: { jobId } });
    }
  }

  /** Runs `fn` for a recipient in a write transaction and refreshes its job; returns fn's answer. */
  private change<T>(key: RecipientKey, fn: () => T): T {
    return this.db.transaction(() => {
      const out = fn();
      this.refreshJob(key.jobId);
      return out;
    }).immediate();
  }

  // ---------------------------------------------------------------- dispatcher side

  /**
   * Claims due queued/deferred recipients, grouped per job (one send call each), marks them
   * `sending` under a lease with a fresh sendId and commits before any HTTP call is made.
   */
  async claimDue(owner: string, limit: number, leaseMs: number, opts: ClaimOptions = {}): Promise<ClaimedGroup[]> {
    const perNumber = opts.perNumber ?? 1;
    const horizon = opts.scheduleHorizonMs ?? 24 * 60 * 60 * 1000;
    const claim = this.db.transaction((): ClaimedGroup[] => {
      const nowMs = this.clock.now();
      const now = new Date(nowMs).toISOString();
      const rows = this.sql(
        `SELECT r.* FROM recipients r JOIN jobs j ON j.id = r.job_id
         WHERE r.state IN ('queued','deferred') AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?)
           AND (j.scheduled_at IS NULL OR j.scheduled_at <= ?)
           AND (SELECT COUNT(*) FROM recipients x WHERE x.number = r.number AND x.state IN ('sending','unknown','processing')) < ?
         ORDER BY COALESCE(r.next_attempt_at, r.created_at), j.rowid, r.idx
         LIMIT ?`,
      ).all(now, new Date(nowMs + horizon).toISOString(), perNumber, Math.max(limit * 8, 64)) as RecipientRow[];
      const inFlight = new Map<string, number>();
      const countStmt = this.sql(`SELECT COUNT(*) AS n FROM recipients WHERE number = ? AND state IN ('sending','unknown','processing')`);
      const groups = new Map<string, RecipientRow[]>();
      for (const r of rows) {
        if (!groups.has(r.job_id) && groups.size >= limit) continue;
        const busy = inFlight.get(r.number) ?? (countStmt.get(r.number) as { n: number }).n;
        if (busy >= perNumber) continue;
        inFlight.set(r.number, busy + 1);
        const g = groups.get(r.job_id) ?? [];
        g.push(r);
        groups.set(r.job_id, g);
      }
      const until = new Date(nowMs + leaseMs).toISOString();
      const mark = this.sql(
        `UPDATE recipients SET state = 'sending', send_id = ?, locked_by = ?, locked_until = ?, attempts = attempts + 1,
           sent_at = ?, message_id = NULL, last_error = NULL, updated_at = ? WHERE job_id = ? AND idx = ?`,
      );
      const out: ClaimedGroup[] = [];
      for (const [jobId, recs] of groups) {
        const sendId = newSendId(nowMs);
        for (const r of recs) mark.run(sendId, owner, until, now, now, jobId, r.idx);
        this.refreshJob(jobId);
        const job = this.jobById(jobId)!;
        const idxs = new Set(recs.map((r) => r.idx));
        out.push({ job, sendId, recipients: job.recipients.filter((r) => idxs.has(r.idx)) });
      }
      return out;
    });
    return claim.immediate();
  }

  async claimNext(owner: string, leaseMs: number, opts: ClaimOptions = {}): Promise<ClaimedGroup | null> {
    return (await this.claimDue(owner, 1, leaseMs, opts))[0] ?? null;
  }

  /** Keeps the lease of a send that is still running. */
  async extendLease(owner: string, keys: RecipientKey[], leaseMs: number): Promise<void> {
    const until = new Date(this.clock.now() + leaseMs).toISOString();
    const stmt = this.sql(`UPDATE recipients SET locked_until = ? WHERE job_id = ? AND idx = ? AND locked_by = ? AND state = 'sending'`);
    this.db.transaction(() => keys.forEach((k) => stmt.run(until, k.jobId, k.idx, owner))).immediate();
  }

  /**
   * At start (and each pass): a `sending` row whose lease ran out may have reached the service,
   * so it becomes `unknown` (reconciled, never blindly resent); other stale leases are dropped.
   */
  async releaseExpired(opts: { all?: boolean } = {}): Promise<{ unknown: number; released: number }> {
    return this.db.transaction(() => {
      const now = this.now();
      // `all`: the daemon holds the data folder's lock, so every lease is from a run that is gone
      const cutoff = opts.all ? '9999-12-31T23:59:59.999Z' : now;
      const stale = this.sql(`SELECT job_id, idx FROM recipients WHERE state = 'sending' AND locked_until < ?`).all(cutoff) as Array<{ job_id: string; idx: number }>;
      const mark = this.sql(
        `UPDATE recipients SET state = 'unknown', locked_by = NULL, locked_until = NULL, next_attempt_at = NULL,
           last_error = 'the gateway stopped while the send was in progress', updated_at = ? WHERE job_id = ? AND idx = ?`,
      );
      for (const s of stale) mark.run(now, s.job_id, s.idx);
      for (const job of new Set(stale.map((s) => s.job_id))) this.refreshJob(job);
      const r1 = this.sql(`UPDATE recipients SET locked_by = NULL, locked_until = NULL WHERE state != 'sending' AND locked_until IS NOT NULL AND locked_until < ?`).run(cutoff);
      const r2 = this.sql(`UPDATE notifications SET locked_by = NULL, locked_until = NULL WHERE locked_until IS NOT NULL AND locked_until < ?`).run(cutoff);
      return { unknown: stale.length, released: r1.changes + r2.changes };
    }).immediate();
  }

  /** At stop: sends of this owner still running may have gone out, so they become `unknown`. */
  async releaseOwner(owner: string): Promise<number> {
    return this.db.transaction(() => {
      const now = this.now();
      const rows = this.sql(`SELECT job_id, idx FROM recipients WHERE state = 'sending' AND locked_by = ?`).all(owner) as Array<{ job_id: string; idx: number }>;
      this.sql(`UPDATE recipients SET state = 'unknown', locked_by = NULL, locked_until = NULL, last_error = 'the gateway stopped while the send was in progress', updated_at = ? WHERE state = 'sending' AND locked_by = ?`).run(now, owner);
      for (const job of new Set(rows.map((s) => s.job_id))) this.refreshJob(job);
      this.sql(`UPDATE notifications SET locked_by = NULL, locked_until = NULL WHERE locked_by = ?`).run(owner);
      return rows.length;
    }).immediate();
  }

  /** The service accepted the fax (messageId known): now follow it in `processing`. */
  async markAccepted(key: RecipientKey, sendId: string, fields: FaxResultFields & { messageId: string }, apiCalls = 0): Promise<boolean> {
    return this.change(key, () => {
      // apiCalls rides along so a send costs one commit, not two.
      const r = this.sql(
        `UPDATE recipients SET state = 'processing', message_id = ?, locked_by = NULL, locked_until = NULL, next_attempt_at = NULL, last_error = NULL,
           pages = COALESCE(?, pages), pages_count = COALESCE(?, pages_count), api_calls = api_calls + ?, updated_at = ?
         WHERE job_id = ? AND idx = ? AND send_id = ? AND state IN ('sending','unknown')`,
      ).run(fields.messageId, fields.pagesComplete ?? null, fields.pagesCount ?? null, apiCalls, this.now(), key.jobId, key.idx, sendId);
      return r.changes === 1;
    });
  }

  /** The send's outcome is not known: reconcile with the service before anything else. */
  async markUnknown(key: RecipientKey, sendId: string, error: string): Promise<boolean> {
    return this.change(key, () => this.sql(
      `UPDATE recipients SET state = 'unknown', locked_by = NULL, locked_until = NULL, next_attempt_at = NULL, last_error = ?, updated_at = ?
       WHERE job_id = ? AND idx = ? AND send_id = ? AND state IN ('sending','unknown')`,
    ).run(error, this.now(), key.jobId, key.idx, sendId).changes === 1);
  }

  /** Reconciliation could not answer yet: look again no earlier than `nextAttemptAt`. */
  async postponeUnknown(key: RecipientKey, sendId: string, error: string, nextAttemptAt: Date): Promise<boolean> {
    return this.sql(
      `UPDATE recipients SET next_attempt_at = ?, last_error = ?, updated_at = ? WHERE job_id = ? AND idx = ? AND send_id = ? AND state = 'unknown'`,
    ).run(nextAttemptAt.toISOString(), error, this.now(), key.jobId, key.idx, sendId).changes === 1;
  }

  /**
   * Waits for another try. `expect` guards against a stale caller: the row must still be in
   * one of those states (and carry `sendId` when given). `faxTry` counts a failed fax result.
   */
  async defer(key: RecipientKey, opts: { error: string; nextAttemptAt: Date; sendId?: string; faxTry?: boolean; refundAttempt?: boolean; expect?: RecipientState[] }): Promise<boolean> {
    const expect = opts.expect ?? ['sending', 'unknown', 'processing'];
    return this.change(key, () => this.sql(
      `UPDATE recipients SET state = 'deferred', next_attempt_at = ?, last_error = ?, locked_by = NULL, locked_until = NULL,
         fax_tries = fax_tries + ?, attempts = MAX(0, attempts - ?), updated_at = ?
       WHERE job_id = ? AND idx = ? AND state IN (SELECT value FROM json_each(?)) AND (? IS NULL OR send_id = ?)`,
    ).run(opts.nextAttemptAt.toISOString(), opts.error, opts.faxTry ? 1 : 0, opts.refundAttempt ? 1 : 0, this.now(), key.jobId, key.idx,
      JSON.stringify(expect), opts.sendId ?? null, opts.sendId ?? null).changes === 1);
  }

  /** Gives up on the recipient with the reason people will read. */
  async fail(key: RecipientKey, opts: { reason: string; fields?: FaxResultFields; sendId?: string; expect?: RecipientState[] }): Promise<boolean> {
    const expect = opts.expect ?? ['sending', 'unknown', 'processing', 'deferred', 'queued'];
    const f = opts.fields ?? {};
    return this.change(key, () => this.sql(
      `UPDATE recipients SET state = 'failed', last_error = ?, locked_by = NULL, locked_until = NULL, next_attempt_at = NULL,
         result_code = COALESCE(?, result_code), result_info = COALESCE(?, result_info), error_code = COALESCE(?, error_code), error_info = COALESCE(?, error_info),
         pages = COALESCE(?, pages), pages_count = COALESCE(?, pages_count), duration = COALESCE(?, duration), fax_attempt = COALESCE(?, fax_attempt),
         finished_at = ?, updated_at = ?
       WHERE job_id = ? AND idx = ? AND state IN (SELECT value FROM json_each(?)) AND (? IS NULL OR send_id = ?)`,
    ).run(opts.reason, f.resultCode ?? null, f.resultInfo ?? null, f.errorCode ?? null, f.errorInfo ?? null, f.pagesComplete ?? null, f.pagesCount ?? null,
      f.duration ?? null, f.faxAttempt ?? null, this.now(), this.now(), key.jobId, key.idx,
      JSON.stringify(expect), opts.sendId ?? null, opts.sendId ?? null).changes === 1);
  }

  /** The service reports the fax delivered. */
  async complete(key: RecipientKey, fields: FaxResultFields): Promise<boolean> {
    return this.change(key, () => this.sql(
      `UPDATE recipients SET state = 'delivered', last_error = NULL, locked_by = NULL, locked_until = NULL, next_attempt_at = NULL,
         message_id = COALESCE(?, message_id), result_code = ?, result_info = ?, error_code = ?, error_info = ?,
         pages = COALESCE(?, pages), pages_count = COALESCE(?, pages_count), duration = COALESCE(?, duration), fax_attempt = COALESCE(?, fax_attempt),
         finished_at = ?, updated_at = ?
       WHERE job_id = ? AND idx = ? AND state IN ('processing','unknown','sending')`,
    ).run(fields.messageId ?? null, fields.resultCode ?? null, fields.resultInfo ?? null, fields.errorCode ?? null, fields.errorInfo ?? null,
      fields.pagesComplete ?? null, fields.pagesCount ?? null, fields.duration ?? null, fields.faxAttempt ?? null, this.now(), this.now(), key.jobId, key.idx).changes === 1);
  }

  /** Progress of a fax still at the service (pages so far, attempt number). */
  async recordProgress(key: RecipientKey, fields: FaxResultFields): Promise<void> {
    this.sql(
      `UPDATE recipients SET pages = COALESCE(?, pages), pages_count = COALESCE(?, pages_count), fax_attempt = COALESCE(?, fax_attempt), updated_at = ?
       WHERE job_id = ? AND idx = ? AND state = 'processing'`,
    ).run(fields.pagesComplete ?? null, fields.pagesCount ?? null, fields.faxAttempt ?? null, this.now(), key.jobId, key.idx);
  }

  /** Adds API calls spent on recipients (a batched call is shared out among them). */
  async addApiCalls(keys: RecipientKey[], calls: number): Promise<void> {
    if (keys.length === 0 || calls === 0) return;
    const share = calls / keys.length;
    const stmt = this.sql('UPDATE recipients SET api_calls = api_calls + ? WHERE job_id = ? AND idx = ?');
    this.db.transaction(() => keys.forEach((k) => stmt.run(share, k.jobId, k.idx))).immediate();
  }

  /** Faxes accepted by the service and not finished, with their job's user. */
  async listProcessing(limit = 100_000): Promise<Array<Recipient & { user: string }>> {
    return (this.sql(
      `SELECT r.*, j.user AS user FROM recipients r JOIN jobs j ON j.id = r.job_id WHERE r.state = 'processing' ORDER BY r.sent_at LIMIT ?`,
    ).all(limit) as Array<RecipientRow & { user: string }>).map((r) => ({ ...toRecipient(r), user: r.user }));
  }

  /** Unknown sends that were made before `sentBefore` and are due for reconciliation. */
  async listUnknown(sentBefore: Date, limit = 10_000): Promise<Array<Recipient & { user: string }>> {
    const now = this.now();
    return (this.sql(
      `SELECT r.*, j.user AS user FROM recipients r JOIN jobs j ON j.id = r.job_id
       WHERE r.state = 'unknown' AND (r.sent_at IS NULL OR r.sent_at <= ?) AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?)
       ORDER BY r.sent_at LIMIT ?`,
    ).all(sentBefore.toISOString(), now, limit) as Array<RecipientRow & { user: string }>).map((r) => ({ ...toRecipient(r), user: r.user }));
  }

  /** Whether any recipient already tracks this service messageId (reconciliation must not adopt it twice). */
  async isKnownMessage(messageId: string): Promise<boolean> {
    return this.sql('SELECT 1 FROM recipients WHERE message_id = ? LIMIT 1').get(messageId) !== undefined;
  }

  /** Makes `user`'s deferred recipients whose error starts with `errorPrefix` due now (a key hold ended). */
  async wakeDeferred(user: string, errorPrefix: string): Promise<number> {
    return this.sql(
      `UPDATE recipients SET next_attempt_at = ?, updated_at = ?
       WHERE state = 'deferred' AND substr(last_error, 1, ?) = ? AND job_id IN (SELECT id FROM jobs WHERE user = ?)`,
    ).run(this.now(), this.now(), errorPrefix.length, errorPrefix, user).changes;
  }

  /** When the next deferred/queued recipient becomes due, for the dispatcher's sleep. */
  async nextDueAt(): Promise<string | null> {
    const r = this.sql(`SELECT MIN(next_attempt_at) AS t FROM recipients WHERE state IN ('deferred','unknown') AND next_attempt_at IS NOT NULL`).get() as { t: string | null };
    return r.t;
  }

  // ---------------------------------------------------------------- operators

  async retry(id: string): Promise<Job> {
    const job = this.mustGet(id);
    if (job.state === 'corrupt') throw new FaxgateError('JOB_STATE', `job ${id} is corrupt: its input could not be read, there is nothing to send`);
    const targets = job.recipients.filter((r) => r.state === 'failed' || r.state === 'cancelled');
    if (targets.length === 0) throw new FaxgateError('JOB_STATE', `job ${id} is ${job.state}: only failed or cancelled recipients can be retried`);
    this.db.transaction(() => {
      const now = this.now();
      this.sql(
        `UPDATE recipients SET state = 'queued', attempts = 0, fax_tries = 0, budget_from = ?, next_attempt_at = NULL, last_error = NULL,
           message_id = NULL, send_id = NULL, result_code = NULL, result_info = NULL, error_code = NULL, error_info = NULL,
           pages = NULL, pages_count = NULL, duration = NULL, fax_attempt = NULL, sent_at = NULL, finished_at = NULL, updated_at = ?
         WHERE job_id = ? AND state IN ('failed','cancelled')`,
      ).run(now, now, id);
      this.refreshJob(id);
    }).immediate();
    return this.mustGet(id);
  }

  async cancel(id: string): Promise<Job> {
    return this.operate(id, ['queued', 'deferred', 'held'], 'cancelled', 'only queued, deferred or held recipients can be cancelled (in-flight faxes finish)');
  }

  async hold(id: string): Promise<Job> {
    return this.operate(id, ['queued', 'deferred'], 'held', 'only queued or deferred recipients can be held');
  }

  async release(id: string): Promise<Job> {
    return this.operate(id, ['held'], 'queued', 'it has no held recipients');
  }

  private operate(id: string, from: RecipientState[], to: RecipientState, refusal: string): Job {
    const job = this.mustGet(id);
    if (job.state === 'corrupt') throw new FaxgateError('JOB_STATE', `job ${id} is corrupt: ${refusal}`);
    const changed = this.db.transaction(() => {
      const now = this.now();
      const r = this.sql(
        `UPDATE recipients SET state = ?, next_attempt_at = CASE WHEN ? = 'queued' THEN NULL ELSE next_attempt_at END,
           finished_at = CASE WHEN ? = 'cancelled' THEN ? ELSE finished_at END, updated_at = ?
         WHERE job_id = ? AND state IN (SELECT value FROM json_each(?))`,
      ).run(to, to, to, now, now, id, JSON.stringify(from));
      if (r.changes > 0) this.refreshJob(id);
      return r.changes;
    }).immediate();
    if (changed === 0) throw new FaxgateError('JOB_STATE', `job ${id} is ${job.state}: ${refusal}`);
    return this.mustGet(id);
  }

  async purge(olderThanMs: number): Promise<number> {
    const cutoff = new Date(this.clock.now() - olderThanMs).toISOString();
    const ids = (this.sql(
      `SELECT id FROM jobs j WHERE state IN ('delivered','failed','partial','cancelled','corrupt') AND finished_at IS NOT NULL AND finished_at < ?
         AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.job_id = j.id AND n.state = 'pending')`,
    ).all(cutoff) as Array<{ id: string }>).map((r) => r.id);
    if (ids.length === 0) return 0;
    // Jobs whose notice is still pending stay: the notifier reads them.
    // Rows go first, folders after: a crash in between leaves orphan folders (swept at open),
    // never a row pointing at missing files.
    this.db.transaction(() => {
      const list = JSON.stringify(ids);
      this.sql(`DELETE FROM notifications WHERE job_id IN (SELECT value FROM json_each(?)) AND state != 'pending'`).run(list);
      this.sql(`DELETE FROM recipients WHERE job_id IN (SELECT value FROM json_each(?))`).run(list);
      this.sql(`DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?))`).run(list);
    }).immediate();
    for (const id of ids) rmSync(path.join(this.documentsDir, id), { recursive: true, force: true });
    this.log.info({ jobs: ids.length, cutoff }, 'purged finished jobs');
    return ids.length;
  }

  // ---------------------------------------------------------------- notifications

  private insertNotification(n: NewNotification): { id: number; duplicate: boolean } {
    const now = this.now();
    const r = this.sql(
      `INSERT INTO notifications (kind, user, job_id, dedupe_key, payload, state, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT(dedupe_key) DO NOTHING`,
    ).run(n.kind, n.user, n.jobId ?? null, n.dedupeKey, JSON.stringify(n.payload), now, now);
    if (r.changes === 1) return { id: Number(r.lastInsertRowid), duplicate: false };
    const existing = this.sql('SELECT id FROM notifications WHERE dedupe_key = ?').get(n.dedupeKey) as { id: number };
    return { id: existing.id, duplicate: true };
  }

  async enqueueNotification(n: NewNotification): Promise<{ id: number; duplicate: boolean }> {
    return this.db.transaction(() => this.insertNotification(n)).immediate();
  }

  async claimNotifications(owner: string, limit: number, leaseMs: number): Promise<Notification[]> {
    return this.db.transaction(() => {
      const nowMs = this.clock.now();
      const now = new Date(nowMs).toISOString();
      const rows = this.sql(
        `SELECT * FROM notifications WHERE state = 'pending' AND next_attempt_at <= ? AND (locked_until IS NULL OR locked_until < ?) ORDER BY next_attempt_at, id LIMIT ?`,
      ).all(now, now, limit) as NotificationRow[];
      const mark = this.sql('UPDATE notifications SET locked_by = ?, locked_until = ?, attempts = attempts + 1 WHERE id = ?');
      const until = new Date(nowMs + leaseMs).toISOString();
      for (const r of rows) mark.run(owner, until, r.id);
      return rows.map((r) => toNotification({ ...r, attempts: r.attempts + 1 }));
    }).immediate();
  }

  async completeNotification(id: number, state: 'sent' | 'skipped'): Promise<void> {
    this.sql(`UPDATE notifications SET state = ?, sent_at = ?, locked_by = NULL, locked_until = NULL, last_error = NULL WHERE id = ?`).run(state, this.now(), id);
  }

  async deferNotification(id: number, error: string, nextAttemptAt: Date): Promise<void> {
    this.sql(`UPDATE notifications SET next_attempt_at = ?, last_error = ?, locked_by = NULL, locked_until = NULL WHERE id = ?`).run(nextAttemptAt.toISOString(), error, id);
  }

  async failNotification(id: number, error: string): Promise<void> {
    this.sql(`UPDATE notifications SET state = 'failed', last_error = ?, locked_by = NULL, locked_until = NULL WHERE id = ?`).run(error, id);
  }

  /** For tests and operators: notifications, newest first. */
  async listNotifications(filter: { jobId?: string; kind?: string } = {}): Promise<Notification[]> {
    const rows = this.sql(
      `SELECT * FROM notifications WHERE (? IS NULL OR job_id = ?) AND (? IS NULL OR kind = ?) ORDER BY id DESC`,
    ).all(filter.jobId ?? null, filter.jobId ?? null, filter.kind ?? null, filter.kind ?? null) as NotificationRow[];
    return rows.map(toNotification);
  }

  // ---------------------------------------------------------------- key/value

  async getState(key: string): Promise<string | null> {
    const r = this.sql('SELECT value FROM kv WHERE key = ?').get(key) as { value: string } | undefined;
    return r ? r.value : null;
  }

  async setState(key: string, value: string): Promise<void> {
    this.sql('INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  /** The daemon lock already makes this process the only one on this queue. */
  async holdsDuty(_duty: string): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}

/** Times are compared as text in SQL: "…T10:00:00+01:00" must be stored as "…T09:00:00.000Z". */
function isoUtc(at: string | null | undefined): string | null {
  if (!at) return null;
  const t = Date.parse(at);
  return Number.isNaN(t) ? at : new Date(t).toISOString();
}

/** The WHERE clause of a job list or count (the same filter for both, so paging adds up). */
function jobWhere(filter: JobFilter): { where: string; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  if (filter.state) (where.push('state = ?'), args.push(filter.state));
  if (filter.user) (where.push('user = ?'), args.push(filter.user));
  if (filter.source) (where.push('source = ?'), args.push(filter.source));
  if (filter.updatedSince) (where.push('updated_at >= ?'), args.push(isoUtc(filter.updatedSince)));
  if (filter.search) {
    // LIKE is case-insensitive for ASCII in SQLite; instr on lower() covers the rest of the words people type.
    const needle = filter.search.toLowerCase();
    where.push(`(instr(lower(COALESCE(json_extract(meta, '$.origin.subject'), '')), ?) > 0
      OR instr(lower(COALESCE(json_extract(cover, '$.subject'), '')), ?) > 0
      OR EXISTS (SELECT 1 FROM recipients r WHERE r.job_id = jobs.id AND (instr(lower(r.number), ?) > 0 OR instr(lower(COALESCE(r.name, '')), ?) > 0)))`);
    args.push(needle, needle, needle, needle);
  }
  return { where: where.length ? 'WHERE ' + where.join(' AND ') : '', args };
}
