// The OCR duty of sent faxes (issue 51, ocr.sent), as rows of sent_text (sent-text-tables.ts):
// queued by a sweep over jobs that reached delivered or partial (never on the dispatcher's path),
// claimed under a lease as received faxes' texts are (a killed run is claimed again when its lease
// ends), finished as done, unreadable or failed, each said on the job's timeline without a word
// of the text.
import { appendEvent } from "./events.js";
import { type Db, nowIso, type Runner } from "./db.js";
import type { JobState } from "../types.js";
import {
  claimTextRow,
  getTextRow,
  type TextState,
  type TextTable,
  textRowFailed,
  textRowRead,
  textRowUnreadable,
  wordCount,
} from "./text-duty.js";

export interface SentText {
  jobId: string;
  user: string;
  state: TextState;
  attempts: number;
  lastError: string | null;
  body: string | null;
  doneAt: string | null;
}

interface SentTextRow {
  job_id: string;
  user_name: string;
  state: TextState;
  attempts: number | string;
  last_error: string | null;
  body: string | null;
  done_at: string | null;
}

const COLUMNS = "job_id, user_name, state, attempts, last_error, body, done_at";

const toText = (r: SentTextRow): SentText => ({
  jobId: r.job_id,
  user: r.user_name,
  state: r.state,
  attempts: Number(r.attempts),
  lastError: r.last_error,
  body: r.body,
  doneAt: r.done_at,
});

/**
 * Queues the text of each job that was sent (delivered, or partial: some recipient has it)
 * since `since` and was changed at or after `changedSince` (the jobs_updated index finds them),
 * once. Returns how many were queued.
 */
export async function queueSentTexts(db: Db, o: { since: string; changedSince: string }): Promise<number> {
  const now = nowIso(db);
  const r = await db.run(
    `INSERT INTO sent_text (job_id, user_name, state, next_attempt_at, created_at)
     SELECT j.id, j."user", 'pending', ?, ? FROM jobs j
     WHERE j.updated_at >= ? AND j.state IN ('delivered','partial') AND j.finished_at >= ?
       AND NOT EXISTS (SELECT 1 FROM sent_text s WHERE s.job_id = j.id)
     ON CONFLICT (job_id) DO NOTHING`,
    [now, now, o.changedSince, o.since],
  );
  return r.changes;
}

/** sent_text to the mechanism of text-duty.ts: a sent fax's outcomes go on its job's timeline. */
const SENT: TextTable<SentTextRow, SentText> = {
  table: "sent_text",
  key: "job_id",
  columns: COLUMNS,
  what: "a sent fax's text",
  toText,
  note,
};

export function getSentText(db: Runner, jobId: string): Promise<SentText | null> {
  return getTextRow(db, SENT, jobId);
}

/** Claims one sent fax's text to read, under a lease; `pick` chooses whose turn it is (as claimText). */
export function claimSentText(
  db: Db,
  o: { leaseMs: number; pick: (users: string[]) => string },
): Promise<SentText | null> {
  return claimTextRow(db, SENT, o);
}

/** A step on the job's timeline (not a recipient's, no change of state). */
async function note(t: Runner, jobId: string, transition: string, detail: string, at: string): Promise<void> {
  const job = await t.get<{ state: JobState }>("SELECT state FROM jobs WHERE id = ?", [jobId]);
  if (!job) return;
  await appendEvent(t, at, { jobId, idx: null, transition, from: null, to: job.state, detail });
}

/** The text is read: stored for search; the timeline says how much, never what. */
export function sentTextRead(db: Db, jobId: string, r: { body: string; pages: number }): Promise<boolean> {
  return textRowRead(db, SENT, jobId, r.body, `text read (${r.pages} pages, ${wordCount(r.body)} words)`);
}

/** OCR found no text: the job's timeline says so; search finds it by the numbers dialled only. */
export function sentTextUnreadable(db: Db, jobId: string, why: string): Promise<boolean> {
  return textRowUnreadable(db, SENT, jobId, why, `text unreadable (${why})`);
}

/** A run that failed: tried again at `retryAt`, or (null) given up. */
export function sentTextFailed(db: Db, jobId: string, why: string, retryAt: Date | null): Promise<boolean> {
  return textRowFailed(db, SENT, jobId, why, retryAt, `OCR failed (${why})`);
}
