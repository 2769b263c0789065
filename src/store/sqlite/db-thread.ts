// The store's threads (checkpointer.ts: WAL checkpoints; intake-writer.ts: intake's commits), each
// with a connection of its own to the queue's database. Their scripts are plain JavaScript run by
// eval, so that they need no loader in tests or in the built daemon alike.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * A thread's script: `parentPort` and `workerData` at hand, and `db`, the thread's connection to
 * workerData.file (which must exist) with `busyMs` of busy_timeout; then `body`.
 */
export function dbThreadScript(busyMs: number, body: string): string {
  return `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = ${busyMs}');
${body}`;
}

/**
 * The thread running `script` on the database `file` (`data`: more of workerData), let go (unref):
 * it does not keep the process alive by itself. `stopped` hears of its error or its exit.
 */
export function startDbThread(script: string, file: string, data: Record<string, unknown>, stopped: (err: Error) => void): Worker {
  // execArgv: none of the process's own (--input-type=module would make the script a module)
  const w = new Worker(script, { eval: true, execArgv: [], workerData: { ...data, driver: DRIVER, file } });
  w.unref();
  w.on('error', stopped);
  w.on('exit', (code) => stopped(new Error(`the thread stopped (exit code ${code})`)));
  return w;
}
