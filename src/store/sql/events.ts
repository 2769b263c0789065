// The history of a job (JobEvent): one row per step, written in the step's own transaction, and
// the job's summary state recomputed from its recipients after each change (on the step to a
// final state, its outcome notice queued).
import { deriveJobState, isFinalJobState } from "../job-state.js";
import { outcomeNotice } from "../notification-payloads.js";
import type { JobState, NewEvent, RecipientState } from "../types.js";
import { dialect, type Runner } from "./db.js";
import { insertNotification } from "./notifications.js";

/** The statement that appends one step to the job's history (intake's commit runs it as is). */
export const INSERT_EVENT =
  "INSERT INTO job_events (job_id, idx, at, transition, from_state, to_state, detail) VALUES (?, ?, ?, ?, ?, ?, ?)";

export const eventArgs = (e: NewEvent, at: string): unknown[] => [
  e.jobId,
  e.idx,
  at,
  e.transition,
  e.from,
  e.to,
  e.detail ?? null,
];

/** Appends one step to the job's history; call inside the transaction that makes the step. */
export async function appendEvent(t: Runner, now: string, e: NewEvent): Promise<void> {
  await t.run(INSERT_EVENT, eventArgs(e, now));
}

/** Recomputes the job's state column after recipient changes, inside the same transaction. */
export async function refreshJob(t: Runner, now: string, jobId: string): Promise<void> {
  const job = await t.get<{ state: JobState; user: string; finals: number }>(
    dialect({
      sqlite: 'SELECT state, "user", finals FROM jobs WHERE id = ?',
      postgres: 'SELECT state, "user", finals FROM jobs WHERE id = ? FOR UPDATE',
    }),
    [jobId],
  );
  if (!job || job.state === "corrupt") return;
  const states = (await t.all<{ state: RecipientState }>("SELECT state FROM recipients WHERE job_id = ?", [jobId])).map(
    (r) => r.state,
  );
  const next = deriveJobState(states);
  if (next === job.state) {
    await t.run("UPDATE jobs SET updated_at = ? WHERE id = ?", [now, jobId]);
    return;
  }
  const becomesFinal = isFinalJobState(next) && !isFinalJobState(job.state);
  await t.run("UPDATE jobs SET state = ?, updated_at = ?, finished_at = ?, finals = finals + ? WHERE id = ?", [
    next,
    now,
    isFinalJobState(next) ? now : null,
    becomesFinal ? 1 : 0,
    jobId,
  ]);
  if (becomesFinal) await insertNotification(t, now, outcomeNotice(jobId, job.user, job.finals));
}

/** Refreshes each job once, in id order (two transactions touching the same jobs lock them alike). */
export async function refreshJobs(t: Runner, now: string, jobIds: readonly string[]): Promise<void> {
  for (const id of [...new Set(jobIds)].sort()) await refreshJob(t, now, id);
}
