// WAL checkpoints on a worker thread of their own, PASSIVE, every CHECKPOINT_EVERY_BYTES of WAL,
// because SQLite's automatic ones run inside a commit on the main thread, where every SMTP session
// waits for them. After a pass, every RESTART_EVERY_BYTES, a short second pass holds intake's
// commits (holdCommits) so the WAL can start again from its beginning: under a steady stream of
// commits it otherwise grows without end. A pass that a slow disk holds up would let the WAL grow
// by everything committed meanwhile: past HOLD_AT_BYTES since the last restart, intake's commits
// wait for the pass too. If the thread cannot run, the main connection
// checkpoints for itself, as SQLite does by default. Figures: docs/bench.md, "Why the store writes
// the way it does".
import type { Worker } from "node:worker_threads";
import type Database from "better-sqlite3";
import type { Logger } from "../../log/index.js";
import { startDbThread } from "./db-thread.js";

/**
 * SQLite's own default (1,000 pages) at its default page size, 4 KB; counted in bytes, for a
 * database's page size is the one it was made with (a file made elsewhere may differ). A commit is counted as
 * COMMIT_PAGES pages (a new job's rows and indexes write 5 to 15) plus the documents it keeps in
 * the database: a small mail's 173 KB are some 45 pages of 4 KB more, and counted as one commit,
 * the WAL grew to 36 MB between two checkpoints, each then a burst of writes and a long fsync on
 * the disk that the next commits' flushes wait for.
 */
export const CHECKPOINT_EVERY_BYTES = 1000 * 4096;
export const COMMIT_PAGES = 8;
/**
 * The WAL is made to start again after this much committed (16 MB), not after every pass: each
 * restart holds intake's commits for 5 to 10 ms, and after every pass that added up to 1.9 s in
 * 6,000 mails under smtp-source (0.7 s so; docs/bench.md). The WAL stays within about twice this.
 */
export const RESTART_EVERY_BYTES = 4 * CHECKPOINT_EVERY_BYTES;
/**
 * Bytes committed since the last restart past which intake's commits wait for the thread's pass in
 * progress (at most HOLD_LIMIT_MS at a time): one pass that met a slow fsync let 70 MB in.
 */
export const HOLD_AT_BYTES = 2 * RESTART_EVERY_BYTES;
/** The WAL's size on disk past which a restart cuts it back (SQLite's journal_size_limit). */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;
/** Intake's commits wait at most this long for the short pass and the restart (a disk that stalls). */
export const HOLD_LIMIT_MS = 1000;

/** The thread's answer (checkpoint-thread.ts). */
export interface Reply {
  ok: boolean;
  error?: string;
  log?: number;
  checkpointed?: number;
  restarted?: boolean;
}

/** SQLite's own checkpoints, when the thread cannot run: as often as the thread's, in pages. */
const fallbackPages = (pageSize: number): number => Math.ceil(CHECKPOINT_EVERY_BYTES / pageSize);

const THREAD = new URL("./checkpoint-thread.js", import.meta.url);

export class Checkpointer {
  /** bytes of WAL committed since the last pass */
  private bytes = 0;
  /** bytes committed since the WAL last started again from its beginning */
  private sinceRestart = 0;
  private readonly pageSize: number;
  private worker: Worker | null = null;
  /** What the thread is doing: nothing, the long pass, or the short pass and the restart. */
  private phase: "idle" | "pass" | "finish" = "idle";
  private failed = false;
  private closed = false;
  /** While the short pass and the restart run: intake's commits wait for this (holdCommits). */
  private held: { until: Promise<void>; release: () => void } | null = null;
  /** What the restart waits for once intake's commits are held: those already under way (store.ts). */
  private settled: () => Promise<void> = () => Promise.resolve();
  /** checkpoints done by the thread (for the tests) */
  done = 0;
  /** WAL restarts made by the thread (for the tests) */
  restarts = 0;

  constructor(
    private readonly db: Database.Database,
    private readonly file: string,
    private readonly log: Logger,
  ) {
    db.pragma("wal_autocheckpoint = 0");
    this.pageSize = Number(db.pragma("page_size", { simple: true }));
  }

  /** One more commit (the main connection's or the intake thread's), with `blobBytes` of documents in it. */
  committed(blobBytes = 0): void {
    if (this.failed || this.closed) return;
    const bytes = (COMMIT_PAGES + Math.ceil(blobBytes / this.pageSize)) * this.pageSize;
    this.bytes += bytes;
    this.sinceRestart += bytes;
    if (this.phase !== "idle") {
      if (this.sinceRestart >= HOLD_AT_BYTES) this.hold();
      return;
    }
    if (this.bytes < CHECKPOINT_EVERY_BYTES) return;
    this.bytes = 0;
    this.phase = "pass";
    try {
      (this.worker ??= this.spawn()).postMessage("checkpoint");
    } catch (err) {
      this.fallBack(err);
    }
  }

  /**
   * While the thread makes its short pass and restarts the WAL, or while a pass runs late (see
   * HOLD_AT_BYTES): a promise that intake awaits before it commits (at most HOLD_LIMIT_MS); null
   * the rest of the time.
   */
  holdCommits(): Promise<void> | null {
    return this.held?.until ?? null;
  }

  /** The thread's answer: after the long pass, the short one with intake's commits held; after that, the cycle's end. */
  private answered(w: Worker, m: Reply): void {
    const phase = this.phase;
    if (m.ok) this.done += 1;
    // a checkpoint that failed (a disk gone read-only...) is tried again after the next commits
    else this.log.warn({ err: m.error }, "WAL checkpoint failed; trying again later");
    if (phase === "pass" && m.ok && !this.closed && this.sinceRestart >= RESTART_EVERY_BYTES) {
      let posted = false;
      const finish = (): void => {
        if (posted || this.phase !== "finish" || this.worker !== w) return;
        posted = true;
        w.postMessage("finish");
      };
      // commits held while the pass ran late go on to the settling below; the short pass holds
      // the next ones afresh (and is asked for at the limit all the same, should the intake thread
      // not have answered yet)
      this.releaseCommits();
      this.hold(finish);
      this.phase = "finish";
      // intake's commits already sent to their thread are answered first: one of them between the
      // two passes would keep the WAL from restarting
      void this.settled().then(finish);
      return;
    }
    if (phase === "finish" && m.restarted) {
      this.restarts += 1;
      this.sinceRestart = 0;
    }
    this.releaseCommits();
    this.phase = "idle";
  }

  /** `fn`: what must be answered before the restart, once intake's commits are held. */
  beforeRestart(fn: () => Promise<void>): void {
    this.settled = fn;
  }

  /**
   * Intake's commits wait from now until released, or HOLD_LIMIT_MS at most: a disk that stalls a
   * thread does not hold intake longer (`atLimit` is then called too).
   */
  private hold(atLimit?: () => void): void {
    if (this.held) return;
    let resolve!: () => void;
    const until = new Promise<void>((r) => (resolve = r));
    const timer = setTimeout(() => {
      this.releaseCommits();
      atLimit?.();
    }, HOLD_LIMIT_MS);
    timer.unref();
    this.held = {
      until,
      release: () => {
        clearTimeout(timer);
        resolve();
      },
    };
  }

  private releaseCommits(): void {
    const held = this.held;
    this.held = null;
    held?.release();
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
    const w = startDbThread(THREAD, this.file, 5000, {}, (err) => {
      if (!this.closed) this.fallBack(err);
    });
    w.on("message", (m: Reply) => this.answered(w, m));
    return w;
  }

  /** The thread cannot help: SQLite's own checkpoints on the main connection again. */
  private fallBack(err: unknown): void {
    if (this.failed || this.closed) return;
    this.failed = true;
    this.releaseCommits();
    this.phase = "idle";
    this.worker = null;
    this.log.warn({ err: (err as Error)?.message ?? String(err) }, "WAL checkpoints are back on the main thread");
    try {
      this.db.pragma(`wal_autocheckpoint = ${fallbackPages(this.pageSize)}`);
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
    this.releaseCommits();
    const w = this.worker;
    this.worker = null;
    if (!w) return null;
    const exited = new Promise<void>((resolve) => w.once("exit", () => resolve()));
    w.postMessage("close");
    const timer = setTimeout(() => void w.terminate(), 5000);
    return exited.finally(() => clearTimeout(timer));
  }
}
