// What every part of the SQLite store shares: the connection, its statement cache, the clock and
// the write transaction. The parts (enqueue, leases, transitions, operator, notifications, kv,
// read) are plain functions of this context; SqliteStore (store.ts) is the facade over them.
import type Database from "better-sqlite3";
import type { Clock } from "../../clock.js";
import type { Logger } from "../../log/logger.js";
import type { WriteRequest } from "./intake-writer.js";

export interface SqliteContext {
  readonly db: Database.Database;
  readonly clock: Clock;
  readonly log: Logger;
  /** The folder with one sub-folder of documents per job. */
  readonly documentsDir: string;
  /** How long a dedupeKey is remembered. */
  readonly dedupeWindowMs: number;
  /** The compiled statement for `text`, compiled once. */
  sql(text: string): Database.Statement;
  /** The clock's time as stored (ISO, UTC, fixed width: text order is time order). */
  now(): string;
  /**
   * Runs `fn` in one write transaction (BEGIN IMMEDIATE: other processes wait, none deadlocks).
   * `blobBytes`: the documents the commit keeps in the database, which count toward the next WAL
   * checkpoint.
   */
  write<T>(fn: () => T, blobBytes?: number): T;
  /**
   * Intake's commit of a new job (intake-writer.ts): the request's statements in one transaction
   * on the intake thread, committed without waiting for the disk and then flushed there (when the
   * thread cannot run, on the main connection, synchronous=NORMAL for that one transaction, and
   * flushed by flushWal). Resolves once committed, with the guard's row when it found one (nothing
   * was then written), and `flush`, which the caller must await before it tells anyone the job is
   * stored (it rejects when the flush failed, and the commit stands). Rejects when nothing was
   * committed, or with CommitUncertainError when the thread stopped before it answered. Any later
   * commit of the default kind (FULL) flushes it too, so the dispatcher's claim of a job makes that
   * job durable before it is sent. `blobBytes` as for write().
   */
  commitIntake(
    request: WriteRequest,
    blobBytes: number,
  ): Promise<{ found?: Record<string, unknown>; flush(): Promise<void> }>;
  /**
   * While the checkpoint thread makes the WAL start again from its beginning (checkpointer.ts
   * holdCommits): a promise that intake awaits before its commitIntake; null the rest of the time.
   */
  commitsHeld(): Promise<void> | null;
  /**
   * The WAL on disk, then the data folder still writable (access(W_OK), see stillWritable): one
   * fdatasync and one access() shared by every caller waiting at the time, off the main thread.
   * Rejects with STORE_UNAVAILABLE when access() says no; on an ext4 stopped by an error
   * ("emergency_ro"), the fdatasync itself answers EROFS, as any fsync there does (checked on
   * 6.18, with and without a journal), so this is both of stillWritable's looks.
   */
  flushWal(): Promise<void>;
  /** The documents folder's entries on disk (a new job folder), one fsync for all who wait. */
  flushDocumentsDir(): Promise<void>;
  /**
   * Throws STORE_UNAVAILABLE when the data folder has become read-only. Called after a commit and
   * before anyone acts on it: an ext4 that older kernels remount read-only after an error answers
   * fsync with success without writing anything, so a commit at that moment looks durable and is
   * not. It asks twice: access(W_OK) sees such a read-only mount; an fsync of the data folder sees
   * a newer kernel's ext4 after an error (6.18 here), which only marks itself "emergency_ro": the
   * mount stays rw and access() says writable, while writes and fsyncs answer EROFS.
   * A new job's flushWal() asks the same without a flush of its own.
   */
  stillWritable(): Promise<void>;
}
