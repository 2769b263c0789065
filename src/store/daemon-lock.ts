// One daemon per data folder. Two daemons on one queue would each think the other's leases are
// stale; with the lock held, a starting daemon knows every lease it finds is from a run that is
// gone, and can take the work back at once instead of waiting for the leases to run out.
//
// The lock is an SQLite file in exclusive locking mode: SQLite takes an OS file lock (fcntl), which
// the kernel drops the moment the process dies, SIGKILL included, so a crash never leaves a stale
// lock behind (a pid file alone would). faxgate.pid beside it only names the holder for humans.
import Database from "better-sqlite3";
import { readFileSync } from "node:fs";
import path from "node:path";
import { FaxgateError } from "../errors.js";

export class DaemonLock {
  private constructor(private db: Database.Database | null) {}

  /** Takes the data folder's lock, or throws ALREADY_RUNNING naming the holder's pid when known. */
  static acquire(dataDir: string): DaemonLock {
    const file = path.join(dataDir, "daemon.lock");
    let db: Database.Database | null = null;
    try {
      db = new Database(file, { timeout: 0 });
      db.pragma("journal_mode = DELETE");
      db.pragma("locking_mode = EXCLUSIVE");
      // The first write takes the exclusive lock; in this locking mode it is kept until close.
      db.exec("BEGIN EXCLUSIVE");
      db.exec("CREATE TABLE IF NOT EXISTS holder (pid INTEGER, since TEXT)");
      db.exec("DELETE FROM holder");
      db.prepare("INSERT INTO holder VALUES (?, ?)").run(process.pid, new Date().toISOString());
      db.exec("COMMIT");
      return new DaemonLock(db);
    } catch (err) {
      db?.close();
      const code = (err as { code?: string }).code;
      if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
        const pid = readPid(dataDir);
        throw new FaxgateError(
          "ALREADY_RUNNING",
          `another faxgate daemon${pid ? ` (pid ${pid})` : ""} is already using the data folder ${dataDir}; stop it first, or give this one its own "data" folder`,
          { field: "data", cause: err },
        );
      }
      throw new FaxgateError("STORE_UNAVAILABLE", `the lock file ${file} cannot be used: ${(err as Error).message}`, {
        cause: err,
        temporary: true,
      });
    }
  }

  release(): void {
    this.db?.close();
    this.db = null;
  }
}

function readPid(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(path.join(dataDir, "faxgate.pid"), "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
