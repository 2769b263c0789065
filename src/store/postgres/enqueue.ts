// The one door into the PostgreSQL queue: every document read into memory to be kept in the
// database (each instance can then send any job), and the statements ../sql/enqueue.ts builds run
// in one transaction; the sources a caller moved in go once the job is committed.
import { promises as fsp } from "node:fs";
import { safeFileName } from "../durable-files.js";
import { newJobId } from "../job-id.js";
import type { Db } from "../sql/db.js";
import * as enq from "../sql/enqueue.js";
import type { Local } from "../sql/read.js";
import type { Job, NewDocument, NewJob } from "../types.js";
import type { PgContext } from "./context.js";
import { loadDocument } from "./documents.js";

const originalName = (d: NewDocument): string => `00-original-${safeFileName(d.name, 0).slice(3)}`;

/** The store now holds the bytes: moved sources go (as the SQLite store moves them away). */
async function removeMoved(docs: readonly NewDocument[]): Promise<void> {
  for (const d of docs) if (d.move) await fsp.unlink(d.path).catch(() => undefined);
}

export async function enqueue(
  ctx: PgContext,
  db: Db,
  local: Local,
  input: NewJob,
  ledger?: enq.JobLedgerRows,
): Promise<{ job: Job; duplicate: boolean }> {
  enq.checkNewJob(input);
  const nowMs = ctx.clock.now();
  const id = newJobId(nowMs);
  const loaded = await Promise.all(input.documents.map((d, i) => loadDocument(d, safeFileName(d.name, i + 1))));
  const orig = input.original ? await loadDocument(input.original, originalName(input.original)) : null;
  const all = [...(orig ? [orig] : []), ...loaded];
  const made = enq.newJobRequest(input, {
    id,
    now: new Date(nowMs).toISOString(),
    dialect: "postgres",
    dedupeSince: new Date(nowMs - ctx.dedupeWindowMs).toISOString(),
    documents: loaded.map((l) => l.stored),
    original: orig?.stored ?? null,
    blobs: all.map((l) => ({ file: l.stored.path, data: l.data })),
    ledger,
  });
  const result = await enq.commitNewJob(db, local, input, made);
  await removeMoved([...input.documents, ...(input.original ? [input.original] : [])]);
  return result;
}

export async function enqueueCorrupt(db: Db, local: Local, input: enq.CorruptInput): Promise<Job> {
  const job = await enq.enqueueCorrupt(db, local, input, async () => {
    const orig = await loadDocument(input.original, originalName(input.original));
    return { original: orig.stored, blobs: [{ file: orig.stored.path, data: orig.data }] };
  });
  await removeMoved([input.original]);
  return job;
}
