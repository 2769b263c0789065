// The compliance ledger's table and its statements, written once for both stores (src/ledger/
// holds what a row means and how the chain is hashed). One chain per store, sealed under the
// ledger's lock: the head read and the next rows written in one transaction, so several gateways
// on one PostgreSQL append 1, 2, 3... without a gap or a fork. Where the rows wait for that lock
// is where the dialects differ:
// - SQLite seals each row as it is appended: its BEGIN IMMEDIATE already lets one writer in at a
//   time, and the seal costs 0.2 ms (bench/ledger-append-profile.ts).
// - PostgreSQL commits each row unsealed into ledger_pending with what it records (no lock, no
//   head read), and one writer at a time seals the pending rows into the chain in batches
//   (sealPending, run by ledger/sealer.ts on any gateway): holding the chain's lock across every
//   writer's commit made committing writers queue one flush each (1.3x the accept time).
// The row's hash is sealed here, once, for every writer: SqlLedger, the sealer, and the intake
// thread that appends a job's rows inside the job's own commit.
import { type DialectName, type Db, dialect, marks, type Runner } from "./db.js";
import { sha256Hex } from "../../sha256.js";

/** The table, as both backends create it (sqlite/migrations.ts, postgres/schema.ts). Shipped: never edit. */
export function ledgerTable(): string {
  return `
  CREATE TABLE ledger (
    seq INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    action TEXT NOT NULL,
    actor_kind TEXT NOT NULL,
    actor_id TEXT,
    object_kind TEXT NOT NULL,
    object_id TEXT NOT NULL,
    door TEXT NOT NULL,
    client TEXT,
    number_hash TEXT,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
  );
  CREATE INDEX ledger_at ON ledger(at);
  CREATE INDEX ledger_object ON ledger(object_kind, object_id);
  CREATE INDEX ledger_actor ON ledger(actor_id) WHERE actor_id IS NOT NULL;
  CREATE INDEX ledger_number ON ledger(number_hash) WHERE number_hash IS NOT NULL;
  `;
}

/**
 * STEP (issue 56, branch ledger7): rows committed but not yet sealed into the chain (PostgreSQL's
 * append; SQLite seals at once and leaves it empty). `id` only orders the sealing. Shipped once
 * merged: never edit.
 */
export function ledgerPendingTable(d: DialectName): string {
  return `
  CREATE TABLE ledger_pending (
    id ${d === "sqlite" ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY"},
    at TEXT NOT NULL,
    action TEXT NOT NULL,
    actor_kind TEXT NOT NULL,
    actor_id TEXT,
    object_kind TEXT NOT NULL,
    object_id TEXT NOT NULL,
    door TEXT NOT NULL,
    client TEXT,
    number_hash TEXT,
    detail TEXT NOT NULL
  );
  `;
}

/** A row's columns as stored. */
export interface LedgerRecord {
  seq: number;
  at: string;
  action: string;
  actor_kind: string;
  actor_id: string | null;
  object_kind: string;
  object_id: string;
  door: string;
  client: string | null;
  number_hash: string | null;
  /** JSON, written by the ledger in one canonical form (its hash covers this text) */
  detail: string;
  prev_hash: string;
  hash: string;
}

/** The chain's first row's prevHash. */
export const GENESIS_HASH = "0".repeat(64);

const COLUMNS =
  "seq, at, action, actor_kind, actor_id, object_kind, object_id, door, client, number_hash, detail, prev_hash, hash";

/** The same columns as a list (store migrate copies rows column by column). */
export const LEDGER_COLUMNS: readonly string[] = COLUMNS.split(", ");

/** A row as its writer gives it: the chain's part (seq, prev_hash, hash) is filled in at the append. */
export type LedgerFields = Omit<LedgerRecord, "seq" | "prev_hash" | "hash">;

/**
 * The ledger rows a new job brings (accept.ts: one "sent" row per recipient), made once its id
 * and recipients are known and before its commit.
 */
export type JobLedgerRows = (job: {
  id: string;
  recipients: ReadonlyArray<{ idx: number; number: string }>;
}) => LedgerFields[];

/** The text a row's hash is taken over: a JSON array in a fixed order (no field runs into the next). */
export function canonicalRow(r: Omit<LedgerRecord, "hash">): string {
  return JSON.stringify([
    r.seq,
    r.at,
    r.action,
    r.actor_kind,
    r.actor_id,
    r.object_kind,
    r.object_id,
    r.door,
    r.client,
    r.number_hash,
    r.detail,
    r.prev_hash,
  ]);
}

export const sealRow = (r: Omit<LedgerRecord, "hash">): string => sha256Hex(canonicalRow(r));

/** The head the next row follows (read inside the appending transaction). */
export const LEDGER_HEAD_SQL = "SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1";
export const LEDGER_INSERT_SQL = `INSERT INTO ledger (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/** The row that follows `head`, sealed, and its INSERT's parameters. */
export function nextLedgerRow(
  head: { seq: number | string; hash: string } | undefined,
  fields: LedgerFields,
): { row: LedgerRecord; params: unknown[] } {
  // the same keys in the same order as { ...fields, seq, prev_hash } (Object.assign: docs/bench.md
  // "keys added after a spread")
  const unsealed = Object.assign({}, fields, {
    seq: head ? Number(head.seq) + 1 : 1,
    prev_hash: head?.hash ?? GENESIS_HASH,
  });
  const row: LedgerRecord = Object.assign({}, unsealed, { hash: sealRow(unsealed) });
  const params = [
    row.seq,
    row.at,
    row.action,
    row.actor_kind,
    row.actor_id,
    row.object_kind,
    row.object_id,
    row.door,
    row.client,
    row.number_hash,
    row.detail,
    row.prev_hash,
    row.hash,
  ];
  return { row, params };
}

const FIELD_COLUMNS = LEDGER_COLUMNS.filter((c) => c !== "seq" && c !== "prev_hash" && c !== "hash");
const fieldParams = (f: LedgerFields): unknown[] => FIELD_COLUMNS.map((c) => f[c as keyof LedgerFields]);

/**
 * Appends one row inside `t`. SQLite: sealed at once (the head read, the row sealed and inserted;
 * record last in a transaction). PostgreSQL: committed unsealed with `t`, for the sealer.
 */
export async function appendLedger(t: Runner, fields: LedgerFields): Promise<void> {
  if (t.dialect === "postgres") {
    await t.run(`INSERT INTO ledger_pending (${FIELD_COLUMNS.join(", ")}) VALUES (${marks(FIELD_COLUMNS.length)})`, [
      ...fieldParams(fields),
    ]);
    return;
  }
  await t.lock("ledger");
  const next = nextLedgerRow(await t.get<{ seq: number | string; hash: string }>(LEDGER_HEAD_SQL), fields);
  await t.run(LEDGER_INSERT_SQL, next.params);
}

const DELETE_SEALED = dialect({
  sqlite: "DELETE FROM ledger_pending WHERE id IN (SELECT value FROM json_each(?))",
  postgres: "DELETE FROM ledger_pending WHERE id IN (SELECT json_array_elements_text(?::json)::bigint)",
});

/** Rows sealed in one transaction at most (13 parameters a row stay far below either limit). */
export const LEDGER_SEAL_BATCH = 500;

/**
 * Seals up to LEDGER_SEAL_BATCH pending rows into the chain inside `t`, oldest first: the ledger's lock
 * (one sealer at a time in the fleet; `store migrate` takes it too), the head read, the rows
 * sealed, inserted and taken from ledger_pending. Answers how many it sealed (LEDGER_SEAL_BATCH: more
 * may wait).
 */
export async function sealPending(t: Runner): Promise<number> {
  await t.lock("ledger");
  // READ COMMITTED: the rows committed while this waited for the lock are seen here
  const pending = await t.all<LedgerFields & { id: number | string }>(
    `SELECT id, ${FIELD_COLUMNS.join(", ")} FROM ledger_pending ORDER BY id LIMIT ${LEDGER_SEAL_BATCH}`,
  );
  if (pending.length === 0) return 0;
  let head = await t.get<{ seq: number | string; hash: string }>(LEDGER_HEAD_SQL);
  const params: unknown[] = [];
  for (const { id: _id, ...fields } of pending) {
    const next = nextLedgerRow(head, fields);
    params.push(...next.params);
    head = next.row;
  }
  const row = `(${marks(LEDGER_COLUMNS.length)})`;
  await t.run(`INSERT INTO ledger (${COLUMNS}) VALUES ${pending.map(() => row).join(", ")}`, params);
  await t.run(DELETE_SEALED, [JSON.stringify(pending.map((p) => Number(p.id)))]);
  return pending.length;
}

/** How many rows wait to be sealed, and the time the oldest was recorded at. */
export async function ledgerPending(db: Db | Runner): Promise<{ count: number; oldest: string | null }> {
  const r = await db.get<{ n: number | string; oldest: string | null }>(
    "SELECT COUNT(*) AS n, MIN(at) AS oldest FROM ledger_pending",
  );
  return { count: Number(r?.n ?? 0), oldest: r?.oldest ?? null };
}

/** A statement on a synchronous connection (better-sqlite3's prepared statement, as its caller caches it). */
type SyncStatement = { get(...params: unknown[]): unknown; run(...params: unknown[]): unknown };

/**
 * The same append on SQLite's synchronous connection (the intake thread, or the main connection
 * standing in for it), inside the caller's transaction: its BEGIN IMMEDIATE is the ledger's lock.
 */
export function appendLedgerSync(sql: (text: string) => SyncStatement, fields: LedgerFields): void {
  const head = sql(LEDGER_HEAD_SQL).get() as { seq: number; hash: string } | undefined;
  sql(LEDGER_INSERT_SQL).run(...nextLedgerRow(head, fields).params);
}

export interface LedgerQuery {
  since?: string;
  until?: string;
  /** the actor's id or, for a person, the object's */
  user?: string;
  object?: { kind: string; id: string };
  action?: string;
  numberHash?: string;
  /** rows after this seq (paging through the whole chain) */
  afterSeq?: number;
  /** rows before this seq (the console's next page, newest first) */
  beforeSeq?: number;
  limit?: number;
  /** newest first (the console) instead of the chain's order */
  newestFirst?: boolean;
}

const withNumbers = (r: LedgerRecord): LedgerRecord => ({ ...r, seq: Number(r.seq) });

/** Rows matching `q`, in chain order (or newest first). */
export async function ledgerRows(db: Db | Runner, q: LedgerQuery = {}): Promise<LedgerRecord[]> {
  const where: string[] = [];
  const args: unknown[] = [];
  const add = (cond: string, ...values: unknown[]): void => {
    where.push(cond);
    args.push(...values);
  };
  if (q.since !== undefined) add("at >= ?", q.since);
  if (q.until !== undefined) add("at < ?", q.until);
  if (q.user !== undefined) add("(actor_id = ? OR (object_kind = 'person' AND object_id = ?))", q.user, q.user);
  // a job's rows include its recipients' (<job id>#<idx>)
  if (q.object?.kind === "job")
    add(
      "((object_kind = 'job' AND object_id = ?) OR (object_kind = 'recipient' AND object_id LIKE ?))",
      q.object.id,
      `${q.object.id}#%`,
    );
  else if (q.object) add("object_kind = ? AND object_id = ?", q.object.kind, q.object.id);
  if (q.action !== undefined) add("action = ?", q.action);
  if (q.numberHash !== undefined) add("number_hash = ?", q.numberHash);
  if (q.afterSeq !== undefined) add("seq > ?", q.afterSeq);
  if (q.beforeSeq !== undefined) add("seq < ?", q.beforeSeq);
  const limit = q.limit !== undefined ? ` LIMIT ${Math.max(0, Math.floor(q.limit))}` : "";
  const sql = `SELECT ${COLUMNS} FROM ledger${where.length ? ` WHERE ${where.join(" AND ")}` : ""}
    ORDER BY seq ${q.newestFirst ? "DESC" : "ASC"}${limit}`;
  return (await db.all<LedgerRecord>(sql, args)).map(withNumbers);
}

/** The chain's last row, or undefined while it is empty. */
export async function ledgerHead(db: Db | Runner): Promise<LedgerRecord | undefined> {
  const r = await db.get<LedgerRecord>(`SELECT ${COLUMNS} FROM ledger ORDER BY seq DESC LIMIT 1`);
  return r && withNumbers(r);
}
