// Documents on PostgreSQL live in the database (bytea), so every instance can send any job; each
// instance keeps a cached copy under its data folder, handed out by documentPath().
import { promises as fsp, readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { FaxgateError } from "../../errors.js";
import { replaceFile } from "../../fs/index.js";
import { readWhole } from "../spliced-original.js";
import type { Job, NewDocument, StoredDocument } from "../types.js";
import type { PgContext } from "./context.js";

const CACHE_ORPHAN_AGE_MS = 60 * 60 * 1000;

/** Reads a document's bytes before the job is stored (the caller's data, or the file). */
export async function loadDocument(d: NewDocument, file: string): Promise<{ stored: StoredDocument; data: Buffer }> {
  let data: Buffer;
  try {
    data = d.data ? Buffer.from(d.data.buffer, d.data.byteOffset, d.data.byteLength) : await fsp.readFile(d.path);
  } catch (err) {
    throw new FaxgateError(
      "STORE_UNAVAILABLE",
      `a document could not be read to be stored: ${(err as Error).message}`,
      {
        temporary: true,
      },
    );
  }
  return { stored: { path: file, name: d.name, contentType: d.contentType, bytes: data.byteLength }, data };
}

/** Stored documents carry only their file name; this instance's copy lives in its cache. */
function localPath(ctx: PgContext, jobId: string, file: string): string {
  return path.join(ctx.cacheDir, jobId, path.basename(file));
}

export function withLocalPaths(ctx: PgContext, job: Job): Job {
  const fix = (d: StoredDocument): StoredDocument => ({ ...d, path: localPath(ctx, job.id, d.path) });
  return { ...job, documents: job.documents.map(fix), original: job.original ? fix(job.original) : null };
}

function ref(doc: StoredDocument): { jobId: string; file: string } {
  return { jobId: path.basename(path.dirname(doc.path)), file: path.basename(doc.path) };
}

export async function readDocument(ctx: PgContext, doc: StoredDocument): Promise<Buffer> {
  const { jobId } = ref(doc);
  // an original may be kept without its documents' base64 (../spliced-original.ts)
  return readWhole(doc, (file) => readRow(ctx, jobId, file));
}

async function readRow(ctx: PgContext, jobId: string, file: string): Promise<Buffer> {
  const r = await ctx.q<{ data: Buffer }>(
    "read a document",
    "SELECT data FROM documents WHERE job_id = $1 AND file = $2",
    [jobId, file],
  );
  if (!r.rows[0]) throw new FaxgateError("JOB_NOT_FOUND", `job ${jobId} has no document ${JSON.stringify(file)}`);
  return r.rows[0].data;
}

export async function documentPath(ctx: PgContext, doc: StoredDocument): Promise<string> {
  const { jobId, file } = ref(doc);
  const local = localPath(ctx, jobId, file);
  try {
    if (statSync(local).size === doc.bytes) return local;
  } catch {
    // not cached yet
  }
  const data = await readDocument(ctx, doc);
  await fsp.mkdir(path.dirname(local), { recursive: true, mode: 0o750 });
  await replaceFile(local, (tmp) => fsp.writeFile(tmp, data, { flag: "wx" }), { syncDir: false });
  return local;
}

/** Makes sure the claimed jobs' documents are on this host before the send reads them. */
export async function cacheDocuments(ctx: PgContext, job: Job): Promise<void> {
  await Promise.all(job.documents.map((d) => documentPath(ctx, d)));
}

/** Cached copies of jobs that are gone (purged by another instance) are removed after an hour. */
export function sweepCache(ctx: PgContext): void {
  let names: string[];
  try {
    names = readdirSync(ctx.cacheDir);
  } catch {
    return;
  }
  const now = ctx.clock.now();
  const old = names.filter((n) => {
    try {
      return now - statSync(path.join(ctx.cacheDir, n)).mtimeMs > CACHE_ORPHAN_AGE_MS;
    } catch {
      return false;
    }
  });
  if (old.length === 0) return;
  void ctx.pool.query<{ id: string }>("SELECT id FROM jobs WHERE id = ANY($1)", [old]).then(
    (r) => {
      const live = new Set(r.rows.map((x) => x.id));
      for (const n of old) if (!live.has(n)) rmSync(path.join(ctx.cacheDir, n), { recursive: true, force: true });
    },
    () => undefined,
  );
}
