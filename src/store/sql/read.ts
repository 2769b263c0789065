// Reading the queue: jobs with their recipients, lists for the CLI and the console (filter,
// search, paging), counts, a job's history, and the dispatcher's own queries. `local` gives a job
// as this instance hands it out (PostgreSQL: its documents' paths in this instance's cache).
import { FaxgateError } from "../../errors.js";
import type { RecipientFilter } from "../queue-store.js";
import { isoUtc, type JobEventRow, type JobRow, type RecipientRow, toJob, toJobEvent, toRecipient } from "../rows.js";
import { refuseControlCharacters } from "../text-input.js";
import { sqlStateList } from "../transition-sql.js";
import { OPEN_JOB_STATES } from "../transitions.js";
import {
  JOB_STATES,
  type Job,
  type JobEvent,
  type JobFilter,
  type JobState,
  type QueueCounts,
  RECIPIENT_STATES,
  type Recipient,
  type RecipientState,
} from "../types.js";
import { type Db, type DialectName, dialect, inJson, nowIso, perDialect, type Runner, textFor } from "./db.js";

export type Local = (job: Job) => Job;

/** The job as committed (read inside the caller's transaction when `r` is one). */
export async function jobById(r: Runner, local: Local, id: string): Promise<Job | null> {
  const row = await r.get<JobRow>("SELECT * FROM jobs WHERE id = ?", [id]);
  if (!row) return null;
  const recs = await r.all<RecipientRow>("SELECT * FROM recipients WHERE job_id = ? ORDER BY idx", [id]);
  return local(toJob(row, recs.map(toRecipient)));
}

export async function mustGet(r: Runner, local: Local, id: string): Promise<Job> {
  const job = await jobById(r, local, id);
  if (!job) throw new FaxgateError("JOB_NOT_FOUND", `no job has the id ${JSON.stringify(id)}`);
  return job;
}

/**
 * The search's condition on a job's subjects, numbers and names. SQLite: LIKE folds ASCII case
 * in C (fast), other letters go through fold_case, JavaScript's toLowerCase ("müller" finds
 * "MÜLLER"; sqlite/open-database.ts); PostgreSQL: ILIKE, which folds them all.
 */
function searchWhere(d: DialectName, search: string): { sql: string; args: string[] } {
  const needle = search.trim().toLowerCase();
  const like = `%${needle.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
  if (d === "postgres") {
    const has = (col: string) => `${col} ILIKE ?`;
    return {
      sql: `(${has("(cover::jsonb ->> 'subject')")} OR ${has("(meta::jsonb -> 'origin' ->> 'subject')")}
        OR EXISTS (SELECT 1 FROM recipients r WHERE r.job_id = jobs.id AND (${has("r.number")} OR ${has("r.name")})))`,
      args: [like, like, like, like],
    };
  }
  const ascii = /^[\x20-\x7e]*$/.test(needle);
  const has = ascii ? (col: string) => `${col} LIKE ? ESCAPE '\\'` : (col: string) => `instr(fold_case(${col}), ?) > 0`;
  const arg = ascii ? like : needle;
  return {
    sql: `(${has("json_extract(cover, '$.subject')")} OR ${has("json_extract(meta, '$.origin.subject')")}
      OR EXISTS (SELECT 1 FROM recipients r WHERE r.job_id = jobs.id AND (${has("r.number")} OR ${has("r.name")})))`,
    args: [arg, arg, arg, arg],
  };
}

/** The WHERE clause of a job list or count (the same filter for both, so pages add up). */
function jobWhere(d: DialectName, filter: JobFilter): { where: string; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  const add = (cond: string, v: unknown): void => {
    where.push(cond);
    args.push(v);
  };
  if (filter.state) add("state = ?", filter.state);
  if (filter.user) add('"user" = ?', filter.user);
  if (filter.source) add("source = ?", filter.source);
  if (filter.updatedSince) add("updated_at >= ?", isoUtc(filter.updatedSince));
  refuseControlCharacters("search", filter.search);
  if (filter.search?.trim()) {
    const s = searchWhere(d, filter.search);
    where.push(s.sql);
    args.push(...s.args);
  }
  return { where: where.length ? `WHERE ${where.join(" AND ")}` : "", args };
}

/** Insertion order among jobs enqueued in the same millisecond. */
const INSERTED = dialect({ sqlite: "rowid", postgres: "seq" });
/** The recipients of a list of jobs, the ids given as one JSON array. */
const RECIPIENTS_OF = perDialect((d) => `SELECT * FROM recipients WHERE ${inJson("job_id", d)} ORDER BY job_id, idx`);

/** Newest first; `limit` (default 1000) and `offset` page through the same order. */
export async function listJobs(db: Db, local: Local, filter: JobFilter = {}): Promise<Job[]> {
  const { where, args } = jobWhere(db.dialect, filter);
  const limit = Math.max(1, Math.min(Math.floor(filter.limit ?? 1000), 100_000));
  const offset = Math.max(0, Math.floor(filter.offset ?? 0));
  const order = textFor(INSERTED, db.dialect);
  const rows = await db.all<JobRow>(
    `SELECT * FROM jobs ${where} ORDER BY created_at DESC, ${order} DESC LIMIT ? OFFSET ?`,
    [...args, limit, offset],
  );
  if (rows.length === 0) return [];
  const recs = await db.all<RecipientRow>(RECIPIENTS_OF, [JSON.stringify(rows.map((r) => r.id))]);
  const byJob = new Map<string, Recipient[]>();
  for (const r of recs) {
    const list = byJob.get(r.job_id) ?? [];
    list.push(toRecipient(r));
    byJob.set(r.job_id, list);
  }
  return rows.map((r) => local(toJob(r, byJob.get(r.id) ?? [])));
}

export async function countJobs(db: Db, filter: JobFilter = {}): Promise<number> {
  const { where, args } = jobWhere(db.dialect, filter);
  return (await db.get<{ n: number }>(`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM jobs ${where}`, args))!.n;
}

export async function counts(db: Db): Promise<QueueCounts> {
  const jobs = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  const recipients = Object.fromEntries(RECIPIENT_STATES.map((s) => [s, 0])) as Record<RecipientState, number>;
  // (PostgreSQL: four connections of the pool at once; SQLite: one after the other)
  const [j, r, oldest, pending] = await Promise.all([
    db.all<{ state: JobState; n: number }>("SELECT state, CAST(COUNT(*) AS INTEGER) AS n FROM jobs GROUP BY state"),
    db.all<{ state: RecipientState; n: number }>(
      "SELECT state, CAST(COUNT(*) AS INTEGER) AS n FROM recipients GROUP BY state",
    ),
    db.get<{ t: string | null }>(
      `SELECT MIN(created_at) AS t FROM jobs WHERE state IN (${sqlStateList(OPEN_JOB_STATES)})`,
    ),
    db.get<{ n: number }>("SELECT CAST(COUNT(*) AS INTEGER) AS n FROM notifications WHERE state = 'pending'"),
  ]);
  for (const x of j) jobs[x.state] = x.n;
  for (const x of r) recipients[x.state] = x.n;
  const t = oldest!.t;
  return {
    jobs,
    recipients,
    oldestActiveAgeSeconds: t ? Math.max(0, Math.round((db.clock.now() - Date.parse(t)) / 1000)) : null,
    notificationsPending: pending!.n,
  };
}

/** The job's history, oldest first. */
export async function listEvents(db: Db, jobId: string): Promise<JobEvent[]> {
  return (await db.all<JobEventRow>("SELECT * FROM job_events WHERE job_id = ? ORDER BY id", [jobId])).map(toJobEvent);
}

type WithUser = RecipientRow & { user: string };
const withUser = (rows: WithUser[]): Array<Recipient & { user: string }> =>
  rows.map((r) => Object.assign(toRecipient(r), { user: r.user }));

/** Faxes accepted by the service and not finished, with their job's user. */
async function listProcessing(db: Db, limit = 100_000): Promise<Array<Recipient & { user: string }>> {
  return withUser(
    await db.all<WithUser>(
      `SELECT r.*, j."user" AS "user" FROM recipients r JOIN jobs j ON j.id = r.job_id
       WHERE r.state = 'processing' ORDER BY r.sent_at LIMIT ?`,
      [limit],
    ),
  );
}

/**
 * Unknown sends that were made, and became unknown, before `sentBefore` (now minus the grace) and are
 * due for reconciliation: a lease that ran out late must not be looked up (and resent) at once.
 */
async function listUnknown(db: Db, sentBefore: Date, limit = 10_000): Promise<Array<Recipient & { user: string }>> {
  const before = sentBefore.toISOString();
  return withUser(
    await db.all<WithUser>(
      `SELECT r.*, j."user" AS "user" FROM recipients r JOIN jobs j ON j.id = r.job_id
       WHERE r.state = 'unknown' AND (r.sent_at IS NULL OR r.sent_at <= ?) AND r.updated_at <= ?
         AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?)
       ORDER BY r.sent_at LIMIT ?`,
      [before, before, nowIso(db), limit],
    ),
  );
}

/** Whether any recipient already tracks this service messageId (reconciliation must not adopt it twice). */
export async function isKnownMessage(db: Db, messageId: string): Promise<boolean> {
  return (await db.get("SELECT 1 AS one FROM recipients WHERE message_id = ? LIMIT 1", [messageId])) !== undefined;
}

/** When the next deferred recipient or unknown lookup becomes due, for the dispatcher's sleep. */
export async function nextDueAt(db: Db): Promise<string | null> {
  const r = await db.get<{ t: string | null }>(
    "SELECT MIN(next_attempt_at) AS t FROM recipients WHERE state IN ('deferred','unknown') AND next_attempt_at IS NOT NULL",
  );
  return r?.t ?? null;
}

/** Recipients the dispatcher follows (queue-store.ts RecipientFilter). */
export function listRecipients(db: Db, f: RecipientFilter): Promise<Array<Recipient & { user: string }>> {
  return f.state === "processing" ? listProcessing(db, f.limit) : listUnknown(db, f.sentBefore, f.limit);
}
