// The history of a job (JobEvent): one row per step, written in the step's own transaction, and
// the job's summary state recomputed from its recipients after each change.
import type { JobState, NewEvent, RecipientState } from "../types.js";
import { deriveJobState, isFinalJobState } from "../job-state.js";
import { outcomeNotice } from "../notification-payloads.js";
import type { SqliteContext } from "./context.js";
import type { Statement } from "./intake-writer.js";
import { insertNotification } from "./notifications.js";

/** Appends one step to the job's history; call inside the transaction that makes the step. */
export function appendEvent(c: SqliteContext, e: NewEvent): void {
  const [text, params] = eventStatement(e, c.now());
  c.sql(text).run(...params);
}

/** The statement that appends the step at `at` (intake's commit runs it on its own thread). */
export function eventStatement(e: NewEvent, at: string): Statement {
  return [
    "INSERT INTO job_events (job_id, idx, at, transition, from_state, to_state, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
    [e.jobId, e.idx, at, e.transition, e.from, e.to, e.detail ?? null],
  ];
}

/**
 * Recomputes the job's state column after recipient changes; call inside the same
 * transaction. On the step to a final state, enqueues the outcome notification.
 */
export function refreshJob(c: SqliteContext, jobId: string): void {
  const job = c.sql("SELECT state, user, finals FROM jobs WHERE id = ?").get(jobId) as
    | { state: JobState; user: string; finals: number }
    | undefined;
  if (!job || job.state === "corrupt") return;
  const states = (
    c.sql("SELECT state FROM recipients WHERE job_id = ?").all(jobId) as Array<{ state: RecipientState }>
  ).map((r) => r.state);
  const next = deriveJobState(states);
  const now = c.now();
  if (next === job.state) {
    c.sql("UPDATE jobs SET updated_at = ? WHERE id = ?").run(now, jobId);
    return;
  }
  const becomesFinal = isFinalJobState(next) && !isFinalJobState(job.state);
  c.sql("UPDATE jobs SET state = ?, updated_at = ?, finished_at = ?, finals = finals + ? WHERE id = ?").run(
    next,
    now,
    isFinalJobState(next) ? now : null,
    becomesFinal ? 1 : 0,
    jobId,
  );
  if (becomesFinal) insertNotification(c, outcomeNotice(jobId, job.user, job.finals));
}
