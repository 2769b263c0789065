// Reading the PostgreSQL queue: one job, pages of jobs with search, counts, a job's history, and
// the lists the dispatcher follows (faxes in progress, unknown sends, the next due time).
import type pg from "pg";
import { FaxgateError } from "../../errors.js";
import { type JobEventRow, type JobRow, type RecipientRow, isoUtc, toJob, toJobEvent, toRecipient } from "../rows.js";
import { refuseControlCharacters } from "../text-input.js";
import { OPEN_JOB_STATES } from "../transitions.js";
import type { Job, JobEvent, JobFilter, JobState, QueueCounts, Recipient, RecipientState } from "../types.js";
import { JOB_STATES, RECIPIENT_STATES } from "../types.js";
import type { PgContext, Q } from "./context.js";
import { withLocalPaths } from "./documents.js";

export async function readJob(ctx: PgContext, c: Q | pg.Pool, id: string): Promise<Job | null> {
  const j = await c.query<JobRow>("SELECT * FROM jobs WHERE id = $1", [id]);
  if (!j.rows[0]) return null;
  const r = await c.query<RecipientRow>("SELECT * FROM recipients WHERE job_id = $1 ORDER BY idx", [id]);
  return withLocalPaths(ctx, toJob(j.rows[0], r.rows.map(toRecipient)));
}

export async function getJob(ctx: PgContext, id: string): Promise<Job | null> {
  try {
    return await readJob(ctx, ctx.pool, id);
  } catch (err) {
    throw ctx.error(err, "read a job");
  }
}

export async function mustGet(ctx: PgContext, id: string): Promise<Job> {
  const job = await getJob(ctx, id);
  if (!job) throw new FaxgateError("JOB_NOT_FOUND", `no job has the id ${JSON.stringify(id)}`);
  return job;
}

function where(filter: JobFilter): { sql: string; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  const arg = (v: unknown): string => `$${args.push(v)}`;
  if (filter.state) where.push(`j.state = ${arg(filter.state)}`);
  if (filter.user) where.push(`j."user" = ${arg(filter.user)}`);
  if (filter.source) where.push(`j.source = ${arg(filter.source)}`);
  if (filter.updatedSince) where.push(`j.updated_at >= ${arg(isoUtc(filter.updatedSince))}`);
  refuseControlCharacters("search", filter.search);
  if (filter.search) {
    const p = arg(`%${filter.search.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`);
    where.push(`(EXISTS (SELECT 1 FROM recipients x WHERE x.job_id = j.id AND (x.number ILIKE ${p} OR x.name ILIKE ${p}))
      OR (j.cover::jsonb ->> 'subject') ILIKE ${p} OR (j.meta::jsonb -> 'origin' ->> 'subject') ILIKE ${p})`);
  }
  return { sql: where.length ? `WHERE ${where.join(" AND ")}` : "", args };
}

export async function listJobs(ctx: PgContext, filter: JobFilter = {}): Promise<Job[]> {
  const { sql, args } = where(filter);
  const limit = Math.max(1, Math.min(filter.limit ?? 1000, 100_000));
  const offset = Math.max(0, filter.offset ?? 0);
  const jobs = await ctx.q<JobRow>(
    "list jobs",
    `SELECT j.* FROM jobs j ${sql} ORDER BY j.created_at DESC, j.seq DESC LIMIT ${limit} OFFSET ${offset}`,
    args,
  );
  if (jobs.rows.length === 0) return [];
  const recs = await ctx.q<RecipientRow>(
    "list jobs",
    "SELECT * FROM recipients WHERE job_id = ANY($1) ORDER BY job_id, idx",
    [jobs.rows.map((r) => r.id)],
  );
  const byJob = new Map<string, Recipient[]>();
  for (const r of recs.rows) {
    const list = byJob.get(r.job_id) ?? [];
    list.push(toRecipient(r));
    byJob.set(r.job_id, list);
  }
  return jobs.rows.map((r) => withLocalPaths(ctx, toJob(r, byJob.get(r.id) ?? [])));
}

export async function countJobs(ctx: PgContext, filter: JobFilter = {}): Promise<number> {
  const { sql, args } = where(filter);
  const r = await ctx.q<{ n: number }>("count jobs", `SELECT COUNT(*)::int AS n FROM jobs j ${sql}`, args);
  return r.rows[0]!.n;
}

export async function counts(ctx: PgContext): Promise<QueueCounts> {
  const jobs = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  const recipients = Object.fromEntries(RECIPIENT_STATES.map((s) => [s, 0])) as Record<RecipientState, number>;
  const [j, r, o, n] = await Promise.all([
    ctx.q<{ state: JobState; n: number }>(
      "count the queue",
      "SELECT state, COUNT(*)::int AS n FROM jobs GROUP BY state",
    ),
    ctx.q<{ state: RecipientState; n: number }>(
      "count the queue",
      "SELECT state, COUNT(*)::int AS n FROM recipients GROUP BY state",
    ),
    ctx.q<{ t: string | null }>("count the queue", "SELECT MIN(created_at) AS t FROM jobs WHERE state = ANY($1)", [
      OPEN_JOB_STATES,
    ]),
    ctx.q<{ n: number }>("count the queue", `SELECT COUNT(*)::int AS n FROM notifications WHERE state = 'pending'`),
  ]);
  for (const x of j.rows) jobs[x.state] = x.n;
  for (const x of r.rows) recipients[x.state] = x.n;
  const t = o.rows[0]!.t;
  return {
    jobs,
    recipients,
    oldestActiveAgeSeconds: t ? Math.max(0, Math.round((ctx.clock.now() - Date.parse(t)) / 1000)) : null,
    notificationsPending: n.rows[0]!.n,
  };
}

export async function listEvents(ctx: PgContext, jobId: string): Promise<JobEvent[]> {
  const r = await ctx.q<JobEventRow>("read a job's history", "SELECT * FROM job_events WHERE job_id = $1 ORDER BY id", [
    jobId,
  ]);
  return r.rows.map(toJobEvent);
}

export async function listProcessing(ctx: PgContext, limit = 100_000): Promise<Array<Recipient & { user: string }>> {
  const r = await ctx.q<RecipientRow & { user: string }>(
    "list faxes in progress",
    `SELECT r.*, j."user" AS "user" FROM recipients r JOIN jobs j ON j.id = r.job_id WHERE r.state = 'processing' ORDER BY r.sent_at LIMIT $1`,
    [limit],
  );
  return r.rows.map((x) => ({ ...toRecipient(x), user: x.user }));
}

export async function listUnknown(
  ctx: PgContext,
  sentBefore: Date,
  limit = 10_000,
): Promise<Array<Recipient & { user: string }>> {
  const r = await ctx.q<RecipientRow & { user: string }>(
    "list unknown sends",
    `SELECT r.*, j."user" AS "user" FROM recipients r JOIN jobs j ON j.id = r.job_id
     WHERE r.state = 'unknown' AND (r.sent_at IS NULL OR r.sent_at <= $1) AND r.updated_at <= $1 AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= $2)
     ORDER BY r.sent_at LIMIT $3`,
    [sentBefore.toISOString(), ctx.now(), limit],
  );
  return r.rows.map((x) => ({ ...toRecipient(x), user: x.user }));
}

export async function isKnownMessage(ctx: PgContext, messageId: string): Promise<boolean> {
  const r = await ctx.q("look up a message", "SELECT 1 FROM recipients WHERE message_id = $1 LIMIT 1", [messageId]);
  return r.rows.length > 0;
}

export async function nextDueAt(ctx: PgContext): Promise<string | null> {
  const r = await ctx.q<{ t: string | null }>(
    "find the next due fax",
    `SELECT MIN(next_attempt_at) AS t FROM recipients WHERE state IN ('deferred','unknown') AND next_attempt_at IS NOT NULL`,
  );
  return r.rows[0]!.t;
}
