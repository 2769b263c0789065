// The OCR duty of sent faxes (issue 51, ocr.sent), as rows of sent_text (sent-text-tables.ts):
// queued by a sweep over jobs that reached delivered or partial (never on the dispatcher's path),
// claimed under a lease as received faxes' texts are (a killed run is claimed again when its lease
// ends), finished as done, unreadable or failed, each said on the job's timeline without a word
// of the text.
import { appendEvent } from "./events.js";
import { type Db, nowIso, type Runner } from "./db.js";
import type { JobState } from "../types.js";
import type { TextState } from "./received-text.js";

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

export async function getSentText(db: Runner, jobId: string): Promise<SentText | null> {
  const r = await db.get<SentTextRow>(`SELECT ${COLUMNS} FROM sent_text WHERE job_id = ?`, [jobId]);
  return r ? toText(r) : null;
}

const DUE = "((state = 'pending' AND next_attempt_at <= ?) OR (state = 'running' AND locked_until < ?))";

/** Claims one sent fax's text to read, under a lease; `pick` chooses whose turn it is (as claimText). */
export function claimSentText(
  db: Db,
  o: { leaseMs: number; pick: (users: string[]) => string },
): Promise<SentText | null> {
  return db.tx("claim a sent fax's text", async (t) => {
    const now = nowIso(db);
    const users = await t.all<{ user_name: string }>(
      `SELECT user_name FROM sent_text WHERE ${DUE} GROUP BY user_name ORDER BY MIN(seq)`,
      [now, now],
    );
    if (users.length === 0) return null;
    const user = o.pick(users.map((u) => u.user_name));
    const row = await t.get<{ seq: number }>(
      `SELECT seq FROM sent_text WHERE ${DUE} AND user_name = ? ORDER BY seq LIMIT 1`,
      [now, now, user],
    );
    if (!row) return null;
    const until = new Date(db.clock.now() + o.leaseMs).toISOString();
    const r = await t.run(
      `UPDATE sent_text SET state = 'running', attempts = attempts + 1, locked_until = ? WHERE seq = ? AND ${DUE}`,
      [until, row.seq, now, now],
    );
    if (r.changes === 0) return null;
    const got = await t.get<SentTextRow>(`SELECT ${COLUMNS} FROM sent_text WHERE seq = ?`, [row.seq]);
    return got ? toText(got) : null;
  });
}

/** A step on the job's timeline (not a recipient's, no change of state). */
async function note(t: Runner, jobId: string, transition: string, detail: string, at: string): Promise<void> {
  const job = await t.get<{ state: JobState }>("SELECT state FROM jobs WHERE id = ?", [jobId]);
  if (!job) return;
  await appendEvent(t, at, { jobId, idx: null, transition, from: null, to: job.state, detail });
}

const wordCount = (s: string): number => s.split(/\s+/).filter(Boolean).length;

/** The text is read: stored for search; the timeline says how much, never what. */
export function sentTextRead(db: Db, jobId: string, r: { body: string; pages: number }): Promise<boolean> {
  return db.tx("store a sent fax's text", async (t) => {
    const now = nowIso(db);
    const u = await t.run(
      `UPDATE sent_text SET state = 'done', body = ?, locked_until = NULL, last_error = NULL, done_at = ?
       WHERE job_id = ? AND state = 'running'`,
      [r.body, now, jobId],
    );
    if (u.changes === 0) return false;
    await note(t, jobId, "text read", `text read (${r.pages} pages, ${wordCount(r.body)} words)`, now);
    return true;
  });
}

/** OCR found no text: the job's timeline says so; search finds it by the numbers dialled only. */
export function sentTextUnreadable(db: Db, jobId: string, why: string): Promise<boolean> {
  return db.tx("mark a sent fax's text unreadable", async (t) => {
    const now = nowIso(db);
    const u = await t.run(
      `UPDATE sent_text SET state = 'unreadable', body = NULL, locked_until = NULL, last_error = ?, done_at = ?
       WHERE job_id = ? AND state = 'running'`,
      [why, now, jobId],
    );
    if (u.changes === 0) return false;
    await note(t, jobId, "text unreadable", `text unreadable (${why})`, now);
    return true;
  });
}

/** A run that failed: tried again at `retryAt`, or (null) given up. */
export function sentTextFailed(db: Db, jobId: string, why: string, retryAt: Date | null): Promise<boolean> {
  return db.tx("defer a sent fax's text", async (t) => {
    const now = nowIso(db);
    const u = retryAt
      ? await t.run(
          `UPDATE sent_text SET state = 'pending', next_attempt_at = ?, locked_until = NULL, last_error = ?
           WHERE job_id = ? AND state = 'running'`,
          [retryAt.toISOString(), why, jobId],
        )
      : await t.run(
          `UPDATE sent_text SET state = 'failed', locked_until = NULL, last_error = ?, done_at = ?
           WHERE job_id = ? AND state = 'running'`,
          [why, now, jobId],
        );
    if (u.changes === 0) return false;
    if (!retryAt) await note(t, jobId, "text failed", `OCR failed (${why})`, now);
    return true;
  });
}
