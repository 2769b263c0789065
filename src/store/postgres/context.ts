// What every part of the PostgreSQL store shares: the pool, the clock, the transaction with its
// retries, and the mapping of connection trouble to STORE_UNAVAILABLE. The parts (enqueue,
// leases, transitions, operator, notifications, kv, read, duties) are plain functions of this
// context, as the SQLite store's are of its own; PgStore (pg-store.ts) is the facade over them.
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { systemClock, type Clock } from "../../clock.js";
import { FaxgateError } from "../../errors.js";
import { silentLogger, type Logger } from "../../log/index.js";
import { isRetryable, redactDatabaseUrl, storeError } from "./connection.js";

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

/** A connection inside a transaction. */
export type Q = pg.PoolClient;

export interface PgContext {
  readonly url: string;
  /** The URL with its password masked, for messages and logs. */
  readonly shownUrl: string;
  readonly pool: pg.Pool;
  readonly clock: Clock;
  readonly log: Logger;
  readonly dataDir: string;
  /** Cached copies of documents, one folder per job. */
  readonly cacheDir: string;
  readonly dedupeWindowMs: number;
  /** Tells this instance's own NOTIFYs from the others' (it hears its own as well). */
  readonly instanceTag: string;
  /** Runs `fn` in one transaction; retries it on deadlock or serialization failure. */
  tx<T>(what: string, fn: (c: Q) => Promise<T>, tries?: number): Promise<T>;
  /** One statement outside a transaction. */
  q<R extends pg.QueryResultRow>(what: string, text: string, args?: unknown[]): Promise<pg.QueryResult<R>>;
  /** The clock's time as stored (ISO, UTC, fixed width). */
  now(): string;
  /** `err` as STORE_UNAVAILABLE (or what it is), without the password. */
  error(err: unknown, what: string): Error;
  /** True once the store is closed: every call then fails as STORE_UNAVAILABLE. */
  readonly closed: boolean;
  close(): void;
}

/** The NOTIFY channel of new jobs: "<instance tag> <job id>". */
export const JOBS_CHANNEL = "faxgate_jobs";

export { lockKey } from "../sql/db.js";

export function createPgContext(opts: PgStoreOptions): PgContext {
  const secrets = passwordSpellings(opts.url);
  const shownUrl = redactDatabaseUrl(opts.url);
  const log = opts.logger ?? silentLogger();
  const clock = opts.clock ?? systemClock;
  const dataDir = path.resolve(opts.dataDir);
  const error = (err: unknown, what: string): Error => storeError(err, what, secrets);
  const pool = openPool(opts, (err) =>
    log.warn({ database: shownUrl, err: error(err, "connection").message }, "PostgreSQL connection lost"),
  );
  let closed = false;
  const refuseClosed = (what: string): void => {
    if (closed) throw new FaxgateError("STORE_UNAVAILABLE", `${what}: the queue store is closed`, { temporary: true });
  };
  return {
    url: opts.url,
    shownUrl,
    pool,
    clock,
    log,
    dataDir,
    cacheDir: path.join(dataDir, "pg-documents"),
    dedupeWindowMs: opts.dedupeWindowMs ?? 24 * 60 * 60 * 1000,
    instanceTag: randomUUID(),
    error,
    now: () => new Date(clock.now()).toISOString(),
    get closed() {
      return closed;
    },
    close: () => {
      closed = true;
    },
    async tx(what, fn, tries = 4) {
      refuseClosed(what);
      return inTransaction(pool, error, what, fn, tries);
    },
    async q(what, text, args = []) {
      refuseClosed(what);
      try {
        return await pool.query(text, args);
      } catch (err) {
        throw error(err, what);
      }
    },
  };
}

/** The URL's password as written and as encoded: masked wherever an error could repeat it. */
function passwordSpellings(url: string): string[] {
  let password = "";
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    // the pool reports an unparsable URL itself
  }
  return [password, encodeURIComponent(password)].filter((s) => s.length > 0);
}

/** The pool, with its bounds, and connection trouble told to `lost` instead of crashing the process. */
function openPool(opts: PgStoreOptions, lost: (err: unknown) => void): pg.Pool {
  const pool = new pg.Pool({
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
  pool.on("error", lost);
  // A connection cut while it is checked out (mid-transaction) also emits 'error' on its client;
  // the query in flight fails (STORE_UNAVAILABLE) and the pool drops the client on release.
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

/** `fn` in one transaction, tried again (up to `tries`) on a deadlock or serialization failure. */
async function inTransaction<T>(
  pool: pg.Pool,
  error: (err: unknown, what: string) => Error,
  what: string,
  fn: (c: Q) => Promise<T>,
  tries: number,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    let client: Q;
    try {
      client = await pool.connect();
    } catch (err) {
      throw error(err, what);
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
      throw error(err, what);
    } finally {
      client.release(broken || undefined);
    }
  }
}

/** Tells the other instances of a new (or newly addressed) job, at COMMIT (not at all on a rollback). */
export async function notifyJob(ctx: PgContext, c: Q, id: string): Promise<void> {
  await c.query("SELECT pg_notify($1, $2)", [JOBS_CHANNEL, `${ctx.instanceTag} ${id}`]);
}
