// The durable queue on PostgreSQL, for several gateways sharing one queue. Same semantics as the
// SQLite store (store.ts): the same transition table, the same derived job state and outcome
// notice, the same dedupe window, leases and purge rules. What differs is what several instances
// need: claims take rows with FOR UPDATE SKIP LOCKED and lock each destination number
// (pg_advisory_xact_lock) before counting its faxes in flight, so one fax per number is in flight
// across all instances; documents live in the database (bytea), with a cached copy per instance;
// leases only ever expire by time; duties are session advisory locks.
import { randomUUID } from "node:crypto";
import { promises as fsp, readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { systemClock, type Clock } from "../../clock.js";
import { FaxgateError } from "../../errors.js";
import { replaceFile } from "../../fs/atomic.js";
import { silentLogger, type Logger } from "../../log/logger.js";
import { safeFileName } from "../durable-files.js";
import { newJobId, newSendId } from "../job-id.js";
import { deriveJobState, isFinalJobState } from "../job-state.js";
import type { ClaimedGroup, ClaimOptions, FaxResultFields, QueueStore, RecipientKey } from "../queue-store.js";
import { toJob, toNotification, toRecipient, type JobRow, type NotificationRow, type RecipientRow } from "../rows.js";
import {
  CANCEL_REFUSAL,
  FINAL_JOB_STATES,
  fromStates,
  IN_FLIGHT_STATES,
  NEEDS_ADDRESS,
  OPEN_JOB_STATES,
  RETRY_REFUSAL,
  TRANSITIONS,
  type TransitionName,
} from "../transitions.js";
import type {
  CoverSpec,
  NewRecipient,
  Job,
  JobEvent,
  JobFilter,
  JobMeta,
  JobSource,
  JobState,
  NewDocument,
  NewJob,
  NewNotification,
  Notification,
  QueueCounts,
  Recipient,
  RecipientState,
  StoredDocument,
} from "../types.js";
import { JOB_STATES, RECIPIENT_STATES, SOURCE_WORDS } from "../types.js";
import { isRetryable, redactDatabaseUrl, storeError } from "./connection.js";
import { PG_MIGRATIONS } from "./schema.js";
import * as received from "./received.js";
import type { NewReceivedFax, ReceivedChange, ReceivedEvent, ReceivedFax, ReceivedFilter } from "../received.js";
import { refuseControlCharacters } from "../text-input.js";
import { sqlParkedGuard } from "../transition-sql.js";

export interface PgStoreOptions {
  /** postgres://user[:password]@host[:port]/db */
  url: string;
  /** This instance's data folder: cached copies of documents live under it. */
  dataDir: string;
  clock?: Clock;
  logger?: Logger;
  dedupeWindowMs?: number;
  /** Pool size (default 10). */
  maxConnections?: number;
  /** How long to wait for a connection before the call fails as STORE_UNAVAILABLE (default 5 s). */
  connectTimeoutMs?: number;
  /**
   * How long one statement may go unanswered before the call fails as STORE_UNAVAILABLE (default
   * 30 s): a partition that drops packets must not hold an SMTP session or a claim for hours.
   */
  queryTimeoutMs?: number;
}

type Q = pg.PoolClient;

const CACHE_ORPHAN_AGE_MS = 60 * 60 * 1000;
const LOCK_NS = "faxgate:";

/** Advisory-lock keys: one text → int4 hash per purpose, computed by PostgreSQL (hashtext). */
const lockKey = (what: string): string => `${LOCK_NS}${what}`;

export class PgStore implements QueueStore {
  readonly backend = "postgres" as const;
  readonly dataDir: string;
  /** Cached copies of documents, one folder per job: `documentPath()` hands these out. */
  readonly cacheDir: string;
  /** The URL with its password masked, for messages and logs. */
  readonly shownUrl: string;
  private readonly pool: pg.Pool;
  private readonly secrets: string[];
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly dedupeWindowMs: number;
  private readonly enqueuedListeners = new Set<(job: Job) => void>();
  private readonly url: string;
  private dutyClient: pg.Client | null = null;
  private dutyConnecting: Promise<pg.Client> | null = null;
  private readonly dutiesHeld = new Set<string>();
  private closed = false;
  /** Tells this instance's own NOTIFYs from the others' (it hears its own as well). */
  private readonly instanceTag = randomUUID();
  /** The duty connection that LISTENs for other instances' new jobs, once someone asked. */
  private listeningOn: pg.Client | null = null;

  /** Connects, brings the schema up to date (one instance at a time) and sweeps stale cached copies. */
  static async open(opts: PgStoreOptions): Promise<PgStore> {
    const store = new PgStore(opts);
    try {
      await store.migrate();
    } catch (err) {
      await store.pool.end().catch(() => undefined);
      const why = storeError(err, "open", store.secrets).message;
      throw new FaxgateError("STORE_UNAVAILABLE", `the queue store ${store.shownUrl} cannot be opened: ${why}`, {
        temporary: true,
      });
    }
    store.sweepCache();
    return store;
  }

  private constructor(opts: PgStoreOptions) {
    this.url = opts.url;
    this.shownUrl = redactDatabaseUrl(opts.url);
    let password = "";
    try {
      password = decodeURIComponent(new URL(opts.url).password);
    } catch {
      // the pool reports an unparsable URL itself
    }
    this.secrets = [password, encodeURIComponent(password)].filter((s) => s.length > 0);
    this.dataDir = path.resolve(opts.dataDir);
    this.cacheDir = path.join(this.dataDir, "pg-documents");
    this.clock = opts.clock ?? systemClock;
    this.log = opts.logger ?? silentLogger();
    this.dedupeWindowMs = opts.dedupeWindowMs ?? 24 * 60 * 60 * 1000;
    this.pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.maxConnections ?? 10,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
      query_timeout: opts.queryTimeoutMs ?? 30_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    // An idle connection cut by the server (restart, partition) must not crash the process: the
    // pool drops it and connects again on the next call.
    this.pool.on("error", (err) =>
      this.log.warn({ database: this.shownUrl, err: this.scrubbed(err) }, "PostgreSQL connection lost"),
    );
    // A connection cut while it is checked out (mid-transaction) also emits 'error' on its client;
    // the query in flight fails (STORE_UNAVAILABLE) and the pool drops the client on release.
    this.pool.on("connect", (client) => client.on("error", () => undefined));
  }

  private scrubbed(err: unknown): string {
    return storeError(err, "connection", this.secrets).message;
  }

  private async migrate(): Promise<void> {
    await this.tx(
      "migrate",
      async (c) => {
        await c.query("SELECT pg_advisory_xact_lock(hashtext($1))", [lockKey("migrate")]);
        await c.query("CREATE TABLE IF NOT EXISTS faxgate_schema (version INTEGER NOT NULL)");
        const r = await c.query<{ version: number }>("SELECT version FROM faxgate_schema");
        let version = r.rows[0]?.version ?? 0;
        if (r.rows.length === 0) await c.query("INSERT INTO faxgate_schema (version) VALUES (0)");
        for (; version < PG_MIGRATIONS.length; version++) {
          await c.query(PG_MIGRATIONS[version]!);
          await c.query("UPDATE faxgate_schema SET version = $1", [version + 1]);
        }
      },
      1,
    );
  }

  /** Cached copies of jobs that are gone (purged by another instance) are removed after an hour. */
  private sweepCache(): void {
    let names: string[];
    try {
      names = readdirSync(this.cacheDir);
    } catch {
      return;
    }
    const now = this.clock.now();
    const old = names.filter((n) => {
      try {
        return now - statSync(path.join(this.cacheDir, n)).mtimeMs > CACHE_ORPHAN_AGE_MS;
      } catch {
        return false;
      }
    });
    if (old.length === 0) return;
    void this.pool.query<{ id: string }>("SELECT id FROM jobs WHERE id = ANY($1)", [old]).then(
      (r) => {
        const live = new Set(r.rows.map((x) => x.id));
        for (const n of old) if (!live.has(n)) rmSync(path.join(this.cacheDir, n), { recursive: true, force: true });
      },
      () => undefined,
    );
  }

  /** Runs `fn` in one transaction; retries it on deadlock or serialization failure; maps connection trouble. */
  private async tx<T>(what: string, fn: (c: Q) => Promise<T>, tries = 4): Promise<T> {
    if (this.closed)
      throw new FaxgateError("STORE_UNAVAILABLE", `${what}: the queue store is closed`, { temporary: true });
    for (let attempt = 1; ; attempt++) {
      let client: Q;
      try {
        client = await this.pool.connect();
      } catch (err) {
        throw storeError(err, what, this.secrets);
      }
      let broken = false;
      try {
        await client.query("BEGIN");
        const out = await fn(client);
        await client.query("COMMIT");
        return out;
      } catch (err) {
        try {
          // a statement that timed out may still be running on the connection: never reuse it
          if (/timeout/i.test((err as Error)?.message ?? "")) throw err;
          await client.query("ROLLBACK");
        } catch {
          broken = true;
        }
        if (isRetryable(err) && attempt < tries) continue;
        throw storeError(err, what, this.secrets);
      } finally {
        client.release(broken || undefined);
      }
    }
  }

  /** One statement outside a transaction. */
  private async q<R extends pg.QueryResultRow>(
    what: string,
    text: string,
    args: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    if (this.closed)
      throw new FaxgateError("STORE_UNAVAILABLE", `${what}: the queue store is closed`, { temporary: true });
    try {
      return await this.pool.query<R>(text, args);
    } catch (err) {
      throw storeError(err, what, this.secrets);
    }
  }

  private now(): string {
    return new Date(this.clock.now()).toISOString();
  }

  // ---------------------------------------------------------------- documents

  /** Reads a document's bytes before the job is stored (the caller's data, or the file). */
  private async loadDocument(d: NewDocument, file: string): Promise<{ stored: StoredDocument; data: Buffer }> {
    let data: Buffer;
    try {
      data = d.data ? Buffer.from(d.data.buffer, d.data.byteOffset, d.data.byteLength) : await fsp.readFile(d.path);
    } catch (err) {
      throw new FaxgateError(
        "STORE_UNAVAILABLE",
        `a document could not be read to be stored: ${(err as Error).message}`,
        { temporary: true },
      );
    }
    return { stored: { path: file, name: d.name, contentType: d.contentType, bytes: data.byteLength }, data };
  }

  /** Stored documents carry only their file name; this instance's copy lives in its cache. */
  private localPath(jobId: string, file: string): string {
    return path.join(this.cacheDir, jobId, path.basename(file));
  }

  private withLocalPaths(job: Job): Job {
    const fix = (d: StoredDocument): StoredDocument => ({ ...d, path: this.localPath(job.id, d.path) });
    return { ...job, documents: job.documents.map(fix), original: job.original ? fix(job.original) : null };
  }

  private static ref(doc: StoredDocument): { jobId: string; file: string } {
    return { jobId: path.basename(path.dirname(doc.path)), file: path.basename(doc.path) };
  }

  async readDocument(doc: StoredDocument): Promise<Buffer> {
    const { jobId, file } = PgStore.ref(doc);
    const r = await this.q<{ data: Buffer }>(
      "read a document",
      "SELECT data FROM documents WHERE job_id = $1 AND file = $2",
      [jobId, file],
    );
    if (!r.rows[0]) throw new FaxgateError("JOB_NOT_FOUND", `job ${jobId} has no document ${JSON.stringify(file)}`);
    return r.rows[0].data;
  }

  async documentPath(doc: StoredDocument): Promise<string> {
    const { jobId, file } = PgStore.ref(doc);
    const local = this.localPath(jobId, file);
    try {
      if (statSync(local).size === doc.bytes) return local;
    } catch {
      // not cached yet
    }
    const data = await this.readDocument(doc);
    await fsp.mkdir(path.dirname(local), { recursive: true, mode: 0o750 });
    await replaceFile(local, (tmp) => fsp.writeFile(tmp, data, { flag: "wx" }), { syncDir: false });
    return local;
  }

  /** Makes sure the claimed jobs' documents are on this host before the send reads them. */
  private async cacheDocuments(job: Job): Promise<void> {
    await Promise.all(job.documents.map((d) => this.documentPath(d)));
  }

  // ---------------------------------------------------------------- intake

  async enqueue(input: NewJob): Promise<{ job: Job; duplicate: boolean }> {
    const waiting = input.awaitingAddress === true;
    if (input.recipients.length === 0 && !waiting)
      throw new FaxgateError("NO_DESTINATION", "a job needs at least one recipient");
    const state = waiting ? "held" : "queued";
    const id = newJobId(this.clock.now());
    const loaded = await Promise.all(input.documents.map((d, i) => this.loadDocument(d, safeFileName(d.name, i + 1))));
    const orig = input.original
      ? await this.loadDocument(input.original, `00-original-${safeFileName(input.original.name, 0).slice(3)}`)
      : null;
    const numbers = new Set<string>();
    const recipients = waiting
      ? [{ number: "", name: undefined }]
      : input.recipients.filter((r) => !numbers.has(r.number) && numbers.add(r.number));
    const result = await this.tx("the job could not be stored", async (c) => {
      if (input.dedupeKey) {
        // Two instances receiving the same mail at once: the key's lock makes one wait for the other.
        await c.query("SELECT pg_advisory_xact_lock(hashtext($1))", [lockKey(`dedupe:${input.dedupeKey}`)]);
        const dup = await this.findDuplicate(c, input.dedupeKey);
        if (dup) return { job: dup, duplicate: true };
      }
      const now = this.now();
      await c.query(
        `INSERT INTO jobs (id, source, "user", state, cover, documents, original, scheduled_at, tags, dedupe_key, meta, created_at, updated_at)
         VALUES ($1, $2, $3, $12, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
        [
          id,
          input.source,
          input.user,
          JSON.stringify(input.cover),
          JSON.stringify(loaded.map((l) => l.stored)),
          orig ? JSON.stringify(orig.stored) : null,
          isoUtc(input.scheduledAt),
          JSON.stringify(input.tags ?? []),
          input.dedupeKey ?? null,
          JSON.stringify(input.meta ?? {}),
          now,
          state,
        ],
      );
      await c.query(
        `INSERT INTO recipients (job_id, idx, number, name, state, last_error, budget_from, created_at, updated_at)
         SELECT $1, i - 1, n, nm, $5, $6, $2, $2, $2 FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS t(n, nm, i)`,
        [
          id,
          now,
          recipients.map((r) => r.number),
          recipients.map((r) => r.name ?? null),
          state,
          waiting ? NEEDS_ADDRESS : null,
        ],
      );
      const docs = [...(orig ? [orig] : []), ...loaded];
      for (const d of docs)
        await c.query("INSERT INTO documents (job_id, file, data) VALUES ($1, $2, $3)", [id, d.stored.path, d.data]);
      await this.event(
        c,
        id,
        null,
        "enqueue",
        null,
        state,
        waiting
          ? `from ${SOURCE_WORDS[input.source]}; ${NEEDS_ADDRESS}`
          : `${recipients.length} recipient(s) from ${SOURCE_WORDS[input.source]}`,
      );
      // delivered to the other instances at COMMIT (and not at all on a rollback)
      await c.query("SELECT pg_notify($1, $2)", [JOBS_CHANNEL, `${this.instanceTag} ${id}`]);
      return { job: (await this.readJob(c, id))!, duplicate: false };
    });
    // The store now holds the bytes: moved sources go (as the SQLite store moves them away).
    for (const d of [...input.documents, ...(input.original ? [input.original] : [])]) {
      if (d.move) await fsp.unlink(d.path).catch(() => undefined);
    }
    if (!result.duplicate) for (const fn of this.enqueuedListeners) fn(result.job);
    return result;
  }

  /**
   * New jobs of this instance at once, and those of the other instances on the shared queue as
   * PostgreSQL delivers their NOTIFY (on the duty connection, LISTENing from the first listener on;
   * until that connection is up, or while it is being replaced, they are found by the next pass).
   */
  onEnqueued(fn: (job: Job) => void): () => void {
    this.enqueuedListeners.add(fn);
    if (!this.closed)
      void this.dutyConnection().then(
        (client) => this.listen(client),
        () => undefined,
      );
    return () => this.enqueuedListeners.delete(fn);
  }

  private async listen(client: pg.Client): Promise<void> {
    if (this.listeningOn === client || this.enqueuedListeners.size === 0) return;
    this.listeningOn = client;
    client.on("notification", (msg) => {
      if (msg.channel !== JOBS_CHANNEL || !msg.payload) return;
      const [tag, id] = msg.payload.split(" ");
      if (tag === this.instanceTag || !id) return;
      void this.getJob(id).then(
        (job) => {
          if (job) for (const fn of this.enqueuedListeners) fn(job);
        },
        () => undefined,
      );
    });
    try {
      await client.query(`LISTEN ${JOBS_CHANNEL}`);
    } catch {
      // the connection is going; the next one listens again (dutyConnection)
      if (this.listeningOn === client) this.listeningOn = null;
    }
  }

  private async findDuplicate(c: Q, key: string): Promise<Job | null> {
    const since = new Date(this.clock.now() - this.dedupeWindowMs).toISOString();
    const r = await c.query<{ id: string }>(
      "SELECT id FROM jobs WHERE dedupe_key = $1 AND created_at >= $2 ORDER BY created_at DESC LIMIT 1",
      [key, since],
    );
    return r.rows[0] ? this.readJob(c, r.rows[0].id) : null;
  }

  async enqueueCorrupt(input: {
    source: JobSource;
    user: string;
    reason: string;
    original: NewDocument;
    meta?: JobMeta;
  }): Promise<Job> {
    const id = newJobId(this.clock.now());
    const orig = await this.loadDocument(
      input.original,
      `00-original-${safeFileName(input.original.name, 0).slice(3)}`,
    );
    const job = await this.tx("the rejected input could not be stored", async (c) => {
      const now = this.now();
      await c.query(
        `INSERT INTO jobs (id, source, "user", state, cover, documents, original, tags, meta, corrupt_reason, created_at, updated_at, finished_at)
         VALUES ($1, $2, $3, 'corrupt', $4, '[]', $5, '[]', $6, $7, $8, $8, $8)`,
        [
          id,
          input.source,
          input.user,
          JSON.stringify({ enabled: false }),
          JSON.stringify(orig.stored),
          JSON.stringify(input.meta ?? {}),
          input.reason,
          now,
        ],
      );
      await c.query("INSERT INTO documents (job_id, file, data) VALUES ($1, $2, $3)", [
        id,
        orig.stored.path,
        orig.data,
      ]);
      await this.event(c, id, null, "corrupt", null, "corrupt", input.reason);
      await this.insertNotification(c, {
        kind: "rejected",
        user: input.user,
        jobId: id,
        dedupeKey: `rejected:${id}`,
        payload: { jobId: id, reason: input.reason },
      });
      return (await this.readJob(c, id))!;
    });
    if (input.original.move) await fsp.unlink(input.original.path).catch(() => undefined);
    return job;
  }

  // ---------------------------------------------------------------- reading

  private async readJob(c: Q | pg.Pool, id: string): Promise<Job | null> {
    const j = await c.query<JobRow>("SELECT * FROM jobs WHERE id = $1", [id]);
    if (!j.rows[0]) return null;
    const r = await c.query<RecipientRow>("SELECT * FROM recipients WHERE job_id = $1 ORDER BY idx", [id]);
    return this.withLocalPaths(toJob(j.rows[0], r.rows.map(toRecipient)));
  }

  async getJob(id: string): Promise<Job | null> {
    try {
      return await this.readJob(this.pool, id);
    } catch (err) {
      throw storeError(err, "read a job", this.secrets);
    }
  }

  private async mustGet(id: string): Promise<Job> {
    const job = await this.getJob(id);
    if (!job) throw new FaxgateError("JOB_NOT_FOUND", `no job has the id ${JSON.stringify(id)}`);
    return job;
  }

  private static where(filter: JobFilter): { sql: string; args: unknown[] } {
    const where: string[] = [];
    const args: unknown[] = [];
    const arg = (v: unknown): string => `$${args.push(v)}`;
    if (filter.state) where.push(`j.state = ${arg(filter.state)}`);
    if (filter.user) where.push(`j."user" = ${arg(filter.user)}`);
    if (filter.source) where.push(`j.source = ${arg(filter.source)}`);
    if (filter.updatedSince) where.push(`j.updated_at >= ${arg(isoUtc(filter.updatedSince))}`);
    refuseControlCharacters("search", filter.search);
    if (filter.search) {
      const p = arg(`%${filter.search.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`);
      where.push(`(EXISTS (SELECT 1 FROM recipients x WHERE x.job_id = j.id AND (x.number ILIKE ${p} OR x.name ILIKE ${p}))
        OR (j.cover::jsonb ->> 'subject') ILIKE ${p} OR (j.meta::jsonb -> 'origin' ->> 'subject') ILIKE ${p})`);
    }
    return { sql: where.length ? `WHERE ${where.join(" AND ")}` : "", args };
  }

  async listJobs(filter: JobFilter = {}): Promise<Job[]> {
    const { sql, args } = PgStore.where(filter);
    const limit = Math.max(1, Math.min(filter.limit ?? 1000, 100_000));
    const offset = Math.max(0, filter.offset ?? 0);
    const jobs = await this.q<JobRow>(
      "list jobs",
      `SELECT j.* FROM jobs j ${sql} ORDER BY j.created_at DESC, j.seq DESC LIMIT ${limit} OFFSET ${offset}`,
      args,
    );
    if (jobs.rows.length === 0) return [];
    const recs = await this.q<RecipientRow>(
      "list jobs",
      "SELECT * FROM recipients WHERE job_id = ANY($1) ORDER BY job_id, idx",
      [jobs.rows.map((r) => r.id)],
    );
    const byJob = new Map<string, Recipient[]>();
    for (const r of recs.rows) {
      const list = byJob.get(r.job_id) ?? [];
      list.push(toRecipient(r));
      byJob.set(r.job_id, list);
    }
    return jobs.rows.map((r) => this.withLocalPaths(toJob(r, byJob.get(r.id) ?? [])));
  }

  async countJobs(filter: JobFilter = {}): Promise<number> {
    const { sql, args } = PgStore.where(filter);
    const r = await this.q<{ n: number }>("count jobs", `SELECT COUNT(*)::int AS n FROM jobs j ${sql}`, args);
    return r.rows[0]!.n;
  }

  async counts(): Promise<QueueCounts> {
    const jobs = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    const recipients = Object.fromEntries(RECIPIENT_STATES.map((s) => [s, 0])) as Record<RecipientState, number>;
    const [j, r, o, n] = await Promise.all([
      this.q<{ state: JobState; n: number }>(
        "count the queue",
        "SELECT state, COUNT(*)::int AS n FROM jobs GROUP BY state",
      ),
      this.q<{ state: RecipientState; n: number }>(
        "count the queue",
        "SELECT state, COUNT(*)::int AS n FROM recipients GROUP BY state",
      ),
      this.q<{ t: string | null }>("count the queue", "SELECT MIN(created_at) AS t FROM jobs WHERE state = ANY($1)", [
        OPEN_JOB_STATES,
      ]),
      this.q<{ n: number }>("count the queue", `SELECT COUNT(*)::int AS n FROM notifications WHERE state = 'pending'`),
    ]);
    for (const x of j.rows) jobs[x.state] = x.n;
    for (const x of r.rows) recipients[x.state] = x.n;
    const t = o.rows[0]!.t;
    return {
      jobs,
      recipients,
      oldestActiveAgeSeconds: t ? Math.max(0, Math.round((this.clock.now() - Date.parse(t)) / 1000)) : null,
      notificationsPending: n.rows[0]!.n,
    };
  }

  async listEvents(jobId: string): Promise<JobEvent[]> {
    const r = await this.q<{
      job_id: string;
      idx: number | null;
      at: string;
      transition: string;
      from_state: string | null;
      to_state: string;
      detail: string | null;
    }>("read a job's history", "SELECT * FROM job_events WHERE job_id = $1 ORDER BY id", [jobId]);
    return r.rows.map((e) => ({
      jobId: e.job_id,
      idx: e.idx,
      at: e.at,
      transition: e.transition,
      from: e.from_state as RecipientState | null,
      to: e.to_state as RecipientState | JobState,
      detail: e.detail,
    }));
  }

  // ---------------------------------------------------------------- job state bookkeeping

  private async event(
    c: Q,
    jobId: string,
    idx: number | null,
    transition: string,
    from: string | null,
    to: string,
    detail: string | null,
  ): Promise<void> {
    await c.query(
      "INSERT INTO job_events (job_id, idx, at, transition, from_state, to_state, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)",
      [jobId, idx, this.now(), transition, from, to, detail],
    );
  }

  /** Recomputes the job's state in the same transaction; on the step to final, queues the outcome notice. */
  private async refreshJob(c: Q, jobId: string): Promise<void> {
    const j = await c.query<{ state: JobState; user: string; finals: number }>(
      'SELECT state, "user", finals FROM jobs WHERE id = $1 FOR UPDATE',
      [jobId],
    );
    const job = j.rows[0];
    if (!job || job.state === "corrupt") return;
    const states = (
      await c.query<{ state: RecipientState }>("SELECT state FROM recipients WHERE job_id = $1", [jobId])
    ).rows.map((r) => r.state);
    const next = deriveJobState(states);
    const now = this.now();
    if (next === job.state) {
      await c.query("UPDATE jobs SET updated_at = $1 WHERE id = $2", [now, jobId]);
      return;
    }
    const becomesFinal = isFinalJobState(next) && !isFinalJobState(job.state);
    await c.query("UPDATE jobs SET state = $1, updated_at = $2, finished_at = $3, finals = finals + $4 WHERE id = $5", [
      next,
      now,
      isFinalJobState(next) ? now : null,
      becomesFinal ? 1 : 0,
      jobId,
    ]);
    if (becomesFinal) {
      const key = job.finals === 0 ? `outcome:${jobId}` : `outcome:${jobId}:${job.finals + 1}`;
      await this.insertNotification(c, { kind: "outcome", user: job.user, jobId, dedupeKey: key, payload: { jobId } });
    }
  }

  /**
   * One recipient transition: locks the row, applies `set` when its state is one of the
   * transition's from-states (narrowed by `expect`, and with `sendId` when given), writes the
   * event and refreshes the job. Answers whether the row changed.
   */
  private async transition(
    name: TransitionName,
    key: RecipientKey,
    set: string,
    args: unknown[],
    opts: { expect?: readonly RecipientState[]; sendId?: string | null; detail?: string | null } = {},
  ): Promise<boolean> {
    return this.tx(`${name} ${key.jobId}/${key.idx}`, async (c) => {
      const cur = await c.query<{ state: RecipientState; send_id: string | null }>(
        "SELECT state, send_id FROM recipients WHERE job_id = $1 AND idx = $2 FOR UPDATE",
        [key.jobId, key.idx],
      );
      const row = cur.rows[0];
      if (!row) return false;
      if (!fromStates(name, opts.expect).includes(row.state)) return false;
      if (opts.sendId != null && row.send_id !== opts.sendId) return false;
      const n = args.length;
      await c.query(
        `UPDATE recipients SET ${set}, updated_at = $${n + 1} WHERE job_id = $${n + 2} AND idx = $${n + 3}`,
        [...args, this.now(), key.jobId, key.idx],
      );
      const to = TRANSITIONS[name].to;
      await this.event(c, key.jobId, key.idx, name, row.state, to, opts.detail ?? null);
      await this.refreshJob(c, key.jobId);
      return true;
    });
  }

  // ---------------------------------------------------------------- dispatcher side

  async claimDue(owner: string, limit: number, leaseMs: number, opts: ClaimOptions = {}): Promise<ClaimedGroup[]> {
    const perNumber = opts.perNumber ?? 1;
    const horizon = opts.scheduleHorizonMs ?? 24 * 60 * 60 * 1000;
    const groups = await this.tx("claim due faxes", async (c) => {
      const nowMs = this.clock.now();
      const now = new Date(nowMs).toISOString();
      const cand = await c.query<{ job_id: string; idx: number; number: string }>(
        `SELECT r.job_id, r.idx, r.number FROM recipients r JOIN jobs j ON j.id = r.job_id
         WHERE r.state = ANY($1) AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= $2)
           AND (j.scheduled_at IS NULL OR j.scheduled_at <= $3)
         ORDER BY COALESCE(r.next_attempt_at, r.created_at), j.seq, r.idx
         LIMIT $4`,
        [fromStates("claim"), now, new Date(nowMs + horizon).toISOString(), Math.max(limit * 8, 64)],
      );
      if (cand.rows.length === 0) return [];
      // One fax in flight per number across all instances: a number is only claimed under its
      // transaction lock, and counted after taking it (another claimer's marks are committed
      // before it lets the lock go). A number another instance is claiming right now, and a row
      // another instance has locked, are skipped rather than waited for, so claimers spread out.
      const inFlight = new Map<string, number>();
      const picked = new Map<string, number[]>();
      for (const r of cand.rows) {
        if (!picked.has(r.job_id) && picked.size >= limit) continue;
        let busy = inFlight.get(r.number);
        if (busy === undefined) {
          const got = await c.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext($1)) AS ok", [
            lockKey(`number:${r.number}`),
          ]);
          if (!got.rows[0]!.ok) busy = Number.POSITIVE_INFINITY;
          else
            busy = (
              await c.query<{ n: number }>(
                "SELECT COUNT(*)::int AS n FROM recipients WHERE number = $1 AND state = ANY($2)",
                [r.number, IN_FLIGHT_STATES],
              )
            ).rows[0]!.n;
          inFlight.set(r.number, busy);
        }
        if (busy >= perNumber) continue;
        const row = await c.query(
          `SELECT 1 FROM recipients WHERE job_id = $1 AND idx = $2 AND state = ANY($3) AND (next_attempt_at IS NULL OR next_attempt_at <= $4) FOR UPDATE SKIP LOCKED`,
          [r.job_id, r.idx, fromStates("claim"), now],
        );
        if (row.rows.length === 0) continue;
        inFlight.set(r.number, busy + 1);
        const g = picked.get(r.job_id) ?? [];
        g.push(r.idx);
        picked.set(r.job_id, g);
      }
      const until = new Date(nowMs + leaseMs).toISOString();
      const out: ClaimedGroup[] = [];
      for (const [jobId, idxs] of picked) {
        const sendId = newSendId(nowMs);
        const before = await c.query<{ idx: number; state: RecipientState }>(
          `UPDATE recipients r SET state = 'sending', send_id = $1, locked_by = $2, locked_until = $3, attempts = r.attempts + 1,
             sent_at = $4, message_id = NULL, last_error = NULL, updated_at = $4
           FROM recipients old WHERE old.job_id = r.job_id AND old.idx = r.idx AND r.job_id = $5 AND r.idx = ANY($6)
           RETURNING r.idx, old.state`,
          [sendId, owner, until, now, jobId, idxs],
        );
        for (const b of before.rows) await this.event(c, jobId, b.idx, "claim", b.state, "sending", null);
        await this.refreshJob(c, jobId);
        const job = (await this.readJob(c, jobId))!;
        const set = new Set(idxs);
        out.push({ job, sendId, recipients: job.recipients.filter((r) => set.has(r.idx)) });
      }
      return out;
    });
    await Promise.all(groups.map((g) => this.cacheDocuments(g.job)));
    return groups;
  }

  async extendLease(owner: string, keys: RecipientKey[], leaseMs: number): Promise<void> {
    if (keys.length === 0) return;
    const until = new Date(this.clock.now() + leaseMs).toISOString();
    await this.q(
      "extend a lease",
      `UPDATE recipients r SET locked_until = $1 FROM unnest($2::text[], $3::int[]) AS k(job_id, idx)
       WHERE r.job_id = k.job_id AND r.idx = k.idx AND r.locked_by = $4 AND r.state = 'sending'`,
      [until, keys.map((k) => k.jobId), keys.map((k) => k.idx), owner],
    );
  }

  /**
   * `sending` rows whose lease ran out become `unknown`. Leases expire by time only: several
   * instances share the queue, so `all` (SQLite's "every lease is mine and gone") is ignored here.
   */
  async releaseExpired(_opts: { all?: boolean } = {}): Promise<{ unknown: number; released: number }> {
    return this.tx("release expired leases", async (c) => {
      const now = this.now();
      const stale = await c.query<{ job_id: string; idx: number }>(
        `UPDATE recipients SET state = 'unknown', locked_by = NULL, locked_until = NULL, next_attempt_at = NULL,
           last_error = 'the gateway stopped while the send was in progress', updated_at = $1
         WHERE (job_id, idx) IN (SELECT job_id, idx FROM recipients WHERE state = ANY($2) AND locked_until < $1 FOR UPDATE SKIP LOCKED)
         RETURNING job_id, idx`,
        [now, fromStates("expire")],
      );
      for (const s of stale.rows)
        await this.event(c, s.job_id, s.idx, "expire", "sending", "unknown", "the lease ran out");
      for (const job of [...new Set(stale.rows.map((s) => s.job_id))].sort()) await this.refreshJob(c, job);
      const r1 = await c.query(
        `UPDATE recipients SET locked_by = NULL, locked_until = NULL WHERE state <> 'sending' AND locked_until IS NOT NULL AND locked_until < $1`,
        [now],
      );
      const r2 = await c.query(
        "UPDATE notifications SET locked_by = NULL, locked_until = NULL WHERE locked_until IS NOT NULL AND locked_until < $1",
        [now],
      );
      return { unknown: stale.rows.length, released: (r1.rowCount ?? 0) + (r2.rowCount ?? 0) };
    });
  }

  async releaseOwner(owner: string): Promise<number> {
    return this.tx("release this gateway's leases", async (c) => {
      const now = this.now();
      const rows = await c.query<{ job_id: string; idx: number }>(
        `UPDATE recipients SET state = 'unknown', locked_by = NULL, locked_until = NULL,
           last_error = 'the gateway stopped while the send was in progress', updated_at = $1
         WHERE state = 'sending' AND locked_by = $2 RETURNING job_id, idx`,
        [now, owner],
      );
      for (const s of rows.rows)
        await this.event(c, s.job_id, s.idx, "expire", "sending", "unknown", "the gateway stopped");
      for (const job of [...new Set(rows.rows.map((s) => s.job_id))].sort()) await this.refreshJob(c, job);
      await c.query("UPDATE notifications SET locked_by = NULL, locked_until = NULL WHERE locked_by = $1", [owner]);
      return rows.rows.length;
    });
  }

  async markAccepted(
    key: RecipientKey,
    sendId: string,
    fields: FaxResultFields & { messageId: string },
    apiCalls = 0,
  ): Promise<boolean> {
    return this.transition(
      "accept",
      key,
      `state = 'processing', message_id = $1, locked_by = NULL, locked_until = NULL, next_attempt_at = NULL, last_error = NULL,
       pages = COALESCE($2, pages), pages_count = COALESCE($3, pages_count), api_calls = api_calls + $4`,
      [fields.messageId, fields.pagesComplete ?? null, fields.pagesCount ?? null, apiCalls],
      { sendId, detail: `message ${fields.messageId}` },
    );
  }

  async markUnknown(key: RecipientKey, sendId: string, error: string): Promise<boolean> {
    return this.transition(
      "lose",
      key,
      `state = 'unknown', locked_by = NULL, locked_until = NULL, next_attempt_at = NULL, last_error = $1`,
      [error],
      { sendId, detail: error },
    );
  }

  async postponeUnknown(key: RecipientKey, sendId: string, error: string, nextAttemptAt: Date): Promise<boolean> {
    return this.transition(
      "postpone",
      key,
      "next_attempt_at = $1, last_error = $2",
      [nextAttemptAt.toISOString(), error],
      { sendId, detail: error },
    );
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
    return this.transition(
      "defer",
      key,
      `state = 'deferred', next_attempt_at = $1, last_error = $2, locked_by = NULL, locked_until = NULL,
       fax_tries = fax_tries + $3, attempts = GREATEST(0, attempts - $4)`,
      [opts.nextAttemptAt.toISOString(), opts.error, opts.faxTry ? 1 : 0, opts.refundAttempt ? 1 : 0],
      { expect: opts.expect, sendId: opts.sendId ?? null, detail: opts.error },
    );
  }

  async fail(
    key: RecipientKey,
    opts: { reason: string; fields?: FaxResultFields; sendId?: string; expect?: RecipientState[] },
  ): Promise<boolean> {
    const f = opts.fields ?? {};
    return this.transition(
      "fail",
      key,
      `state = 'failed', last_error = $1, locked_by = NULL, locked_until = NULL, next_attempt_at = NULL,
       result_code = COALESCE($2, result_code), result_info = COALESCE($3, result_info), error_code = COALESCE($4, error_code), error_info = COALESCE($5, error_info),
       pages = COALESCE($6::int, pages), pages_count = COALESCE($7::int, pages_count), duration = COALESCE($8::int, duration), fax_attempt = COALESCE($9::int, fax_attempt),
       finished_at = $10`,
      [
        opts.reason,
        f.resultCode ?? null,
        f.resultInfo ?? null,
        f.errorCode ?? null,
        f.errorInfo ?? null,
        f.pagesComplete ?? null,
        f.pagesCount ?? null,
        f.duration ?? null,
        f.faxAttempt ?? null,
        this.now(),
      ],
      { expect: opts.expect, sendId: opts.sendId ?? null, detail: opts.reason },
    );
  }

  async complete(key: RecipientKey, fields: FaxResultFields): Promise<boolean> {
    return this.transition(
      "deliver",
      key,
      `state = 'delivered', last_error = NULL, locked_by = NULL, locked_until = NULL, next_attempt_at = NULL,
       message_id = COALESCE($1, message_id), result_code = $2, result_info = $3, error_code = $4, error_info = $5,
       pages = COALESCE($6::int, pages), pages_count = COALESCE($7::int, pages_count), duration = COALESCE($8::int, duration), fax_attempt = COALESCE($9::int, fax_attempt),
       finished_at = $10`,
      [
        fields.messageId ?? null,
        fields.resultCode ?? null,
        fields.resultInfo ?? null,
        fields.errorCode ?? null,
        fields.errorInfo ?? null,
        fields.pagesComplete ?? null,
        fields.pagesCount ?? null,
        fields.duration ?? null,
        fields.faxAttempt ?? null,
        this.now(),
      ],
      { detail: fields.resultInfo ?? null },
    );
  }

  /** Progress of a fax still at the service; a step (with its event) only when something changed. */
  async recordProgress(key: RecipientKey, fields: FaxResultFields): Promise<void> {
    const pages = fields.pagesComplete ?? null;
    const count = fields.pagesCount ?? null;
    const attempt = fields.faxAttempt ?? null;
    await this.tx("record progress", async (c) => {
      const cur = await c.query<{ pages: number | null; pages_count: number | null; fax_attempt: number | null }>(
        "SELECT pages, pages_count, fax_attempt FROM recipients WHERE job_id = $1 AND idx = $2 AND state = ANY($3) FOR UPDATE",
        [key.jobId, key.idx, fromStates("progress")],
      );
      const row = cur.rows[0];
      if (!row) return;
      if (
        (pages === null || pages === row.pages) &&
        (count === null || count === row.pages_count) &&
        (attempt === null || attempt === row.fax_attempt)
      )
        return;
      await c.query(
        `UPDATE recipients SET pages = COALESCE($1::int, pages), pages_count = COALESCE($2::int, pages_count), fax_attempt = COALESCE($3::int, fax_attempt), updated_at = $4
         WHERE job_id = $5 AND idx = $6`,
        [pages, count, attempt, this.now(), key.jobId, key.idx],
      );
      const p = pages ?? row.pages;
      const n = count ?? row.pages_count;
      const detail =
        [p !== null ? `page ${p}${n !== null ? ` of ${n}` : ""}` : null, attempt !== null ? `attempt ${attempt}` : null]
          .filter(Boolean)
          .join(", ") || null;
      await this.event(c, key.jobId, key.idx, "progress", "processing", "processing", detail);
      await this.refreshJob(c, key.jobId);
    });
  }

  async addApiCalls(keys: RecipientKey[], calls: number): Promise<void> {
    if (keys.length === 0 || calls === 0) return;
    await this.q(
      "count API calls",
      `UPDATE recipients r SET api_calls = api_calls + $1 FROM unnest($2::text[], $3::int[]) AS k(job_id, idx) WHERE r.job_id = k.job_id AND r.idx = k.idx`,
      [calls / keys.length, keys.map((k) => k.jobId), keys.map((k) => k.idx)],
    );
  }

  async listProcessing(limit = 100_000): Promise<Array<Recipient & { user: string }>> {
    const r = await this.q<RecipientRow & { user: string }>(
      "list faxes in progress",
      `SELECT r.*, j."user" AS "user" FROM recipients r JOIN jobs j ON j.id = r.job_id WHERE r.state = 'processing' ORDER BY r.sent_at LIMIT $1`,
      [limit],
    );
    return r.rows.map((x) => ({ ...toRecipient(x), user: x.user }));
  }

  async listUnknown(sentBefore: Date, limit = 10_000): Promise<Array<Recipient & { user: string }>> {
    const r = await this.q<RecipientRow & { user: string }>(
      "list unknown sends",
      `SELECT r.*, j."user" AS "user" FROM recipients r JOIN jobs j ON j.id = r.job_id
       WHERE r.state = 'unknown' AND (r.sent_at IS NULL OR r.sent_at <= $1) AND r.updated_at <= $1 AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= $2)
       ORDER BY r.sent_at LIMIT $3`,
      [sentBefore.toISOString(), this.now(), limit],
    );
    return r.rows.map((x) => ({ ...toRecipient(x), user: x.user }));
  }

  async isKnownMessage(messageId: string): Promise<boolean> {
    const r = await this.q("look up a message", "SELECT 1 FROM recipients WHERE message_id = $1 LIMIT 1", [messageId]);
    return r.rows.length > 0;
  }

  async wakeDeferred(user: string, errorPrefix: string): Promise<number> {
    return this.tx("wake deferred faxes", async (c) => {
      const now = this.now();
      const r = await c.query<{ job_id: string; idx: number }>(
        `UPDATE recipients SET next_attempt_at = $1, updated_at = $1
         WHERE state = ANY($2) AND substr(last_error, 1, $3) = $4 AND job_id IN (SELECT id FROM jobs WHERE "user" = $5)
         RETURNING job_id, idx`,
        [now, fromStates("wake"), errorPrefix.length, errorPrefix, user],
      );
      for (const x of r.rows) await this.event(c, x.job_id, x.idx, "wake", "deferred", "deferred", null);
      for (const job of [...new Set(r.rows.map((x) => x.job_id))].sort()) await this.refreshJob(c, job);
      return r.rows.length;
    });
  }

  async nextDueAt(): Promise<string | null> {
    const r = await this.q<{ t: string | null }>(
      "find the next due fax",
      `SELECT MIN(next_attempt_at) AS t FROM recipients WHERE state IN ('deferred','unknown') AND next_attempt_at IS NOT NULL`,
    );
    return r.rows[0]!.t;
  }

  // ---------------------------------------------------------------- operators

  async retry(id: string): Promise<Job> {
    const job = await this.mustGet(id);
    if (job.state === "corrupt")
      throw new FaxgateError(
        "JOB_STATE",
        `job ${id} is corrupt: its input could not be read, there is nothing to send`,
      );
    const changed = await this.tx(`retry ${id}`, async (c) => {
      const now = this.now();
      const r = await c.query<{ idx: number; state: RecipientState }>(
        `UPDATE recipients r SET state = 'queued', attempts = 0, fax_tries = 0, budget_from = $1, next_attempt_at = NULL, last_error = NULL,
           message_id = NULL, send_id = NULL, result_code = NULL, result_info = NULL, error_code = NULL, error_info = NULL,
           pages = NULL, pages_count = NULL, duration = NULL, fax_attempt = NULL, sent_at = NULL, finished_at = NULL, updated_at = $1
         FROM recipients old WHERE old.job_id = r.job_id AND old.idx = r.idx AND r.job_id = $2 AND r.state = ANY($3)${sqlParkedGuard("retry", "r.state", "r.last_error", "r.number")}
         RETURNING r.idx, old.state`,
        [now, id, fromStates("retry")],
      );
      for (const x of r.rows) await this.event(c, id, x.idx, "retry", x.state, "queued", "operator");
      if (r.rows.length > 0) await this.refreshJob(c, id);
      return r.rows.length;
    });
    if (changed === 0) throw new FaxgateError("JOB_STATE", `job ${id} is ${job.state}: ${RETRY_REFUSAL}`);
    return this.mustGet(id);
  }

  async cancel(id: string): Promise<Job> {
    return this.operate(id, "cancel", CANCEL_REFUSAL);
  }

  async hold(id: string): Promise<Job> {
    return this.operate(id, "hold", "only queued or deferred recipients can be held");
  }

  async release(id: string): Promise<Job> {
    return this.operate(id, "release", "it has no held recipients");
  }

  async address(id: string, input: { recipients: NewRecipient[]; cover: CoverSpec }): Promise<Job> {
    const seen = new Set<string>();
    const recipients = input.recipients.filter((r) => r.number !== "" && !seen.has(r.number) && seen.add(r.number));
    if (recipients.length === 0) throw new FaxgateError("NO_DESTINATION", "a fax needs at least one number");
    await this.tx(`address ${id}`, async (c) => {
      const r = await c.query<{ idx: number }>(
        `SELECT r.idx FROM recipients r WHERE r.job_id = $1 AND r.state = ANY($2)${sqlParkedGuard("address", "r.state", "r.last_error", "r.number")} FOR UPDATE`,
        [id, fromStates("address")],
      );
      const row = r.rows[0];
      if (!row)
        throw new FaxgateError(
          "JOB_STATE",
          `job ${id} is not waiting for an address (it was addressed, cancelled or expired meanwhile)`,
        );
      const now = this.now();
      const [first, ...rest] = recipients;
      await c.query(
        `UPDATE recipients SET state = $1, number = $2, name = $3, last_error = NULL, budget_from = $4, updated_at = $4 WHERE job_id = $5 AND idx = $6`,
        [TRANSITIONS.address.to, first!.number, first!.name ?? null, now, id, row.idx],
      );
      await this.event(c, id, row.idx, "address", "held", "queued", "by its owner");
      for (const [i, x] of rest.entries()) {
        await c.query(
          `INSERT INTO recipients (job_id, idx, number, name, state, budget_from, created_at, updated_at) VALUES ($1, $2, $3, $4, 'queued', $5, $5, $5)`,
          [id, row.idx + 1 + i, x.number, x.name ?? null, now],
        );
        await this.event(c, id, row.idx + 1 + i, "address", null, "queued", "by its owner");
      }
      await c.query("UPDATE jobs SET cover = $1 WHERE id = $2", [JSON.stringify(input.cover), id]);
      await this.refreshJob(c, id);
      await c.query("SELECT pg_notify($1, $2)", [JOBS_CHANNEL, `${this.instanceTag} ${id}`]);
    });
    const job = await this.mustGet(id);
    for (const fn of this.enqueuedListeners) fn(job);
    return job;
  }

  async expireUnaddressed(before: Date, reason: string): Promise<Job[]> {
    const ids = await this.tx("expire jobs waiting for an address", async (c) => {
      const now = this.now();
      const r = await c.query<{ job_id: string; idx: number }>(
        `UPDATE recipients r SET state = $1, last_error = $2, finished_at = $3, updated_at = $3
         FROM jobs j WHERE j.id = r.job_id AND j.created_at < $4 AND r.state = ANY($5)${sqlParkedGuard("unaddressed", "r.state", "r.last_error", "r.number")}
         RETURNING r.job_id, r.idx`,
        [
          TRANSITIONS.unaddressed.to,
          `${NEEDS_ADDRESS}: ${reason}`,
          now,
          before.toISOString(),
          fromStates("unaddressed"),
        ],
      );
      for (const x of r.rows) {
        await this.event(c, x.job_id, x.idx, "unaddressed", "held", "cancelled", reason);
        await this.refreshJob(c, x.job_id);
      }
      return r.rows.map((x) => x.job_id);
    });
    const out: Job[] = [];
    for (const id of ids) out.push(await this.mustGet(id));
    return out;
  }

  private async operate(id: string, name: "cancel" | "hold" | "release", refusal: string): Promise<Job> {
    const job = await this.mustGet(id);
    if (job.state === "corrupt") throw new FaxgateError("JOB_STATE", `job ${id} is corrupt: ${refusal}`);
    const to = TRANSITIONS[name].to;
    const changed = await this.tx(`${name} ${id}`, async (c) => {
      const now = this.now();
      const r = await c.query<{ idx: number; state: RecipientState }>(
        `UPDATE recipients r SET state = $1, next_attempt_at = CASE WHEN $1 = 'queued' THEN NULL ELSE r.next_attempt_at END,
           finished_at = CASE WHEN $1 = 'cancelled' THEN $2 ELSE r.finished_at END, updated_at = $2
         FROM recipients old WHERE old.job_id = r.job_id AND old.idx = r.idx AND r.job_id = $3 AND r.state = ANY($4)${sqlParkedGuard(name, "r.state", "r.last_error", "r.number")}
         RETURNING r.idx, old.state`,
        [to, now, id, fromStates(name)],
      );
      for (const x of r.rows) await this.event(c, id, x.idx, name, x.state, to, "operator");
      if (r.rows.length > 0) await this.refreshJob(c, id);
      return r.rows.length;
    });
    if (changed === 0) throw new FaxgateError("JOB_STATE", `job ${id} is ${job.state}: ${refusal}`);
    return this.mustGet(id);
  }

  async purge(olderThanMs: number): Promise<number> {
    const cutoff = new Date(this.clock.now() - olderThanMs).toISOString();
    const ids = await this.tx("purge finished jobs", async (c) => {
      // Jobs whose notice is still pending stay: the notifier reads them.
      const r = await c.query<{ id: string }>(
        `DELETE FROM jobs j WHERE state = ANY($1) AND finished_at IS NOT NULL AND finished_at < $2
           AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.job_id = j.id AND n.state = 'pending')
         RETURNING id`,
        [FINAL_JOB_STATES, cutoff],
      );
      const list = r.rows.map((x) => x.id);
      if (list.length > 0)
        await c.query(`DELETE FROM notifications WHERE job_id = ANY($1) AND state <> 'pending'`, [list]);
      return list;
    });
    // on the thread pool: thousands of folders removed at once held the main thread for seconds
    for (const id of ids) await fsp.rm(path.join(this.cacheDir, id), { recursive: true, force: true });
    if (ids.length > 0) this.log.info({ jobs: ids.length, cutoff }, "purged finished jobs");
    return ids.length;
  }

  // ---------------------------------------------------------------- notifications

  private async insertNotification(c: Q, n: NewNotification): Promise<{ id: number; duplicate: boolean }> {
    const now = this.now();
    const r = await c.query<{ id: number }>(
      `INSERT INTO notifications (kind, "user", job_id, dedupe_key, payload, state, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6) ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`,
      [n.kind, n.user, n.jobId ?? null, n.dedupeKey, JSON.stringify(n.payload), now],
    );
    if (r.rows[0]) return { id: r.rows[0].id, duplicate: false };
    const existing = await c.query<{ id: number }>("SELECT id FROM notifications WHERE dedupe_key = $1", [n.dedupeKey]);
    return { id: existing.rows[0]!.id, duplicate: true };
  }

  async enqueueNotification(n: NewNotification): Promise<{ id: number; duplicate: boolean }> {
    return this.tx("queue a notification", (c) => this.insertNotification(c, n));
  }

  async claimNotifications(owner: string, limit: number, leaseMs: number): Promise<Notification[]> {
    const nowMs = this.clock.now();
    const now = new Date(nowMs).toISOString();
    // SKIP LOCKED: two instances claiming at once take different notices, so each is mailed once.
    const r = await this.q<NotificationRow>(
      "claim notifications",
      `UPDATE notifications SET locked_by = $1, locked_until = $2, attempts = attempts + 1
       WHERE id IN (SELECT id FROM notifications WHERE state = 'pending' AND next_attempt_at <= $3 AND (locked_until IS NULL OR locked_until < $3)
                    ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [owner, new Date(nowMs + leaseMs).toISOString(), now, limit],
    );
    return r.rows.sort((a, b) => a.next_attempt_at.localeCompare(b.next_attempt_at) || a.id - b.id).map(toNotification);
  }

  async completeNotification(id: number, state: "sent" | "skipped"): Promise<void> {
    await this.q(
      "finish a notification",
      "UPDATE notifications SET state = $1, sent_at = $2, locked_by = NULL, locked_until = NULL, last_error = NULL WHERE id = $3",
      [state, this.now(), id],
    );
  }

  async deferNotification(id: number, error: string, nextAttemptAt: Date): Promise<void> {
    await this.q(
      "defer a notification",
      "UPDATE notifications SET next_attempt_at = $1, last_error = $2, locked_by = NULL, locked_until = NULL WHERE id = $3",
      [nextAttemptAt.toISOString(), error, id],
    );
  }

  async failNotification(id: number, error: string): Promise<void> {
    await this.q(
      "fail a notification",
      `UPDATE notifications SET state = 'failed', last_error = $1, locked_by = NULL, locked_until = NULL WHERE id = $2`,
      [error, id],
    );
  }

  async listNotifications(filter: { jobId?: string; kind?: string } = {}): Promise<Notification[]> {
    const r = await this.q<NotificationRow>(
      "list notifications",
      "SELECT * FROM notifications WHERE ($1::text IS NULL OR job_id = $1) AND ($2::text IS NULL OR kind = $2) ORDER BY id DESC",
      [filter.jobId ?? null, filter.kind ?? null],
    );
    return r.rows.map(toNotification);
  }

  // ---------------------------------------------------------------- key/value

  // ---------------------------------------------------------------- received faxes (store/received.ts)

  keepReceived(f: NewReceivedFax): Promise<{ fax: ReceivedFax; duplicate: boolean }> {
    return this.tx("keep a received fax", (c) => received.keepReceived(c, f, this.clock.now()));
  }

  getReceived(id: string): Promise<ReceivedFax | null> {
    return this.tx("read a received fax", (c) => received.getReceived(c, id));
  }

  listReceived(filter: ReceivedFilter = {}): Promise<ReceivedFax[]> {
    return this.tx("list received faxes", (c) => received.listReceived(c, filter));
  }

  readReceivedDocument(id: string): Promise<Buffer | null> {
    return this.tx("read a received fax", (c) => received.readReceivedDocument(c, id));
  }

  changeReceived(id: string, change: ReceivedChange): Promise<ReceivedFax | null> {
    return this.tx("change a received fax", (c) => received.changeReceived(c, id, change, this.clock.now()));
  }

  listReceivedEvents(id: string): Promise<ReceivedEvent[]> {
    return this.tx("read a received fax", (c) => received.listReceivedEvents(c, id));
  }

  purgeReceived(olderThanMs: number): Promise<number> {
    return this.tx("purge received faxes", (c) => received.purgeReceived(c, olderThanMs, this.clock.now()));
  }

  async getState(key: string): Promise<string | null> {
    const r = await this.q<{ value: string }>("read state", "SELECT value FROM kv WHERE key = $1", [key]);
    return r.rows[0]?.value ?? null;
  }

  async setState(key: string, value: string): Promise<void> {
    await this.q(
      "write state",
      "INSERT INTO kv (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      [key, value],
    );
  }

  // ---------------------------------------------------------------- duties

  /**
   * A session advisory lock per duty on one dedicated connection: held while that connection
   * lives. When this instance dies (or loses PostgreSQL), the server drops the lock and another
   * instance takes the duty on its next try.
   */
  async holdsDuty(duty: string): Promise<boolean> {
    if (this.closed) return false;
    let client: pg.Client;
    try {
      client = await this.dutyConnection();
    } catch (err) {
      this.log.warn({ duty, err: this.scrubbed(err) }, "cannot reach PostgreSQL to hold a duty");
      return false;
    }
    try {
      if (this.dutiesHeld.has(duty)) {
        await client.query("SELECT 1"); // still connected, so still held
        return true;
      }
      const r = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS ok", [
        lockKey(`duty:${duty}`),
      ]);
      if (r.rows[0]?.ok) {
        this.dutiesHeld.add(duty);
        this.log.info({ duty }, "took the duty");
        return true;
      }
      return false;
    } catch (err) {
      this.dropDutyClient(client, err);
      return false;
    }
  }

  private dropDutyClient(client: pg.Client, err?: unknown): void {
    if (this.dutyClient !== client) return;
    this.dutyClient = null;
    if (this.dutiesHeld.size > 0)
      this.log.warn(
        { duties: [...this.dutiesHeld], err: err ? this.scrubbed(err) : undefined },
        "lost the connection that held duties",
      );
    this.dutiesHeld.clear();
    void client.end().catch(() => undefined);
  }

  private async dutyConnection(): Promise<pg.Client> {
    if (this.dutyClient) return this.dutyClient;
    if (!this.dutyConnecting) {
      this.dutyConnecting = (async () => {
        const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5000, keepAlive: true });
        client.on("error", (err) => this.dropDutyClient(client, err));
        client.on("end", () => this.dropDutyClient(client));
        try {
          await client.connect();
          // A host that vanishes (power, network) sends no goodbye: the server's keepalive probes
          // end this session, and so free its duties, within about a minute instead of the OS's
          // two hours (these settings are per session; a server that refuses them keeps its own).
          await client
            .query("SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3")
            .catch(() => undefined);
        } catch (err) {
          void client.end().catch(() => undefined);
          throw err;
        }
        this.dutyClient = client;
        if (this.enqueuedListeners.size > 0) await this.listen(client);
        return client;
      })().finally(() => (this.dutyConnecting = null));
    }
    return this.dutyConnecting;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const duty = this.dutyClient;
    this.dutyClient = null;
    this.dutiesHeld.clear();
    await duty?.end().catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }
}

/** The NOTIFY channel of new jobs: "<instance tag> <job id>". */
const JOBS_CHANNEL = "faxgate_jobs";

/** Times are compared as text: "…T10:00:00+01:00" must be stored as "…T09:00:00.000Z". */
function isoUtc(at: string | null | undefined): string | null {
  if (!at) return null;
  const t = Date.parse(at);
  return Number.isNaN(t) ? at : new Date(t).toISOString();
}
