// The store's threads (checkpointer.ts: WAL checkpoints; intake-writer.ts: intake's commits), each
// a typed module of its own (checkpoint-thread.ts, intake-thread.ts) with a connection of its own
// to the queue's database, started the one way faxgate starts threads (workers/off-thread.ts).
import { parentPort, workerData, type Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { startThread } from "../../workers/index.js";

/** What every store thread is given: the database file (which must exist), and its busy_timeout. */
export interface DbThreadData {
  file: string;
  busyMs: number;
}

/**
 * The thread running `module` on the database `file` (`data`: more of its workerData), let go
 * (unref): it does not keep the process alive by itself. `stopped` hears of its error or its exit.
 */
export function startDbThread(
  module: URL,
  file: string,
  busyMs: number,
  data: Record<string, unknown>,
  stopped: (err: Error) => void,
): Worker {
  const w = startThread(module, { ...data, file, busyMs } satisfies DbThreadData & Record<string, unknown>);
  w.unref();
  w.on("error", stopped);
  w.on("exit", (code) => stopped(new Error(`the thread stopped (exit code ${code})`)));
  return w;
}

/**
 * SQLite's temporary files (a savepoint's journal past 64 KiB, a sort too big for its cache) go to
 * /var/tmp by default, holding pages of the queue: a fax's rows and bytes outside the data folder,
 * on a disk the office may not have meant for them, and a file made and unlinked per spill. Kept
 * in memory instead: every connection on the data folder's database says so.
 */
export function keepTempInMemory(db: Database.Database): void {
  db.pragma("temp_store = MEMORY");
}

/** In the thread: its connection, its port to the main thread, and its workerData. */
export function threadDb<T extends DbThreadData>(): {
  db: Database.Database;
  port: NonNullable<typeof parentPort>;
  data: T;
} {
  if (!parentPort) throw new Error("a store thread module runs only as a worker thread");
  const data = workerData as T;
  const db = new Database(data.file, { fileMustExist: true });
  db.pragma(`busy_timeout = ${Number(data.busyMs)}`);
  keepTempInMemory(db);
  return { db, port: parentPort, data };
}
