// The SQLite file of a data folder, opened as the store needs it: WAL, synchronous=FULL, foreign
// keys on, the schema brought up to date, and the folder's entries on disk before any commit is
// reported durable.
import Database from "better-sqlite3";
import { closeSync, fsyncSync, mkdirSync, openSync } from "node:fs";
import path from "node:path";
import { FaxgateError } from "../../errors.js";
import { keepTempInMemory } from "./db-thread.js";
import { migrate } from "./migrations.js";

export function openDatabase(dataDir: string, documentsDir: string): Database.Database {
  try {
    mkdirSync(documentsDir, { recursive: true, mode: 0o750 });
    const db = new Database(path.join(dataDir, "faxgate.db"));
    db.pragma("busy_timeout = 10000");
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.pragma("foreign_keys = ON");
    keepTempInMemory(db);
    // the console's search folds case the way JavaScript does (SQLite's lower() knows only ASCII)
    db.function("fold_case", { deterministic: true }, (s: unknown) =>
      s === null || s === undefined ? null : String(s).toLowerCase(),
    );
    migrate(db);
    // The WAL (made by the pragma above) and the documents folder have their entries on disk
    // before any commit is reported durable: a new job's flush is the WAL's own fdatasync, which
    // flushes the file, not the folder's entry for it.
    const dirFd = openSync(dataDir, "r");
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
    return db;
  } catch (err) {
    throw new FaxgateError(
      "STORE_UNAVAILABLE",
      `the queue store in ${dataDir} cannot be opened: ${(err as Error).message}`,
      { cause: err, temporary: true },
    );
  }
}
