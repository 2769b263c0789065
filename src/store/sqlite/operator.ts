// What operators do to a job (the CLI and the console): retry, cancel, hold, release; and the
// purge of finished jobs past their retention. Each recipient moved is one step in job_events.
import { promises as fsp } from "node:fs";
import path from "node:path";
import { FaxgateError } from "../../errors.js";
import { renderSet, SQLITE, sqlParkedGuard, sqlStateList } from "../transition-sql.js";
import {
  CANCEL_REFUSAL,
  FINAL_JOB_STATES,
  fromStates,
  RETRY_REFUSAL,
  TRANSITIONS,
  type TransitionName,
} from "../transitions.js";
import type { Job, RecipientState } from "../types.js";
import type { SqliteContext } from "./context.js";
import { appendEvent, refreshJob } from "./events.js";
import { mustGet } from "./read.js";

/** Moves every recipient of job `id` that transition `name` may start from; how many moved. */
function moveAll(c: SqliteContext, id: string, name: TransitionName, by = "an operator"): number {
  const to = TRANSITIONS[name].to;
  return c.write(() => {
    const rows = c
      .sql(
        `SELECT idx, state FROM recipients WHERE job_id = ? AND state IN (${sqlStateList(fromStates(name))})${sqlParkedGuard(name)}`,
      )
      .all(id) as Array<{ idx: number; state: RecipientState }>;
    if (rows.length === 0) return 0;
    const set = renderSet(name, SQLITE);
    const mark = c.sql(`UPDATE recipients SET ${set.sql} WHERE job_id = ? AND idx = ?`);
    const args = set.args({}, c.now());
    for (const r of rows) {
      mark.run(...args, id, r.idx);
      appendEvent(c, { jobId: id, idx: r.idx, transition: name, from: r.state, to, detail: `by ${by}` });
    }
    refreshJob(c, id);
    return rows.length;
  });
}

function operate(c: SqliteContext, id: string, name: TransitionName, refusal: string, by?: string): Job {
  const job = mustGet(c, id);
  if (job.state === "corrupt") throw new FaxgateError("JOB_STATE", `job ${id} is corrupt: ${refusal}`);
  if (moveAll(c, id, name, by) === 0) throw new FaxgateError("JOB_STATE", `job ${id} is ${job.state}: ${refusal}`);
  return mustGet(c, id);
}

/** Failed, cancelled or parked recipients start again with a fresh attempt budget. */
export function retry(c: SqliteContext, id: string): Job {
  const job = mustGet(c, id);
  if (job.state === "corrupt")
    throw new FaxgateError("JOB_STATE", `job ${id} is corrupt: its input could not be read, there is nothing to send`);
  return operate(c, id, "retry", RETRY_REFUSAL);
}

/** `by` names who cancelled, for the timeline (default: an operator). */
export function cancel(c: SqliteContext, id: string, by?: string): Job {
  return operate(c, id, "cancel", CANCEL_REFUSAL, by);
}

export function hold(c: SqliteContext, id: string): Job {
  return operate(c, id, "hold", "only queued or deferred recipients can be held");
}

export function release(c: SqliteContext, id: string): Job {
  return operate(c, id, "release", "it has no held recipients");
}

/**
 * Jobs one purge transaction takes. The purge runs on the daemon's main thread: 5,000 jobs in one
 * go (rows, then each folder removed synchronously) held it for 1.8 to 2.4 s, every session
 * waiting. In batches, with the folders removed on the thread pool, the main thread is back
 * between batches (20 ms at most for the same 5,000).
 */
export const PURGE_BATCH = 200;

/** Removes final jobs older than the retention (rows, history, documents); returns how many. */
export async function purge(c: SqliteContext, olderThanMs: number): Promise<number> {
  const cutoff = new Date(c.clock.now() - olderThanMs).toISOString();
  let total = 0;
  for (;;) {
    // Rows go first, folders after: a crash in between leaves orphan folders (swept at open),
    // never a row pointing at missing files. Chosen inside the write, so that a job retried by
    // another process (the CLI) meanwhile is not taken.
    const ids = c.write(() => {
      // Jobs whose notice is still pending stay: the notifier reads them.
      const chosen = (
        c
          .sql(
            `SELECT id FROM jobs j WHERE state IN (${sqlStateList(FINAL_JOB_STATES)}) AND finished_at IS NOT NULL AND finished_at < ?
           AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.job_id = j.id AND n.state = 'pending') LIMIT ${PURGE_BATCH}`,
          )
          .all(cutoff) as Array<{ id: string }>
      ).map((r) => r.id);
      if (chosen.length === 0) return chosen;
      const list = JSON.stringify(chosen);
      c.sql(`DELETE FROM notifications WHERE job_id IN (SELECT value FROM json_each(?)) AND state != 'pending'`).run(
        list,
      );
      c.sql(`DELETE FROM job_events WHERE job_id IN (SELECT value FROM json_each(?))`).run(list);
      c.sql(`DELETE FROM recipients WHERE job_id IN (SELECT value FROM json_each(?))`).run(list);
      c.sql(`DELETE FROM document_data WHERE job_id IN (SELECT value FROM json_each(?))`).run(list);
      c.sql(`DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?))`).run(list);
      return chosen;
    });
    if (ids.length === 0) break;
    // one at a time on the thread pool, which intake's own file work shares (four at a time took
    // longer in all and held the main thread more, 116 against 20 ms at most, for 5,000 jobs)
    for (const id of ids) await fsp.rm(path.join(c.documentsDir, id), { recursive: true, force: true });
    total += ids.length;
    if (ids.length < PURGE_BATCH) break;
  }
  if (total > 0) c.log.info({ jobs: total, cutoff }, "purged finished jobs");
  return total;
}
