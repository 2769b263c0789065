// The one door into the queue, its statements built once for both stores: a new job's row, its
// recipients, the documents kept in the database and its first event, deduplicated per dedupeKey;
// and corrupt input kept for inspection with its rejected notice. Where the documents live before
// the commit is each store's own (SQLite: files in the job's folder, small ones in the row;
// PostgreSQL: every one in the database), and so is how the statements run: SQLite hands them to
// its intake thread, which commits them in groups (sqlite/intake-writer.ts); PostgreSQL runs them
// in db.tx (runWrite).
import path from "node:path";
import { FaxgateError } from "../../errors.js";
import { newJobId } from "../job-id.js";
import { isoUtc, type JobRow, type RecipientRow, toJob, toRecipient } from "../rows.js";
import { type SplicedPart, spliceOut, storedFile } from "../spliced-original.js";
import { confirmationWait, enqueueDetail, NEEDS_ADDRESS } from "../transitions.js";
import type { Job, JobMeta, JobSource, NewDocument, NewJob, RecipientState, StoredDocument } from "../types.js";
import type { Db, DialectName, Runner } from "./db.js";
import { eventArgs, INSERT_EVENT } from "./events.js";
import { appendLedger, type JobLedgerRows, type LedgerFields } from "./ledger.js";

export type { JobLedgerRows } from "./ledger.js";
import { insertNotification } from "./notifications.js";
import { jobById, type Local } from "./read.js";

/** One statement: its SQL text (`?` placeholders, the same for both) and its parameters. */
export type Statement = [sql: string, params: unknown[]];

/** A job's commit: when `guard` finds a row, nothing is written and that row is the answer. */
export interface WriteRequest {
  guard?: Statement;
  statements: Statement[];
  /**
   * Ledger rows appended after the statements, in the same commit (a job and its "sent" rows:
   * neither without the other). Sealed where the head is read, inside that commit.
   */
  ledger?: LedgerFields[];
  /**
   * The job's original is to be kept without the base64 of the documents beside it
   * (../spliced-original.ts): spliceRequest does it where the request runs, which for SQLite is
   * the intake thread, off the thread the SMTP sessions share.
   */
  splice?: SpliceOrder;
}

/** The statements spliceRequest rewrites, by their place in the request. */
export interface SpliceOrder {
  /** the job row's insert, whose `original` it rewrites */
  job: number;
  /** the original's blob */
  original: number;
  /** the documents' blobs, whose base64 may be taken out of the original */
  documents: number[];
}

/** What splicing took out of a job's original: where the runs were, and the bytes not kept. */
export interface Spliced {
  parts: SplicedPart[];
  saved: number;
}

/** The table of documents kept in the database (the one name history left different). */
export const DOCUMENT_TABLE: Readonly<Record<DialectName, string>> = { sqlite: "document_data", postgres: "documents" };

/** A document kept in the database: its file name in the job and its bytes. */
export interface Blob {
  file: string;
  data: Uint8Array;
}

/** Refuses a job that can never be sent, before anything is stored. */
export function checkNewJob(input: NewJob): void {
  if (input.recipients.length === 0 && input.awaitingAddress !== true)
    throw new FaxgateError("NO_DESTINATION", "a job needs at least one recipient");
}

/** The dedupe guard: the newest job with this key within the window. */
export const duplicateOf = (key: string, since: string): Statement => [
  "SELECT id FROM jobs WHERE dedupe_key = ? AND created_at >= ? ORDER BY created_at DESC LIMIT 1",
  [key, since],
];

/** What `newJobRequest` needs besides the job: where it stands and what is already stored. */
export interface NewJobPlace {
  id: string;
  now: string;
  dialect: DialectName;
  /** the dedupe window's start */
  dedupeSince: string;
  documents: StoredDocument[];
  original: StoredDocument | null;
  blobs: readonly Blob[];
  ledger?: JobLedgerRows;
}

/**
 * A new job's rows, as the caller will be handed them once withSpliced has added what the commit
 * took out of the original (read back, they would be these values again:
 * test/store/contract.test.ts compares, and not reading them saves the hot path two statements),
 * and the request that writes them. `keptBytes`: what its blobs hold before any splice.
 */
export function newJobRequest(
  input: NewJob,
  p: NewJobPlace,
): { row: JobRow; recs: RecipientRow[]; request: WriteRequest; keptBytes: number } {
  const start = firstState(input);
  const row = newJobRow(input, p, start.state);
  const recs = start.recipients.map((r, i) => newRecipientRow(p, i, r, start.state, start.lastErrorOf(r.number)));
  const event = {
    jobId: p.id,
    idx: null,
    transition: "enqueue" as const,
    from: null,
    to: start.state,
    detail: enqueueDetail(input.source, start.waiting, start.confirming),
  };
  // (keys set on a literal: on Node 20 a key added after a leading spread costs about 1 us,
  // docs/bench.md "keys added after a spread")
  const request: WriteRequest = {
    statements: [
      insertJob(row),
      insertRecipients(recs),
      ...p.blobs.map(
        (d): Statement => [
          `INSERT INTO ${DOCUMENT_TABLE[p.dialect]} (job_id, file, data) VALUES (?, ?, ?)`,
          [p.id, d.file, d.data],
        ],
      ),
      [INSERT_EVENT, eventArgs(event, p.now)],
    ],
  };
  // checked inside the commit: another process (or an enqueue just before) may have won the race
  if (input.dedupeKey) request.guard = duplicateOf(input.dedupeKey, p.dedupeSince);
  if (p.ledger) request.ledger = p.ledger({ id: p.id, recipients: recs });
  const splice = spliceOrder(p);
  if (splice) request.splice = splice;
  let keptBytes = 0;
  for (const b of p.blobs) keptBytes += b.data.length;
  return { row, recs, request, keptBytes };
}

/** The blobs' statements start here in newJobRequest's request (after the job and its recipients). */
const FIRST_BLOB = 2;

/** Which blobs spliceRequest looks at: the original's, kept in the database beside documents. */
function spliceOrder(p: NewJobPlace): SpliceOrder | null {
  if (!p.original || p.blobs.length < 2) return null;
  const file = path.basename(p.original.path);
  const at = p.blobs.findIndex((b) => b.file === file);
  if (at < 0) return null;
  const documents: number[] = [];
  for (let i = 0; i < p.blobs.length; i++) if (i !== at) documents.push(FIRST_BLOB + i);
  return { job: 0, original: FIRST_BLOB + at, documents };
}

/**
 * The request's statements with the job's original kept without the base64 of its documents
 * (../spliced-original.ts: the same mail is read back, and about 40% fewer bytes are written for
 * a PDF mail), and what was taken out; null when nothing was (the original is kept whole). The
 * request is left as it was.
 */
export function spliceRequest(r: WriteRequest): { statements: Statement[]; spliced: Spliced } | null {
  const o = r.splice;
  if (!o) return null;
  const blob = (i: number): { file: string; data: Uint8Array } => {
    const [, params] = r.statements[i]!;
    return { file: params[1] as string, data: params[2] as Uint8Array };
  };
  const whole = blob(o.original).data;
  const cut = spliceOut(whole, o.documents.map(blob));
  if (!cut) return null;
  const statements = r.statements.slice();
  const [jobSql, jobParams] = statements[o.job]!;
  const original = withParts(jobParams[ORIGINAL_PARAM] as string, cut.parts);
  statements[o.job] = [jobSql, jobParams.with(ORIGINAL_PARAM, JSON.stringify(original))];
  const [blobSql, blobParams] = statements[o.original]!;
  statements[o.original] = [blobSql, [blobParams[0], storedFile(original), cut.kept]];
  return { statements, spliced: { parts: cut.parts, saved: whole.length - cut.kept.length } };
}

/** The job as newJobRequest made it, with its original as spliceRequest kept it. */
export function withSpliced(row: JobRow, spliced: Spliced | undefined): JobRow {
  if (!spliced || !row.original) return row;
  return { ...row, original: JSON.stringify(withParts(row.original, spliced.parts)) };
}

/** An original as its job row holds it (JSON), with the runs a splice took out of it. */
const withParts = (json: string, parts: SplicedPart[]): StoredDocument => ({
  ...(JSON.parse(json) as StoredDocument),
  spliced: parts,
});

/**
 * Where a new job starts: held when it waits for an address (one empty recipient stands in for
 * the one to come) or for its sender's confirmation, queued otherwise; each number once.
 */
function firstState(input: NewJob) {
  const waiting = input.awaitingAddress === true;
  const numbers = new Set<string>();
  const recipients = waiting
    ? [{ number: "", name: undefined }]
    : input.recipients.filter((r) => !numbers.has(r.number) && numbers.add(r.number));
  const confirming = !waiting && (input.awaitingConfirmation?.length ?? 0) > 0;
  const state: RecipientState = waiting || confirming ? "held" : "queued";
  // a held recipient says what it waits for
  const lastErrorOf = (n: string): string | null =>
    waiting ? NEEDS_ADDRESS : confirming ? confirmationWait(input.awaitingConfirmation!, n) : null;
  return { waiting, confirming, state, recipients, lastErrorOf };
}

function newJobRow(input: NewJob, p: NewJobPlace, state: RecipientState): JobRow {
  return {
    id: p.id,
    source: input.source,
    user: input.user,
    state,
    cover: JSON.stringify(input.cover),
    documents: JSON.stringify(p.documents),
    original: p.original ? JSON.stringify(p.original) : null,
    scheduled_at: isoUtc(input.scheduledAt),
    tags: JSON.stringify(input.tags ?? []),
    dedupe_key: input.dedupeKey ?? null,
    meta: JSON.stringify(input.meta ?? {}),
    corrupt_reason: null,
    finals: 0,
    created_at: p.now,
    updated_at: p.now,
    finished_at: null,
  };
}

/** A recipient as a fresh row holds it: nothing tried, nothing sent, its budget counted from now. */
function newRecipientRow(
  p: NewJobPlace,
  idx: number,
  r: { number: string; name?: string | undefined },
  state: RecipientState,
  lastError: string | null,
): RecipientRow {
  const { now } = p;
  return {
    job_id: p.id,
    idx,
    number: r.number,
    name: r.name ?? null,
    state,
    attempts: 0,
    fax_tries: 0,
    budget_from: now,
    next_attempt_at: null,
    last_error: lastError,
    message_id: null,
    send_id: null,
    result_code: null,
    result_info: null,
    error_code: null,
    error_info: null,
    pages: null,
    pages_count: null,
    duration: null,
    fax_attempt: null,
    api_calls: 0,
    locked_by: null,
    locked_until: null,
    created_at: now,
    updated_at: now,
    sent_at: null,
    finished_at: null,
    call_left: null,
  };
}

/** Where insertJob's parameters have the job's original (spliceRequest rewrites it). */
const ORIGINAL_PARAM = 6;

const insertJob = (row: JobRow): Statement => [
  `INSERT INTO jobs (id, source, "user", state, cover, documents, original, scheduled_at, tags, dedupe_key, meta, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  [
    row.id,
    row.source,
    row.user,
    row.state,
    row.cover,
    row.documents,
    row.original,
    row.scheduled_at,
    row.tags,
    row.dedupe_key,
    row.meta,
    row.created_at,
    row.updated_at,
  ],
];

/** All recipients in one statement (a send-to-many job is one round trip on PostgreSQL). */
const insertRecipients = (recs: RecipientRow[]): Statement => [
  `INSERT INTO recipients (job_id, idx, number, name, state, last_error, budget_from, created_at, updated_at) VALUES ${recs
    .map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?)")
    .join(", ")}`,
  recs.flatMap((r) => [
    r.job_id,
    r.idx,
    r.number,
    r.name,
    r.state,
    r.last_error,
    r.budget_from,
    r.created_at,
    r.updated_at,
  ]),
];

/** The job `newJobRequest` wrote, as its rows say. */
export const newJob = (local: Local, rows: { row: JobRow; recs: RecipientRow[] }): Job =>
  local(toJob(rows.row, rows.recs.map(toRecipient)));

/**
 * Runs a request inside the caller's transaction: the guard's row when it found one (nothing
 * written then). Two gateways receiving the same mail at once: the key's lock makes one wait for
 * the other (PostgreSQL; SQLite's BEGIN IMMEDIATE already does).
 */
export async function runWrite(
  t: Runner,
  r: WriteRequest,
  dedupeKey?: string,
): Promise<Record<string, unknown> | undefined> {
  if (r.guard) {
    if (dedupeKey) await t.lock(`dedupe:${dedupeKey}`);
    const row = await t.get(r.guard[0], r.guard[1]);
    if (row) return row;
  }
  for (const [text, params] of r.statements) await t.run(text, params);
  // last: the ledger's lock is held from here to the commit
  for (const fields of r.ledger ?? []) await appendLedger(t, fields);
  return undefined;
}

/** Runs a new job's request in a transaction of its own (PostgreSQL's enqueue). */
export async function commitNewJob(
  db: Db,
  local: Local,
  input: NewJob,
  made: { row: JobRow; recs: RecipientRow[]; request: WriteRequest },
): Promise<{ job: Job; duplicate: boolean }> {
  // before the transaction: its retry runs the same statements again
  const cut = spliceRequest(made.request);
  const request = cut ? { ...made.request, statements: cut.statements } : made.request;
  const row = withSpliced(made.row, cut?.spliced);
  return db.tx("the job could not be stored", async (t) => {
    const found = await runWrite(t, request, input.dedupeKey);
    if (found) return { job: (await jobById(t, local, String(found.id)))!, duplicate: true };
    await db.announce(t, row.id);
    return { job: newJob(local, { row, recs: made.recs }), duplicate: false };
  });
}

export interface CorruptInput {
  source: JobSource;
  user: string;
  reason: string;
  original: NewDocument;
  meta?: JobMeta;
}

/**
 * Keeps unprocessable input for inspection (state corrupt), never deletes it; its user is told.
 * `place` stores the original for job `id` (the store's own way) before the commit.
 */
export async function enqueueCorrupt(
  db: Db,
  local: Local,
  input: CorruptInput,
  place: (id: string) => Promise<{ original: StoredDocument; blobs: Blob[] }>,
): Promise<Job> {
  const id = newJobId(db.clock.now());
  const { original, blobs } = await place(id);
  const blobBytes = blobs.reduce((n, b) => n + b.data.length, 0);
  return db.tx(
    "the rejected input could not be stored",
    async (t) => {
      const now = new Date(db.clock.now()).toISOString();
      await t.run(
        `INSERT INTO jobs (id, source, "user", state, cover, documents, original, tags, meta, corrupt_reason, created_at, updated_at, finished_at)
         VALUES (?, ?, ?, 'corrupt', ?, '[]', ?, '[]', ?, ?, ?, ?, ?)`,
        [
          id,
          input.source,
          input.user,
          JSON.stringify({ enabled: false }),
          JSON.stringify(original),
          JSON.stringify(input.meta ?? {}),
          input.reason,
          now,
          now,
          now,
        ],
      );
      for (const b of blobs)
        await t.run(`INSERT INTO ${DOCUMENT_TABLE[t.dialect]} (job_id, file, data) VALUES (?, ?, ?)`, [
          id,
          b.file,
          b.data,
        ]);
      await t.run(
        INSERT_EVENT,
        eventArgs(
          { jobId: id, idx: null, transition: "corrupt", from: null, to: "corrupt", detail: input.reason },
          now,
        ),
      );
      await insertNotification(t, now, {
        kind: "rejected",
        user: input.user,
        jobId: id,
        dedupeKey: `rejected:${id}`,
        payload: { jobId: id, reason: input.reason },
      });
      return (await jobById(t, local, id))!;
    },
    { blobBytes },
  );
}
