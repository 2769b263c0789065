// `faxgate store migrate`: copies an SQLite queue (the data folder) into PostgreSQL without loss:
// jobs in every state with their recipients, documents (the bytes, into the documents table),
// events, notifications and key/value state (inbound cursors, markers), the ledger and legal
// holds (migrate-ledger.ts), and every other durable table: received faxes, texts, deliveries,
// signed uses, service purges, sign-in factors, person keys, directory (migrate-tables.ts). Each job is copied in its
// own transaction and only when PostgreSQL does not have it yet (a job it has gains only the events
// it lacks), so a rerun (after an interruption, or to pick up what came in since) copies what is
// missing and nothing twice. The data folder's
// daemon lock is held throughout: the migration refuses while a daemon runs on that queue.
import Database from "better-sqlite3";
import { existsSync, promises as fsp } from "node:fs";
import path from "node:path";
import pg from "pg";
import { FaxgateError } from "../../errors.js";
import { DaemonLock } from "../daemon-lock.js";
import type { StoredDocument } from "../types.js";
import { storedFile } from "../spliced-original.js";
import { redactDatabaseUrl, storeError } from "./connection.js";
import { PgStore } from "./pg-store.js";
import { copyLedgerAndHolds } from "./migrate-ledger.js";
import { copyTables, missingRows, refuseUnsealedLedger, type TablesCopy, verifyTables } from "./migrate-tables.js";

export type MigrateCounts = {
  jobs: number;
  recipients: number;
  documents: number;
  events: number;
  notifications: number;
  kv: number;
  /** ledger rows (copied as written: the chain verifies on PostgreSQL) */
  ledger: number;
  /** legal holds, released ones too */
  holds: number;
  // migrate-tables.ts's COPIED_TABLES, by their `count` names
  receivedFaxes: number;
  receivedEvents: number;
  receivedText: number;
  deliveries: number;
  sentText: number;
  signedUses: number;
  servicePurges: number;
  signInFactors: number;
  personKeys: number;
  directoryEntries: number;
};

export interface MigrateReport {
  /** What the SQLite queue holds. */
  source: MigrateCounts;
  /** Rows this run wrote (0 everywhere on a rerun with nothing new). */
  copied: MigrateCounts;
  /** Jobs already in PostgreSQL, left as they are but for the events they lack. */
  alreadyThere: number;
  /**
   * Received faxes PostgreSQL already held under another id (a gateway on it fetched the same
   * fax from the service): their texts and events are joined to that id, not copied as a second fax.
   */
  receivedUnderOtherId: number;
  /** Rows left out by count name, with why in docs/ha.md: the deliveries of those faxes. */
  skipped: Partial<MigrateCounts>;
  /**
   * Active legal holds on such a fax: copied as held (naming SQLite's id), they do not keep the
   * fleet's copy; an operator places them again on `fleetId` (a hold is a ledger act, not ours).
   */
  holdAgain: Array<{ heldId: string; fleetId: string }>;
}

type Row = Record<string, unknown>;

const zero = (): MigrateCounts => ({
  jobs: 0,
  recipients: 0,
  documents: 0,
  events: 0,
  notifications: 0,
  kv: 0,
  ledger: 0,
  holds: 0,
  receivedFaxes: 0,
  receivedEvents: 0,
  receivedText: 0,
  deliveries: 0,
  sentText: 0,
  signedUses: 0,
  servicePurges: 0,
  signInFactors: 0,
  personKeys: 0,
  directoryEntries: 0,
});

const JOB_COLS = [
  "id",
  "source",
  "user",
  "state",
  "cover",
  "documents",
  "original",
  "scheduled_at",
  "tags",
  "dedupe_key",
  "meta",
  "corrupt_reason",
  "finals",
  "created_at",
  "updated_at",
  "finished_at",
];
const NOTE_COLS = [
  "kind",
  "user",
  "job_id",
  "dedupe_key",
  "payload",
  "state",
  "attempts",
  "next_attempt_at",
  "last_error",
  "created_at",
  "sent_at",
];

function insertSql(table: string, cols: string[], conflict: string): string {
  const names = cols.map((c) => (c === "user" ? '"user"' : c)).join(", ");
  return `INSERT INTO ${table} (${names}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(", ")}) ${conflict}`;
}

export async function migrateSqliteToPostgres(opts: {
  dataDir: string;
  url: string;
  onJob?: (n: number) => void;
}): Promise<MigrateReport> {
  const dataDir = path.resolve(opts.dataDir);
  const file = path.join(dataDir, "faxgate.db");
  if (!existsSync(file))
    throw new FaxgateError("STORE_UNAVAILABLE", `no SQLite queue at ${file}: nothing to migrate`, { temporary: false });
  const lock = DaemonLock.acquire(dataDir); // ALREADY_RUNNING while a daemon uses this queue
  const db = new Database(file, { readonly: true, fileMustExist: true });
  // its sorts' scratch files in memory, not /var/tmp, as the store's own connections (sqlite/db-thread.ts)
  db.pragma("temp_store = MEMORY");
  let client: pg.Client | null = null;
  try {
    // brings the PostgreSQL schema up to date (and proves the URL)
    await (await PgStore.open({ url: opts.url, dataDir })).close();
    client = new pg.Client({ connectionString: opts.url, connectionTimeoutMillis: 5000 });
    await client.connect().catch((err) => {
      throw storeError(err, `connect to ${redactDatabaseUrl(opts.url)}`, [safePassword(opts.url)]);
    });
    const c = client;
    const tables = new Set(
      (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as Array<{ name: string }>).map(
        (t) => t.name,
      ),
    );
    refuseUnsealedLedger(db, tables);
    const source = zero();
    const copied = zero();
    const alreadyThere = await copyJobs(c, db, { dataDir, tables, source, copied, onJob: opts.onJob });
    await copyNotificationsAndKv(c, db, source, copied);
    const records = await copyLedgerAndHolds(c, db, tables);
    source.ledger = records.ledger.source;
    copied.ledger = records.ledger.copied;
    source.holds = records.holds.source;
    copied.holds = records.holds.copied;
    // after the jobs and received faxes are in: their texts and deliveries reference them
    const copy = await copyTables(c, db, tables, source, copied);

    await verify(c, db, source, tables, copy);
    const held = tables.has("legal_holds")
      ? (
          db
            .prepare("SELECT DISTINCT value FROM legal_holds WHERE kind = 'received' AND released_at IS NULL")
            .all() as Array<{
            value: string;
          }>
        ).map((h) => h.value)
      : [];
    const holdAgain = held.flatMap((heldId) => {
      const fleetId = copy.faxIds.get(heldId);
      return fleetId ? [{ heldId, fleetId }] : [];
    });
    return {
      source,
      copied,
      alreadyThere,
      receivedUnderOtherId: copy.faxIds.size,
      skipped: copy.skipped,
      holdAgain,
    };
  } catch (err) {
    throw storeError(err, "store migrate", [safePassword(opts.url)]);
  } finally {
    await client?.end().catch(() => undefined);
    db.close();
    lock.release();
  }
}

/** One job as read from SQLite: its row, recipients, events, documents and their bytes. */
interface SourceJob {
  id: string;
  job: Row;
  recs: Row[];
  events: Row[];
  docs: StoredDocument[];
  original: StoredDocument | null;
  /** the original first, then the documents, as `bytes` */
  all: StoredDocument[];
  bytes: Buffer[];
}

/** Every job not yet in PostgreSQL, each in its own transaction; answers how many were there already. */
async function copyJobs(
  c: pg.Client,
  db: Database.Database,
  run: {
    dataDir: string;
    tables: Set<string>;
    source: MigrateCounts;
    copied: MigrateCounts;
    onJob?: (n: number) => void;
  },
): Promise<number> {
  const { dataDir, tables, source, copied } = run;
  const eventsTable = ["job_events", "events"].find((t) => tables.has(t)) ?? null;
  // recipients: the columns both schemas have (either side may have grown one since)
  const pgRecipientCols = new Set(
    (
      await c.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns WHERE table_name = 'recipients' AND table_schema = current_schema()`,
      )
    ).rows.map((r) => r.column_name),
  );
  let alreadyThere = 0;
  const jobs = db.prepare("SELECT * FROM jobs ORDER BY rowid").all() as Row[];
  const recipientsOf = db.prepare("SELECT * FROM recipients WHERE job_id = ? ORDER BY idx");
  const eventsOf = eventsTable ? db.prepare(`SELECT * FROM ${eventsTable} WHERE job_id = ? ORDER BY rowid`) : null;
  // small documents kept in the database (a store from before that table has none)
  const inlineOf = tables.has("document_data")
    ? (db.prepare("SELECT data FROM document_data WHERE job_id = ? AND file = ?") as Database.Statement<
        [string, string],
        { data: Buffer }
      >)
    : null;
  source.jobs = jobs.length;
  for (const job of jobs) {
    const id = String(job.id);
    const recs = recipientsOf.all(id) as Row[];
    const events = eventsOf ? (eventsOf.all(id) as Row[]) : [];
    const docs = JSON.parse(String(job.documents)) as StoredDocument[];
    const original = job.original ? (JSON.parse(String(job.original)) as StoredDocument) : null;
    const all = [...(original ? [original] : []), ...docs];
    source.recipients += recs.length;
    source.events += events.length;
    source.documents += all.length;
    // read every file before the transaction: a missing document stops the migration, naming it
    const bytes = await Promise.all(
      all.map((d) => inlineOf?.get(id, storedFile(d))?.data ?? readStored(dataDir, id, d)),
    );
    const wrote = await copyJob(c, { id, job, recs, events, docs, original, all, bytes }, pgRecipientCols);
    if (wrote !== true) {
      alreadyThere++;
      copied.events += wrote.events;
      continue;
    }
    copied.jobs++;
    copied.recipients += recs.length;
    copied.documents += all.length;
    copied.events += events.length;
    run.onJob?.(copied.jobs);
  }
  return alreadyThere;
}

const EVENT_COLS = ["job_id", "idx", "at", "transition", "from_state", "to_state", "detail"];

/**
 * One job with its rows in one transaction: true when it was new; when PostgreSQL has it already,
 * only the events it lacks (added on SQLite since the last run; missingRows) and how many.
 */
async function copyJob(c: pg.Client, j: SourceJob, pgRecipientCols: Set<string>): Promise<true | { events: number }> {
  const rename = (d: StoredDocument): StoredDocument => ({ ...d, path: path.basename(d.path) });
  const pick = (r: Row, ...names: string[]): unknown => names.map((n) => r[n]).find((v) => v !== undefined) ?? null;
  await c.query("BEGIN");
  try {
    const values = JOB_COLS.map((k) =>
      k === "documents"
        ? JSON.stringify(j.docs.map(rename))
        : k === "original"
          ? j.original
            ? JSON.stringify(rename(j.original))
            : null
          : (j.job[k] ?? null),
    );
    // events as PostgreSQL's columns name them (an old SQLite file named some differently)
    const events: Row[] = j.events.map((e) => ({
      job_id: j.id,
      idx: pick(e, "idx"),
      at: pick(e, "at", "created_at"),
      transition: pick(e, "transition", "name"),
      from_state: pick(e, "from_state", "from"),
      to_state: pick(e, "to_state", "to"),
      detail: pick(e, "detail"),
    }));
    const addEvents = async (rows: Row[]): Promise<number> => {
      for (const e of rows)
        await c.query(
          insertSql("job_events", EVENT_COLS, ""),
          EVENT_COLS.map((k) => e[k] ?? null),
        );
      return rows.length;
    };
    const ins = await c.query(insertSql("jobs", JOB_COLS, "ON CONFLICT (id) DO NOTHING RETURNING id"), values);
    if (ins.rowCount === 0) {
      const lacking = await missingRows(c, {
        table: "job_events",
        cols: EVENT_COLS,
        parentColumn: "job_id",
        parent: j.id,
        rows: events,
      });
      const n = await addEvents(lacking);
      await c.query("COMMIT");
      return { events: n };
    }
    for (const r of j.recs) {
      const cols = Object.keys(r).filter((k) => pgRecipientCols.has(k));
      await c.query(
        insertSql("recipients", cols, ""),
        cols.map((k) => r[k]),
      );
    }
    for (let i = 0; i < j.all.length; i++)
      await c.query("INSERT INTO documents (job_id, file, data) VALUES ($1, $2, $3)", [
        j.id,
        storedFile(j.all[i]!),
        j.bytes[i],
      ]);
    await addEvents(events);
    await c.query("COMMIT");
    return true;
  } catch (err) {
    await c.query("ROLLBACK").catch(() => undefined);
    throw err;
  }
}

/** Notifications (unique by dedupe key) and key/value state: a rerun adds only what is missing. */
async function copyNotificationsAndKv(
  c: pg.Client,
  db: Database.Database,
  source: MigrateCounts,
  copied: MigrateCounts,
): Promise<void> {
  const notes = db.prepare("SELECT * FROM notifications ORDER BY id").all() as Row[];
  source.notifications = notes.length;
  for (const n of notes) {
    const r = await c.query(
      insertSql("notifications", NOTE_COLS, "ON CONFLICT (dedupe_key) DO NOTHING"),
      NOTE_COLS.map((k) => n[k] ?? null),
    );
    copied.notifications += r.rowCount ?? 0;
  }
  // a key PostgreSQL already has is kept (an instance may have moved a cursor on)
  const kv = db.prepare("SELECT key, value FROM kv").all() as Array<{ key: string; value: string }>;
  source.kv = kv.length;
  for (const k of kv) {
    const r = await c.query("INSERT INTO kv (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", [
      k.key,
      k.value,
    ]);
    copied.kv += r.rowCount ?? 0;
  }
}

/** After the copy: every SQLite row must be in PostgreSQL (counted per table over the source's keys). */
async function verify(
  c: pg.Client,
  db: Database.Database,
  source: MigrateCounts,
  tables: Set<string>,
  copy: TablesCopy,
): Promise<void> {
  const ids = (db.prepare("SELECT id FROM jobs").all() as Array<{ id: string }>).map((r) => r.id);
  const one = async (sql: string, args: unknown[]): Promise<number> =>
    Number((await c.query<{ n: string }>(sql, args)).rows[0]!.n);
  const got = {
    jobs: await one("SELECT COUNT(*) AS n FROM jobs WHERE id = ANY($1)", [ids]),
    recipients: await one("SELECT COUNT(*) AS n FROM recipients WHERE job_id = ANY($1)", [ids]),
    documents: await one("SELECT COUNT(*) AS n FROM documents WHERE job_id = ANY($1)", [ids]),
    events: source.events === 0 ? 0 : await one("SELECT COUNT(*) AS n FROM job_events WHERE job_id = ANY($1)", [ids]),
    notifications: await one("SELECT COUNT(*) AS n FROM notifications WHERE dedupe_key = ANY($1)", [
      (db.prepare("SELECT dedupe_key FROM notifications").all() as Array<{ dedupe_key: string }>).map(
        (r) => r.dedupe_key,
      ),
    ]),
    kv: await one("SELECT COUNT(*) AS n FROM kv WHERE key = ANY($1)", [
      (db.prepare("SELECT key FROM kv").all() as Array<{ key: string }>).map((r) => r.key),
    ]),
    ledger: await one("SELECT COUNT(*) AS n FROM ledger WHERE seq <= $1", [source.ledger]),
    holds: tables.has("legal_holds")
      ? await one("SELECT COUNT(*) AS n FROM legal_holds WHERE id = ANY($1)", [
          (db.prepare("SELECT id FROM legal_holds").all() as Array<{ id: string }>).map((r) => r.id),
        ])
      : 0,
  };
  const short = (Object.keys(got) as Array<keyof typeof got>)
    .filter((k) => (k === "events" ? got[k] < source[k] : got[k] !== source[k]))
    .map((k) => `${k} ${got[k]} of ${source[k]}`);
  short.push(...(await verifyTables(c, db, tables, source, copy)));
  if (short.length > 0) {
    throw new FaxgateError("INTERNAL", `the copy is incomplete: ${short.join(", ")}; run it again`);
  }
}

async function readStored(dataDir: string, jobId: string, d: StoredDocument): Promise<Buffer> {
  // the recorded path, or the same file where the data folder is now (it may have been moved)
  for (const p of [d.path, path.join(dataDir, "documents", jobId, path.basename(d.path))]) {
    try {
      return await fsp.readFile(p);
    } catch {
      // try the next place
    }
  }
  throw new FaxgateError(
    "STORE_UNAVAILABLE",
    `job ${jobId}: its document ${JSON.stringify(d.name)} (${d.path}) cannot be read; nothing of that job was copied`,
    { temporary: false },
  );
}

function safePassword(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return "";
  }
}
