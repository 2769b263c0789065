// Reading the queue: jobs with their recipients, lists for the CLI and the console (filter,
// search, paging), counts, a job's history, and the dispatcher's own queries.
import { FaxgateError } from "../../errors.js";
import { isoUtc, toJob, toJobEvent, toRecipient, type JobEventRow, type JobRow, type RecipientRow } from "../rows.js";
import { sqlStateList } from "../transition-sql.js";
import { OPEN_JOB_STATES } from "../transitions.js";
import {
  JOB_STATES,
  RECIPIENT_STATES,
  type Job,
  type JobEvent,
  type JobFilter,
  type JobState,
  type QueueCounts,
  type Recipient,
  type RecipientState,
} from "../types.js";
import type { SqliteContext } from "./context.js";
import { refuseControlCharacters } from "../text-input.js";

/** The job as committed (read inside the caller's transaction when there is one). */
export function jobById(c: SqliteContext, id: string): Job | null {
  const row = c.sql("SELECT * FROM jobs WHERE id = ?").get(id) as JobRow | undefined;
  if (!row) return null;
  const recs = (c.sql("SELECT * FROM recipients WHERE job_id = ? ORDER BY idx").all(id) as RecipientRow[]).map(
    toRecipient,
  );
  return toJob(row, recs);
}

export function mustGet(c: SqliteContext, id: string): Job {
  const job = jobById(c, id);
  if (!job) throw new FaxgateError("JOB_NOT_FOUND", `no job has the id ${JSON.stringify(id)}`);
  return job;
}

/** The WHERE clause of a job list or count (the same filter for both, so pages add up). */
function jobWhere(filter: JobFilter): { where: string; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  if (filter.state) {
    where.push("state = ?");
    args.push(filter.state);
  }
  if (filter.user) {
    where.push("user = ?");
    args.push(filter.user);
  }
  if (filter.source) {
    where.push("source = ?");
    args.push(filter.source);
  }
  if (filter.updatedSince) {
    where.push("updated_at >= ?");
    args.push(isoUtc(filter.updatedSince));
  }
  refuseControlCharacters("search", filter.search);
  const needle = filter.search?.trim().toLowerCase();
  if (needle) {
    // SQLite's LIKE folds ASCII case in C (fast); other letters go through fold_case, which is
    // JavaScript's toLowerCase ("müller" finds "MÜLLER").
    const ascii = /^[\x20-\x7e]*$/.test(needle);
    const has = ascii
      ? (col: string) => `${col} LIKE ? ESCAPE '\\'`
      : (col: string) => `instr(fold_case(${col}), ?) > 0`;
    const arg = ascii ? `%${needle.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%` : needle;
    where.push(`(${has("json_extract(meta, '$.origin.subject')")} OR ${has("json_extract(cover, '$.subject')")}
      OR EXISTS (SELECT 1 FROM recipients r WHERE r.job_id = jobs.id AND (${has("r.number")} OR ${has("r.name")})))`);
    args.push(arg, arg, arg, arg);
  }
  return { where: where.length ? `WHERE ${where.join(" AND ")}` : "", args };
}

/** Newest first; `limit` (default 1000) and `offset` page through the same order. */
export function listJobs(c: SqliteContext, filter: JobFilter = {}): Job[] {
  const { where, args } = jobWhere(filter);
  const limit = Math.max(1, Math.min(Math.floor(filter.limit ?? 1000), 100_000));
  const offset = Math.max(0, Math.floor(filter.offset ?? 0));
  const rows = c
    .sql(`SELECT * FROM jobs ${where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`)
    .all(...args, limit, offset) as JobRow[];
  if (rows.length === 0) return [];
  const recs = c
    .sql(`SELECT * FROM recipients WHERE job_id IN (SELECT value FROM json_each(?)) ORDER BY job_id, idx`)
    .all(JSON.stringify(rows.map((r) => r.id))) as RecipientRow[];
  const byJob = new Map<string, Recipient[]>();
  for (const r of recs) {
    const list = byJob.get(r.job_id) ?? [];
    list.push(toRecipient(r));
    byJob.set(r.job_id, list);
  }
  return rows.map((r) => toJob(r, byJob.get(r.id) ?? []));
}

export function countJobs(c: SqliteContext, filter: JobFilter = {}): number {
  const { where, args } = jobWhere(filter);
  return (c.sql(`SELECT COUNT(*) AS n FROM jobs ${where}`).get(...args) as { n: number }).n;
}

export function counts(c: SqliteContext): QueueCounts {
  const jobs = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  for (const r of c.sql("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state").all() as Array<{
    state: JobState;
    n: number;
  }>)
    jobs[r.state] = r.n;
  const recipients = Object.fromEntries(RECIPIENT_STATES.map((s) => [s, 0])) as Record<RecipientState, number>;
  for (const r of c.sql("SELECT state, COUNT(*) AS n FROM recipients GROUP BY state").all() as Array<{
    state: RecipientState;
    n: number;
  }>)
    recipients[r.state] = r.n;
  const oldest = c
    .sql(`SELECT MIN(created_at) AS t FROM jobs WHERE state IN (${sqlStateList(OPEN_JOB_STATES)})`)
    .get() as { t: string | null };
  const pending = c.sql(`SELECT COUNT(*) AS n FROM notifications WHERE state = 'pending'`).get() as { n: number };
  return {
    jobs,
    recipients,
    oldestActiveAgeSeconds: oldest.t ? Math.max(0, Math.round((c.clock.now() - Date.parse(oldest.t)) / 1000)) : null,
    notificationsPending: pending.n,
  };
}

/** The job's history, oldest first. */
export function listEvents(c: SqliteContext, jobId: string): JobEvent[] {
  return (c.sql("SELECT * FROM job_events WHERE job_id = ? ORDER BY id").all(jobId) as JobEventRow[]).map(toJobEvent);
}

/** Faxes accepted by the service and not finished, with their job's user. */
export function listProcessing(c: SqliteContext, limit = 100_000): Array<Recipient & { user: string }> {
  return (
    c
      .sql(
        `SELECT r.*, j.user AS user FROM recipients r JOIN jobs j ON j.id = r.job_id WHERE r.state = 'processing' ORDER BY r.sent_at LIMIT ?`,
      )
      .all(limit) as Array<RecipientRow & { user: string }>
  ).map((r) => ({ ...toRecipient(r), user: r.user }));
}

/**
 * Unknown sends that were made, and became unknown, before `sentBefore` (now minus the grace) and are
 * due for reconciliation: a lease that ran out late must not be looked up (and resent) at once.
 */
export function listUnknown(c: SqliteContext, sentBefore: Date, limit = 10_000): Array<Recipient & { user: string }> {
  const now = c.now();
  return (
    c
      .sql(
        `SELECT r.*, j.user AS user FROM recipients r JOIN jobs j ON j.id = r.job_id
     WHERE r.state = 'unknown' AND (r.sent_at IS NULL OR r.sent_at <= ?) AND r.updated_at <= ? AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?)
     ORDER BY r.sent_at LIMIT ?`,
      )
      .all(sentBefore.toISOString(), sentBefore.toISOString(), now, limit) as Array<RecipientRow & { user: string }>
  ).map((r) => ({ ...toRecipient(r), user: r.user }));
}

/** Whether any recipient already tracks this service messageId (reconciliation must not adopt it twice). */
export function isKnownMessage(c: SqliteContext, messageId: string): boolean {
  return c.sql("SELECT 1 FROM recipients WHERE message_id = ? LIMIT 1").get(messageId) !== undefined;
}

/** When the next deferred recipient or unknown lookup becomes due, for the dispatcher's sleep. */
export function nextDueAt(c: SqliteContext): string | null {
  const r = c
    .sql(
      `SELECT MIN(next_attempt_at) AS t FROM recipients WHERE state IN ('deferred','unknown') AND next_attempt_at IS NOT NULL`,
    )
    .get() as { t: string | null };
  return r.t;
}
