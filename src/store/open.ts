// The one place that decides which backend holds the queue: everything else gets a QueueStore.
import type { Clock } from "../clock.js";
import type { Logger } from "../log/index.js";
import type { MigrateReport } from "./postgres/migrate-sqlite.js";
import type { QueueStore } from "./queue-store.js";
import { SqliteStore } from "./sqlite/store.js";

export interface OpenStoreOptions {
  /** The data folder (SQLite: the database file and the documents live here). */
  dataDir: string;
  clock?: Clock;
  logger?: Logger;
  /** How long a dedupeKey is remembered (default 24 h). */
  dedupeWindowMs?: number;
  /** `database:` of the config: postgres://… for a queue shared by several gateways; absent: SQLite in dataDir. */
  database?: string;
  /** SQLite: the daemon's store, whose WAL checkpoint thread starts at once (sqlite/checkpointer.ts). */
  daemon?: boolean;
}

/**
 * Opens the queue the configuration names. SQLite in the data folder is the default; the
 * PostgreSQL backend (`database: postgres://…`) is chosen here too, and nowhere else.
 */
export async function openStore(opts: OpenStoreOptions): Promise<QueueStore> {
  if (opts.database) {
    // loaded only for PostgreSQL: a SQLite gateway's commands start without pg
    const { PgStore } = await import("./postgres/pg-store.js");
    return PgStore.open({
      url: opts.database,
      dataDir: opts.dataDir,
      clock: opts.clock,
      logger: opts.logger,
      dedupeWindowMs: opts.dedupeWindowMs,
    });
  }
  return openLocalStore(opts);
}

/** The embedded SQLite queue in the data folder, opened at once (for code that cannot wait). */
export function openLocalStore(opts: OpenStoreOptions): QueueStore {
  return SqliteStore.open({ ...opts, threadsNow: opts.daemon === true });
}

/** `faxgate store migrate`: the SQLite queue in a data folder into PostgreSQL (docs/ha.md). */
export async function migrateSqliteToPostgres(
  opts: Parameters<typeof import("./postgres/migrate-sqlite.js").migrateSqliteToPostgres>[0],
): Promise<MigrateReport> {
  return (await import("./postgres/migrate-sqlite.js")).migrateSqliteToPostgres(opts);
}
export type { MigrateReport };
/** A database URL as faxgate shows it: the password masked. */
export { redactDatabaseUrl } from "./postgres/connection.js";
