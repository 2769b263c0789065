// The history of a job on PostgreSQL (JobEvent): one row per step, written in the step's own
// transaction, and the job's summary state recomputed from its recipients after each change.
import { deriveJobState, isFinalJobState } from "../job-state.js";
import { outcomeNotice } from "../notification-payloads.js";
import type { JobState, NewEvent, RecipientState } from "../types.js";
import type { PgContext, Q } from "./context.js";
import { insertNotification } from "./notifications.js";

/** Appends one step to the job's history; call inside the transaction that makes the step. */
export async function appendEvent(ctx: PgContext, c: Q, e: NewEvent): Promise<void> {
  await c.query(
    "INSERT INTO job_events (job_id, idx, at, transition, from_state, to_state, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    [e.jobId, e.idx, ctx.now(), e.transition, e.from, e.to, e.detail ?? null],
  );
}

/** Recomputes the job's state in the same transaction; on the step to final, queues the outcome notice. */
export async function refreshJob(ctx: PgContext, c: Q, jobId: string): Promise<void> {
  const j = await c.query<{ state: JobState; user: string; finals: number }>(
    'SELECT state, "user", finals FROM jobs WHERE id = $1 FOR UPDATE',
    [jobId],
  );
  const job = j.rows[0];
  if (!job || job.state === "corrupt") return;
  const states = (
    await c.query<{ state: RecipientState }>("SELECT state FROM recipients WHERE job_id = $1", [jobId])
  ).rows.map((r) => r.state);
  const next = deriveJobState(states);
  const now = ctx.now();
  if (next === job.state) {
    await c.query("UPDATE jobs SET updated_at = $1 WHERE id = $2", [now, jobId]);
    return;
  }
  const becomesFinal = isFinalJobState(next) && !isFinalJobState(job.state);
  await c.query("UPDATE jobs SET state = $1, updated_at = $2, finished_at = $3, finals = finals + $4 WHERE id = $5", [
    next,
    now,
    isFinalJobState(next) ? now : null,
    becomesFinal ? 1 : 0,
    jobId,
  ]);
  if (becomesFinal) await insertNotification(ctx, c, outcomeNotice(jobId, job.user, job.finals));
}

/** Refreshes each job once, in id order (two transactions touching the same jobs lock them alike). */
export async function refreshJobs(ctx: PgContext, c: Q, jobIds: readonly string[]): Promise<void> {
  for (const id of [...new Set(jobIds)].sort()) await refreshJob(ctx, c, id);
}
