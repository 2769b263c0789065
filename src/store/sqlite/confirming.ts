// A first fax to a new number (SQLite): the owner confirms it (`confirm`: every held recipient of
// the job queued, in one write) or it ends unconfirmed past its window (`unconfirmed`). Both move
// only recipients that wait for confirmation (transitions.ts AWAITS_CONFIRMATION), so a second
// click, a second tab or the expiry racing a click find nothing to move: one winner.
import { FAXED_NUMBERS_SQL } from "../faxed-numbers.js";
import { renderSet, SQLITE, sqlParkedGuard, sqlStateList } from "../transition-sql.js";
import { fromStates, TRANSITIONS, UNCONFIRMED } from "../transitions.js";
import type { Job } from "../types.js";
import type { SqliteContext } from "./context.js";
import { appendEvent, refreshJob } from "./events.js";
import { mustGet } from "./read.js";

const WAITING = (name: "confirm" | "unconfirmed") =>
  `SELECT r.job_id, r.idx FROM recipients r WHERE r.state IN (${sqlStateList(fromStates(name))})${sqlParkedGuard(name, "r.state", "r.last_error", "r.number")}`;

/** Which of `numbers` `user` has faxed before (faxed-numbers.ts says what counts). */
export function faxedNumbers(c: SqliteContext, user: string, numbers: readonly string[]): string[] {
  if (numbers.length === 0) return [];
  const rows = c.sql(FAXED_NUMBERS_SQL.sqlite).all(user, JSON.stringify(numbers)) as Array<{ number: string }>;
  return rows.map((r) => r.number);
}

/** Queues every recipient of job `id` that waits for confirmation; answers how many moved. */
export function confirm(c: SqliteContext, id: string, by: string): { job: Job; moved: number } {
  const moved = c.write(() => {
    const rows = c.sql(`${WAITING("confirm")} AND r.job_id = ?`).all(id) as Array<{ idx: number }>;
    if (rows.length === 0) return 0;
    const set = renderSet("confirm", SQLITE);
    const mark = c.sql(`UPDATE recipients SET ${set.sql} WHERE job_id = ? AND idx = ?`);
    const args = set.args({}, c.now());
    for (const r of rows) {
      mark.run(...args, id, r.idx);
      appendEvent(c, {
        jobId: id,
        idx: r.idx,
        transition: "confirm",
        from: "held",
        to: TRANSITIONS.confirm.to,
        detail: `by ${by}`,
      });
    }
    refreshJob(c, id);
    return rows.length;
  });
  return { job: mustGet(c, id), moved };
}

/** Jobs created before `before` still waiting for confirmation end (cancelled); answers them. */
export function expireUnconfirmed(c: SqliteContext, before: Date, reason: string): Job[] {
  const ids = c.write(() => {
    const rows = c
      .sql(`${WAITING("unconfirmed")} AND r.job_id IN (SELECT id FROM jobs WHERE created_at < ?)`)
      .all(before.toISOString()) as Array<{ job_id: string; idx: number }>;
    const set = renderSet("unconfirmed", SQLITE);
    const mark = c.sql(`UPDATE recipients SET ${set.sql} WHERE job_id = ? AND idx = ?`);
    const args = set.args({ last_error: `${UNCONFIRMED}: ${reason}` }, c.now());
    for (const r of rows) {
      mark.run(...args, r.job_id, r.idx);
      appendEvent(c, {
        jobId: r.job_id,
        idx: r.idx,
        transition: "unconfirmed",
        from: "held",
        to: TRANSITIONS.unconfirmed.to,
        detail: reason,
      });
    }
    const jobs = [...new Set(rows.map((r) => r.job_id))];
    for (const id of jobs) refreshJob(c, id);
    return jobs;
  });
  return ids.map((id) => mustGet(c, id));
}
