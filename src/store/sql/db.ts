// The one query layer's port: what a queue operation (the files beside this one) needs from a
// database, whichever it is. Operations are written once against it, with `?` placeholders; the
// two adapters (sqlite/sqlite-db.ts, postgres/pg-db.ts) run them, and `dialect()` holds the few
// statements that must differ, side by side (graphile-worker's src/sql, one file per operation).
import type { Clock } from "../../clock.js";

export type DialectName = "sqlite" | "postgres";

/** SQL text, the same for both, or one text per dialect where they must differ. */
export type Sql = string | Readonly<Record<DialectName, string>>;

/** The two texts of one statement, side by side (FOR UPDATE SKIP LOCKED, RETURNING, upserts...). */
export const dialect = (texts: Readonly<Record<DialectName, string>>): Sql => texts;

/** What a write statement did (a new row's key: INSERT ... RETURNING, which both speak). */
export interface RunResult {
  changes: number;
}

/** Statements on one connection: inside a transaction (tx's argument) or each on its own (Db). */
export interface Runner {
  readonly dialect: DialectName;
  all<R = Record<string, unknown>>(sql: Sql, args?: readonly unknown[]): Promise<R[]>;
  get<R = Record<string, unknown>>(sql: Sql, args?: readonly unknown[]): Promise<R | undefined>;
  run(sql: Sql, args?: readonly unknown[]): Promise<RunResult>;
  /**
   * Inside a transaction: makes others that lock `key` wait until this one ends, so that a check
   * and the write it allows cannot interleave with another gateway's. PostgreSQL: an advisory
   * transaction lock on lockKey(key); SQLite: nothing to do, BEGIN IMMEDIATE already lets one
   * writer at a time in.
   */
  lock(key: string): Promise<void>;
  /**
   * lock()'s counterpart that does not wait: true when this transaction now holds `key`, false
   * when another holds it (PostgreSQL: pg_try_advisory_xact_lock; SQLite: always true).
   */
  tryLock(key: string): Promise<boolean>;
}

export interface TxOptions {
  /** SQLite: documents the commit keeps in the database (they count toward the next WAL checkpoint). */
  blobBytes?: number;
}

export interface Db extends Runner {
  readonly clock: Clock;
  /**
   * `fn` in one write transaction, committed when it resolves, rolled back when it throws.
   * SQLite: BEGIN IMMEDIATE, one transaction at a time on the connection (others wait their turn).
   * PostgreSQL: a pooled connection, tried again on a serialization failure or deadlock (so `fn`
   * must not act outside the database). `what` names the step in a STORE_UNAVAILABLE message.
   */
  tx<T>(what: string, fn: (t: Runner) => Promise<T>, opts?: TxOptions): Promise<T>;
  /**
   * Inside `t`, tells the other gateways sharing the queue of a job that has become sendable,
   * when `t` commits (PostgreSQL: NOTIFY; SQLite: nothing, its store calls its own listeners).
   */
  announce(t: Runner, jobId: string): Promise<void>;
}

/** Advisory-lock keys: one text → int4 hash per purpose, computed by PostgreSQL (hashtext). */
export const lockKey = (what: string): string => `faxgate:${what}`;

/** The clock's time as stored (ISO, UTC, fixed width: text order is time order). */
export const nowIso = (db: { clock: Clock }): string => new Date(db.clock.now()).toISOString();

/** The text of `sql` in `d`. */
export const textFor = (sql: Sql, d: DialectName): string => (typeof sql === "string" ? sql : sql[d]);

const numbered = new Map<string, string>();

/**
 * `?` placeholders as PostgreSQL's `$1, $2...`, converted once per text and cached (every claim
 * and poll reuses its text). A `?` inside a quoted string or identifier is left alone.
 */
export function toNumbered(text: string): string {
  const cached = numbered.get(text);
  if (cached !== undefined) return cached;
  let out = "";
  let n = 0;
  let quote: string | null = null;
  for (const ch of text) {
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === "?") {
      out += `$${++n}`;
      continue;
    }
    out += ch;
  }
  // texts built with varying parts (IN lists) could grow the cache without bound
  if (numbered.size >= 500) numbered.clear();
  numbered.set(text, out);
  return out;
}

/** `?, ?, ?` for an IN list of `n` values (callers pass a non-empty list). */
export const marks = (n: number): string => Array.from({ length: n }, () => "?").join(", ");

/** One statement whose text differs in a part: `fn` writes it for each dialect. */
export const perDialect = (fn: (d: DialectName) => string): Sql =>
  dialect({ sqlite: fn("sqlite"), postgres: fn("postgres") });

/** `column IN (<the values of one JSON array parameter>)`, for lists of any length. */
export const inJson = (column: string, d: DialectName): string =>
  d === "sqlite"
    ? `${column} IN (SELECT value FROM json_each(?))`
    : `${column} IN (SELECT json_array_elements_text(?::json))`;
