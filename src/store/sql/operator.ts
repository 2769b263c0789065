// What operators do to a job (the CLI and the console): retry, cancel, hold, release; and the
// purge of finished jobs past their retention. Each recipient moved is one step in job_events,
// its SET list rendered from the transition table.
import { FaxgateError } from "../../errors.js";
import type { OperatorStep } from "../queue-store.js";
import { sqlParkedGuard, sqlStateList } from "../transition-sql.js";
import {
  CANCEL_REFUSAL,
  FINAL_JOB_STATES,
  fromStates,
  RETRY_REFUSAL,
  TRANSITIONS,
  type TransitionName,
} from "../transitions.js";
import type { Job, RecipientState } from "../types.js";
import { type Db, inJson, nowIso, perDialect } from "./db.js";
import { appendEvent, refreshJob } from "./events.js";
import { type Local, mustGet } from "./read.js";
import { setList } from "./transitions.js";

/** Moves every recipient of job `id` that transition `name` may start from; how many moved. */
function moveAll(db: Db, id: string, name: TransitionName, by = "an operator"): Promise<number> {
  const to = TRANSITIONS[name].to;
  const select = `SELECT idx, state FROM recipients WHERE job_id = ? AND state IN (${sqlStateList(fromStates(name))})${sqlParkedGuard(name)}`;
  return db.tx(`${name} ${id}`, async (t) => {
    const rows = await t.all<{ idx: number; state: RecipientState }>(
      perDialect((d) => (d === "postgres" ? `${select} ORDER BY idx FOR UPDATE` : select)),
      [id],
    );
    if (rows.length === 0) return 0;
    const now = nowIso(db);
    const set = setList(name);
    for (const r of rows) {
      await t.run(set.update("WHERE job_id = ? AND idx = ?"), [...set.args({}, now), id, r.idx]);
      await appendEvent(t, now, { jobId: id, idx: r.idx, transition: name, from: r.state, to, detail: `by ${by}` });
    }
    await refreshJob(t, now, id);
    return rows.length;
  });
}

/** Why a step moved nothing, after "job <id> is <state>: ". */
const REFUSALS: Record<OperatorStep, string> = {
  retry: RETRY_REFUSAL,
  cancel: CANCEL_REFUSAL,
  hold: "only queued or deferred recipients can be held",
  release: "it has no held recipients",
};

/**
 * Retry (failed, cancelled or parked recipients start again with a fresh attempt budget), cancel,
 * hold or release every recipient of job `id` the step may move; `by` names who did it in the
 * timeline (default: an operator). Refused (JOB_STATE, with the reason) when none moves.
 */
export async function operate(db: Db, local: Local, id: string, step: OperatorStep, by?: string): Promise<Job> {
  const job = await mustGet(db, local, id);
  if (job.state === "corrupt")
    throw new FaxgateError(
      "JOB_STATE",
      `job ${id} is corrupt: ${step === "retry" ? "its input could not be read, there is nothing to send" : REFUSALS[step]}`,
    );
  if ((await moveAll(db, id, step, by)) === 0)
    throw new FaxgateError("JOB_STATE", `job ${id} is ${job.state}: ${REFUSALS[step]}`);
  return mustGet(db, local, id);
}

/**
 * Jobs one purge transaction takes. The purge runs on the daemon's main thread: 5,000 jobs in one
 * go (rows, then each folder removed synchronously) held it for 1.8 to 2.4 s, every session
 * waiting. In batches, with the folders removed on the thread pool, the main thread is back
 * between batches (20 ms at most for the same 5,000).
 */
export const PURGE_BATCH = 200;

const CHOOSE = `SELECT id FROM jobs j WHERE state IN (${sqlStateList(FINAL_JOB_STATES)}) AND finished_at IS NOT NULL AND finished_at < ?
  AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.job_id = j.id AND n.state = 'pending') LIMIT ${PURGE_BATCH}`;
const DROP_NOTICES = perDialect((d) => `DELETE FROM notifications WHERE ${inJson("job_id", d)} AND state <> 'pending'`);
// the job's recipients, history and documents go with it (ON DELETE CASCADE)
const DROP_JOBS = perDialect((d) => `DELETE FROM jobs WHERE ${inJson("id", d)}`);

/**
 * Removes final jobs older than the retention (rows, history, documents), then `removeFiles` of
 * each batch (the job's folder, or this instance's cached copies); returns how many.
 */
export async function purge(
  db: Db,
  olderThanMs: number,
  removeFiles: (jobId: string) => Promise<void>,
): Promise<{ purged: number; cutoff: string }> {
  const cutoff = new Date(db.clock.now() - olderThanMs).toISOString();
  let purged = 0;
  for (;;) {
    // Rows go first, files after: a crash in between leaves orphan folders (swept at open), never
    // a row pointing at missing files. Chosen inside the write, so that a job retried by another
    // process meanwhile is not taken. Jobs whose notice is still pending stay: the notifier reads them.
    const ids = await db.tx("purge finished jobs", async (t) => {
      const chosen = (await t.all<{ id: string }>(CHOOSE, [cutoff])).map((r) => r.id);
      if (chosen.length === 0) return chosen;
      const list = JSON.stringify(chosen);
      await t.run(DROP_NOTICES, [list]);
      await t.run(DROP_JOBS, [list]);
      return chosen;
    });
    // one at a time on the thread pool, which intake's own file work shares (four at a time took
    // longer in all and held the main thread more, 116 against 20 ms at most, for 5,000 jobs)
    for (const id of ids) await removeFiles(id);
    purged += ids.length;
    if (ids.length < PURGE_BATCH) break;
  }
  return { purged, cutoff };
}
