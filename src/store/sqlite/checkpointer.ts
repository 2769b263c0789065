// SQLite copies the WAL back into the database file (a checkpoint) on the connection that commits,
// by default each time the WAL has grown by 1,000 pages: on the daemon's main thread, inside a
// commit, where it wrote and fsynced the database file for 25 to 130 ms (measured at a steady 100
// msg/s; commits otherwise take under 5 ms) while every SMTP session waited. So the main
// connection's automatic checkpoints are off, and a connection of its own on a worker thread does
// them instead, PASSIVE (it never waits for a writer, nor makes one wait), each time the WAL has
// grown by about CHECKPOINT_EVERY_PAGES pages (counted from the commits). The daemon starts the
// thread with the store (its descriptors are there from the start, not added in the middle of a
// run); elsewhere it starts with the first checkpoint, so a CLI command that commits a few times
// never starts one. If the thread cannot
// run, the main connection checkpoints for itself again, as SQLite does by default, so the WAL
// never grows without bound.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { Logger } from '../../log/logger.js';

/**
 * SQLite's own default. A commit is counted as COMMIT_PAGES pages (a new job's rows and indexes
 * write 5 to 15) plus the documents it keeps in the database: a small mail's 173 KB are some 45
 * pages more, and counted as one commit, the WAL grew to 9,000 pages (36 MB) between two
 * checkpoints, each then a burst of writes and a long fsync on the disk that the next commits'
 * flushes wait for.
 */
export const CHECKPOINT_EVERY_PAGES = 1000;
export const COMMIT_PAGES = 8;

// Plain JavaScript run as the thread's script (eval), so that it needs no loader in tests or in
// the built daemon alike.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
// one read now opens the WAL and its index: every descriptor the thread will hold, held from here
db.prepare('SELECT count(*) FROM sqlite_master').get();
parentPort.on('message', (m) => {
  if (m === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, busy: r.busy, log: r.log, checkpointed: r.checkpointed });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String(err && err.message || err) });
  }
});
`;

const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

export class Checkpointer {
  private pages = 0;
  private readonly pageSize: number;
  private worker: Worker | null = null;
  private running = false;
  private failed = false;
  private closed = false;
  /** checkpoints done by the thread (for the tests) */
  done = 0;

  constructor(
    private readonly db: Database.Database,
    private readonly file: string,
    private readonly log: Logger,
  ) {
    db.pragma('wal_autocheckpoint = 0');
    this.pageSize = Number(db.pragma('page_size', { simple: true })) || 4096;
  }

  /** One more commit on the main connection, with `blobBytes` of documents in it. */
  committed(blobBytes = 0): void {
    if (this.failed || this.closed) return;
    this.pages += COMMIT_PAGES + Math.ceil(blobBytes / this.pageSize);
    if (this.pages < CHECKPOINT_EVERY_PAGES || this.running) return;
    this.pages = 0;
    this.running = true;
    try {
      (this.worker ??= this.spawn()).postMessage('checkpoint');
    } catch (err) {
      this.fallBack(err);
    }
  }

  /** The thread now, before it is needed (the daemon). */
  start(): void {
    if (this.worker || this.failed || this.closed) return;
    try {
      this.worker = this.spawn();
    } catch (err) {
      this.fallBack(err);
    }
  }

  private spawn(): Worker {
    const w = new Worker(THREAD, { eval: true, workerData: { driver: DRIVER, file: this.file } });
    w.unref();
    w.on('message', (m: { ok: boolean; error?: string }) => {
      this.running = false;
      if (m.ok) this.done += 1;
      // a checkpoint that failed (a disk gone read-only...) is tried again after the next commits
      else this.log.warn({ err: m.error }, 'WAL checkpoint failed; trying again later');
    });
    w.on('error', (err) => this.fallBack(err));
    w.on('exit', () => {
      if (!this.closed) this.fallBack(new Error('the checkpoint thread stopped'));
    });
    return w;
  }

  /** The thread cannot help: SQLite's own checkpoints on the main connection again. */
  private fallBack(err: unknown): void {
    if (this.failed || this.closed) return;
    this.failed = true;
    this.running = false;
    this.worker = null;
    this.log.warn({ err: (err as Error)?.message ?? String(err) }, 'WAL checkpoints are back on the main thread');
    try {
      this.db.pragma('wal_autocheckpoint = 1000');
    } catch {
      // the connection is closing
    }
  }

  /**
   * Before the main connection closes (which checkpoints the rest itself, as the last one): the
   * thread's end, or null when none was started (the caller then closes at once, as before).
   */
  close(): Promise<void> | null {
    this.closed = true;
    const w = this.worker;
    this.worker = null;
    if (!w) return null;
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    w.postMessage('close');
    const timer = setTimeout(() => void w.terminate(), 5000);
    return exited.finally(() => clearTimeout(timer));
  }
}
