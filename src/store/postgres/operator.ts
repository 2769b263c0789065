// What operators do to a job on PostgreSQL (the CLI and the console): retry, cancel, hold,
// release; and the purge of finished jobs past their retention. Each recipient moved is one step
// in job_events, its SET list rendered from the transition table.
import { promises as fsp } from "node:fs";
import path from "node:path";
import { FaxgateError } from "../../errors.js";
import { POSTGRES, renderSet, sqlParkedGuard } from "../transition-sql.js";
import {
  CANCEL_REFUSAL,
  FINAL_JOB_STATES,
  fromStates,
  RETRY_REFUSAL,
  TRANSITIONS,
  type TransitionName,
} from "../transitions.js";
import type { Job, RecipientState } from "../types.js";
import type { PgContext } from "./context.js";
import { appendEvent, refreshJob } from "./events.js";
import { mustGet } from "./read.js";

/** Moves every recipient of job `id` that transition `name` may start from; how many moved. */
function moveAll(ctx: PgContext, id: string, name: TransitionName, by = "an operator"): Promise<number> {
  const to = TRANSITIONS[name].to;
  return ctx.tx(`${name} ${id}`, async (c) => {
    const set = renderSet(name, POSTGRES, { alias: "r" });
    const n = set.count;
    const r = await c.query<{ idx: number; state: RecipientState }>(
      `UPDATE recipients r SET ${set.sql}
       FROM recipients old WHERE old.job_id = r.job_id AND old.idx = r.idx AND r.job_id = $${n + 1} AND r.state = ANY($${n + 2})${sqlParkedGuard(name, "r.state", "r.last_error", "r.number")}
       RETURNING r.idx, old.state`,
      [...set.args({}, ctx.now()), id, fromStates(name)],
    );
    for (const x of r.rows)
      await appendEvent(ctx, c, { jobId: id, idx: x.idx, transition: name, from: x.state, to, detail: `by ${by}` });
    if (r.rows.length > 0) await refreshJob(ctx, c, id);
    return r.rows.length;
  });
}

async function operate(ctx: PgContext, id: string, name: TransitionName, refusal: string, by?: string): Promise<Job> {
  const job = await mustGet(ctx, id);
  if (job.state === "corrupt") throw new FaxgateError("JOB_STATE", `job ${id} is corrupt: ${refusal}`);
  if ((await moveAll(ctx, id, name, by)) === 0)
    throw new FaxgateError("JOB_STATE", `job ${id} is ${job.state}: ${refusal}`);
  return mustGet(ctx, id);
}

/** Failed, cancelled or parked recipients start again with a fresh attempt budget. */
export async function retry(ctx: PgContext, id: string): Promise<Job> {
  const job = await mustGet(ctx, id);
  if (job.state === "corrupt")
    throw new FaxgateError("JOB_STATE", `job ${id} is corrupt: its input could not be read, there is nothing to send`);
  return operate(ctx, id, "retry", RETRY_REFUSAL);
}

/** `by` names who cancelled, for the timeline (default: an operator). */
export function cancel(ctx: PgContext, id: string, by?: string): Promise<Job> {
  return operate(ctx, id, "cancel", CANCEL_REFUSAL, by);
}

export function hold(ctx: PgContext, id: string): Promise<Job> {
  return operate(ctx, id, "hold", "only queued or deferred recipients can be held");
}

export function release(ctx: PgContext, id: string): Promise<Job> {
  return operate(ctx, id, "release", "it has no held recipients");
}

/** Removes final jobs older than the retention (rows, history, documents, cached copies); returns how many. */
export async function purge(ctx: PgContext, olderThanMs: number): Promise<number> {
  const cutoff = new Date(ctx.clock.now() - olderThanMs).toISOString();
  const ids = await ctx.tx("purge finished jobs", async (c) => {
    // Jobs whose notice is still pending stay: the notifier reads them.
    const r = await c.query<{ id: string }>(
      `DELETE FROM jobs j WHERE state = ANY($1) AND finished_at IS NOT NULL AND finished_at < $2
         AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.job_id = j.id AND n.state = 'pending')
       RETURNING id`,
      [FINAL_JOB_STATES, cutoff],
    );
    const list = r.rows.map((x) => x.id);
    if (list.length > 0)
      await c.query(`DELETE FROM notifications WHERE job_id = ANY($1) AND state <> 'pending'`, [list]);
    return list;
  });
  // on the thread pool: thousands of folders removed at once held the main thread for seconds
  for (const id of ids) await fsp.rm(path.join(ctx.cacheDir, id), { recursive: true, force: true });
  if (ids.length > 0) ctx.log.info({ jobs: ids.length, cutoff }, "purged finished jobs");
  return ids.length;
}
