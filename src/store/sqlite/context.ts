// What SQLite's own part of the queue (enqueue.ts: documents in the job's folder, intake's commits
// on a thread of their own) shares: the clock, the intake writer and the flushes. The operations
// written once for both stores run on the query layer's port instead (sqlite-db.ts, ../sql/).
import type Database from "better-sqlite3";
import { constants as fsConstants, promises as fsp } from "node:fs";
import type { Clock } from "../../clock.js";
import type { Logger } from "../../log/index.js";
import type { Checkpointer } from "./checkpointer.js";
import type { DiskSyncs } from "./disk-syncs.js";
import type { Spliced } from "../sql/enqueue.js";
import { IntakeWriter, runRequest, type WriteRequest } from "./intake-writer.js";

export interface SqliteContext {
  readonly clock: Clock;
  readonly log: Logger;
  /** The folder with one sub-folder of documents per job. */
  readonly documentsDir: string;
  /** How long a dedupeKey is remembered. */
  readonly dedupeWindowMs: number;
  /** The clock's time as stored (ISO, UTC, fixed width: text order is time order). */
  now(): string;
  /**
   * Intake's commit of a new job (intake-writer.ts): the request's statements in one transaction
   * on the intake thread, committed without waiting for the disk and then flushed there (when the
   * thread cannot run, on the main connection, synchronous=NORMAL for that one transaction, and
   * flushed by flushWal). Resolves once committed, with the guard's row when it found one (nothing
   * was then written), and `flush`, which the caller must await before it tells anyone the job is
   * stored (it rejects when the flush failed, and the commit stands). Rejects when nothing was
   * committed, or with CommitUncertainError when the thread stopped before it answered. Any later
   * commit of the default kind (FULL) flushes it too, so the dispatcher's claim of a job makes that
   * job durable before it is sent. `blobBytes`: the documents the commit keeps in the database
   * (less what a splice of the original takes out, `spliced`), which count toward the next WAL
   * checkpoint.
   */
  commitIntake(
    request: WriteRequest,
    blobBytes: number,
  ): Promise<{ found?: Record<string, unknown>; spliced?: Spliced; flush(): Promise<void> }>;
  /**
   * While the checkpoint thread makes the WAL start again from its beginning (checkpointer.ts
   * holdCommits): a promise that intake awaits before its commitIntake; null the rest of the time.
   */
  commitsHeld(): Promise<void> | null;
  /**
   * The WAL on disk, then the data folder still writable (access(W_OK), see stillWritable): one
   * fdatasync and one access() shared by every caller waiting at the time, off the main thread.
   * Rejects with STORE_UNAVAILABLE when access() says no; on an ext4 stopped by an error the
   * fdatasync itself answers EROFS, so this is both of stillWritable's looks.
   */
  flushWal(): Promise<void>;
  /** The documents folder's entries on disk (a new job folder), one fsync for all who wait. */
  flushDocumentsDir(): Promise<void>;
  /**
   * Throws STORE_UNAVAILABLE when the data folder has become read-only, called after a commit and
   * before anyone acts on it, because a file system stopped by an error may answer fsync with
   * success and write nothing. It asks twice: access(W_OK) sees a read-only remount, an fsync of
   * the data folder an ext4 that stays rw but answers EROFS (docs/bench.md). A new job's
   * flushWal() asks the same without a flush of its own.
   */
  stillWritable(): Promise<void>;
}

/** SQL built with varying parts could grow the statement cache without bound: it starts again past this. */
const MAX_CACHED_STATEMENTS = 200;

/** Compiled statements by their SQL text: every enqueue, claim and poll reuses them. */
export function statementCache(db: Database.Database): (text: string) => Database.Statement {
  const statements = new Map<string, Database.Statement>();
  return (text) => {
    let stmt = statements.get(text);
    if (!stmt) {
      if (statements.size >= MAX_CACHED_STATEMENTS) statements.clear();
      stmt = db.prepare(text);
      statements.set(text, stmt);
    }
    return stmt;
  };
}

/**
 * Intake's commits on a thread of their own (intake-writer.ts), or, when it cannot run, on the
 * main connection without waiting for the disk (then flushed in groups by commitIntake).
 */
export function intakeWriter(
  db: Database.Database,
  dbFile: string,
  log: Logger,
  sql: (text: string) => Database.Statement,
): IntakeWriter {
  return new IntakeWriter(dbFile, log, (request) => {
    db.pragma("synchronous = NORMAL");
    try {
      return db.transaction(() => runRequest(sql, request)).immediate();
    } finally {
      db.pragma("synchronous = FULL");
    }
  });
}

/** The context the store's parts share, from the parts SqliteStore made. */
export function createContext(p: {
  clock: Clock;
  log: Logger;
  dataDir: string;
  documentsDir: string;
  dedupeWindowMs: number;
  checkpoints: Checkpointer;
  writer: IntakeWriter;
  syncs: DiskSyncs;
}): SqliteContext {
  const { clock, checkpoints, writer, syncs } = p;
  return {
    clock,
    log: p.log,
    documentsDir: p.documentsDir,
    dedupeWindowMs: p.dedupeWindowMs,
    now: () => new Date(clock.now()).toISOString(),
    commitIntake: async (request, blobBytes) => {
      const { found, spliced, flushed, notFlushed } = await writer.run(request);
      // only commits count toward the next checkpoint
      if (!found) checkpoints.committed(blobBytes - (spliced?.saved ?? 0));
      // the thread flushed the WAL (or could not: the commit stands, the caller answers "try
      // again"); a commit on the main connection (no thread) is flushed here, in groups
      const flush = (): Promise<void> => {
        if (!flushed) return syncs.wal.sync();
        if (!notFlushed) return Promise.resolve();
        const err = Object.assign(new Error(notFlushed.message), { code: notFlushed.code });
        return Promise.reject(notFlushed.step === "access" ? syncs.notWritable(err) : err);
      };
      return found ? { found, flush } : spliced ? { spliced, flush } : { flush };
    },
    commitsHeld: () => checkpoints.holdCommits(),
    flushWal: () => syncs.wal.sync(),
    flushDocumentsDir: () => syncs.documents.sync(),
    stillWritable: async () => {
      try {
        // both looks at once: each is a wait on the thread pool or the disk
        await Promise.all([fsp.access(p.dataDir, fsConstants.W_OK), syncs.dataDir.sync()]);
      } catch (err) {
        throw syncs.notWritable(err);
      }
    },
  };
}
