// Intake's way into the queue: documents placed durably in the job's folder (a file intake wrote
// whole renamed in; others written under a temp name, fsynced and renamed; then every fsync still
// owed, files and folders, at once), then the job row committed; small documents given as bytes
// go into the database with the row instead (types.ts SMALL_DOCUMENT_BYTES); unreadable input
// kept as a corrupt job.
import { promises as fsp } from "node:fs";
import path from "node:path";
import { FaxgateError, isFaxgateError } from "../../errors.js";
import { fsyncDir, syncFile } from "../../fs/index.js";
import { moveInUnsynced, placeFile, safeFileName } from "../durable-files.js";
import { newJobId } from "../job-id.js";
import type { Db } from "../sql/db.js";
import * as enq from "../sql/enqueue.js";
import { jobById } from "../sql/read.js";
import { SMALL_DOCUMENT_BYTES, type Job, type NewDocument, type NewJob, type StoredDocument } from "../types.js";
import type { SqliteContext } from "./context.js";
import { CommitUncertainError } from "./intake-writer.js";

/** Jobs are handed out as stored: their documents' paths are this data folder's. */
const same = (job: Job): Job => job;

/** The newest job with this dedupe key within the window. */
async function findDuplicate(c: SqliteContext, db: Db, key: string): Promise<Job | null> {
  const [text, params] = enq.duplicateOf(key, dedupeSince(c));
  const row = await db.get<{ id: string }>(text, params);
  return row ? jobById(db, same, row.id) : null;
}

const dedupeSince = (c: SqliteContext): string => new Date(c.clock.now() - c.dedupeWindowMs).toISOString();

/** Kept in the database with the job's row (bytes given, and few enough), not as a file of its own. */
const kept = (d: NewDocument): d is NewDocument & { data: Uint8Array } =>
  d.data !== undefined && d.data.length <= SMALL_DOCUMENT_BYTES;

/** True when a document of the job goes to a file of its own (placeDocuments). */
const placesFiles = (input: NewJob): boolean => [input.original, ...input.documents].some((d) => d && !kept(d));

/** A document kept in the database: its row in document_data. */
interface InlineDocument {
  file: string;
  data: Uint8Array;
  /** the caller's file, removed once the job is committed (a `move` given bytes) */
  movedFrom: string | null;
}

interface Placed {
  documents: StoredDocument[];
  original: StoredDocument | null;
  inline: InlineDocument[];
}

async function placeDocuments(c: SqliteContext, dir: string, docs: NewDocument[], orig?: NewDocument): Promise<Placed> {
  const all = [
    ...(orig ? [{ d: orig, dest: path.join(dir, `00-original-${safeFileName(orig.name, 0).slice(3)}`) }] : []),
    ...docs.map((d, i) => ({ d, dest: path.join(dir, safeFileName(d.name, i + 1)) })),
  ];
  const inline: InlineDocument[] = [];
  const stored = new Map<string, StoredDocument>();
  const files: typeof all = [];
  for (const x of all) {
    if (kept(x.d)) {
      inline.push({ file: path.basename(x.dest), data: x.d.data, movedFrom: x.d.move ? x.d.path : null });
      stored.set(x.dest, { path: x.dest, name: x.d.name, contentType: x.d.contentType, bytes: x.d.data.length });
    } else files.push(x);
  }
  if (files.length > 0) for (const d of await placeFiles(c, dir, files)) stored.set(d.path, d);
  const storedAs = (x: { dest: string }): StoredDocument => stored.get(x.dest)!;
  return { original: orig ? storedAs(all[0]!) : null, documents: all.slice(orig ? 1 : 0).map(storedAs), inline };
}

/** The documents kept as files: in the job's new folder, durably (see the top of this file). */
async function placeFiles(
  c: SqliteContext,
  dir: string,
  files: Array<{ d: NewDocument; dest: string }>,
): Promise<StoredDocument[]> {
  await fsp.mkdir(dir, { recursive: true, mode: 0o750 });
  // The new folder's entry in the documents folder is flushed while the files are placed.
  const folderEntry = c.flushDocumentsDir();
  folderEntry.catch(() => undefined);
  // Files intake wrote whole, renamed in and not yet fsynced: put back where they were on a failure.
  const movedIn: Array<{ src: string; dest: string; flushedBytes?: number }> = [];
  try {
    const place = async (d: NewDocument, dest: string): Promise<StoredDocument> => {
      const doc = (bytes: number): StoredDocument => ({ path: dest, name: d.name, contentType: d.contentType, bytes });
      if (d.move && !d.data && (await moveInUnsynced(d.path, dest))) {
        movedIn.push({ src: d.path, dest, flushedBytes: d.flushedBytes });
        return doc(d.flushedBytes ?? 0);
      }
      return doc(await placeFile(d.path, dest, d.move === true, d.data));
    };
    // allSettled, not all: on a failure no copy may still be writing when the folder is removed.
    const settled = await Promise.allSettled(files.map((x) => place(x.d, x.dest)));
    throwFirstFailure(settled);
    const placed = settled.map((r) => (r as PromiseFulfilledResult<StoredDocument>).value);
    // Every file's data and both folders' entries flushed at once, not one after the other: each
    // fsync waits for the disk, and on ext4 fsyncs that are waiting together share one journal commit.
    const sizes = new Map<string, number>();
    throwFirstFailure(
      await Promise.allSettled([
        ...movedIn
          .filter((m) => m.flushedBytes === undefined)
          .map(async (m) => sizes.set(m.dest, await syncFile(m.dest))),
        fsyncDir(dir),
        folderEntry,
      ]),
    );
    for (const d of placed) if (sizes.has(d.path)) d.bytes = sizes.get(d.path)!;
    return placed;
  } catch (err) {
    // as placeFile leaves a file it could not place: back at its source
    await Promise.all(movedIn.map((m) => fsp.rename(m.dest, m.src).catch(() => undefined)));
    await fsp.rm(dir, { recursive: true, force: true });
    throw new FaxgateError("STORE_UNAVAILABLE", `a document could not be stored: ${(err as Error).message}`, {
      cause: err,
      temporary: true,
    });
  }
}

/** Callers' files whose bytes the committed job now holds in the database. */
async function removeMovedFrom(inline: InlineDocument[]): Promise<void> {
  await Promise.all(inline.map((d) => (d.movedFrom ? fsp.unlink(d.movedFrom).catch(() => undefined) : undefined)));
}

function throwFirstFailure(settled: PromiseSettledResult<unknown>[]): void {
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}

/** Durable when it resolves: documents fsynced and renamed, job row committed. */
export async function enqueue(
  c: SqliteContext,
  db: Db,
  input: NewJob,
  ledger?: enq.JobLedgerRows,
): Promise<{ job: Job; duplicate: boolean }> {
  enq.checkNewJob(input);
  // Looked for first only when files would be placed for nothing: a job whose documents all go
  // into the database meets the same guard inside its commit (intake-thread.ts), one query less.
  if (input.dedupeKey && placesFiles(input)) {
    const existing = await findDuplicate(c, db, input.dedupeKey);
    if (existing) {
      // the first copy may be still on its way to the disk
      await flushCommit(c.flushWal());
      return { job: existing, duplicate: true };
    }
  }
  const id = newJobId(c.clock.now());
  const dir = path.join(c.documentsDir, id);
  const { documents, original, inline } = await placeDocuments(c, dir, input.documents, input.original);
  const made = enq.newJobRequest(input, {
    id,
    now: c.now(),
    dialect: "sqlite",
    dedupeSince: dedupeSince(c),
    documents,
    original,
    blobs: inline,
    ledger,
  });

  let result: { job: Job; duplicate: boolean };
  let flush: () => Promise<void>;
  // a few milliseconds now and then, while the checkpoint thread restarts the WAL
  const held = c.commitsHeld();
  if (held) await held;
  try {
    // Committed on the intake thread together with the jobs that reached it meanwhile, and the WAL
    // flushed there after the commit (group commit): the fsync is off the main thread and shared.
    // the bytes it keeps in the database count toward the next WAL checkpoint
    const outcome = await c.commitIntake(made.request, made.keptBytes);
    flush = outcome.flush;
    const dup = outcome.found ? await jobById(db, same, String(outcome.found.id)) : null;
    result = dup
      ? { job: dup, duplicate: true }
      : {
          job: enq.newJob(same, { row: enq.withSpliced(made.row, outcome.spliced), recs: made.recs }),
          duplicate: false,
        };
  } catch (err) {
    // a commit that may have happened keeps the folder its row would name (orphans are swept)
    if (!(err instanceof CommitUncertainError)) await fsp.rm(dir, { recursive: true, force: true });
    throw new FaxgateError("STORE_UNAVAILABLE", `the job could not be stored: ${(err as Error).message}`, {
      cause: err,
      temporary: true,
    });
  }
  if (result.duplicate) await fsp.rm(dir, { recursive: true, force: true });
  await flushCommit(flush());
  if (!result.duplicate) await removeMovedFrom(inline);
  return result;
}

/** The commit on disk (`flushed`) before the caller is told (a 250, a claimed print file); the job row stays. */
async function flushCommit(flushed: Promise<void>): Promise<void> {
  try {
    await flushed;
  } catch (err) {
    if (isFaxgateError(err)) throw err;
    // Committed but not known to be on disk: the caller answers "try again", and the retry finds
    // this job by its dedupe key.
    throw new FaxgateError("STORE_UNAVAILABLE", `the job could not be flushed to disk: ${(err as Error).message}`, {
      cause: err,
      temporary: true,
    });
  }
}

/** Keeps unprocessable input for inspection (state corrupt), never deletes it; its user is told. */
export async function enqueueCorrupt(c: SqliteContext, db: Db, input: enq.CorruptInput): Promise<Job> {
  let inline: InlineDocument[] = [];
  const job = await enq.enqueueCorrupt(db, same, input, async (id) => {
    const placed = await placeDocuments(c, path.join(c.documentsDir, id), [], input.original);
    inline = placed.inline;
    return { original: placed.original!, blobs: placed.inline };
  });
  await removeMovedFrom(inline);
  return job;
}
