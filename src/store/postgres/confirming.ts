// A first fax to a new number (PostgreSQL): the owner confirms it (`confirm`: every held
// recipient of the job queued, in one transaction) or it ends unconfirmed past its window
// (`unconfirmed`). Both move only recipients that wait for confirmation (transitions.ts
// AWAITS_CONFIRMATION), under row locks, so a second click, a second tab, another gateway or the
// expiry racing a click find nothing to move: one winner.
import { FAXED_NUMBERS_SQL } from "../faxed-numbers.js";
import { POSTGRES, renderSet, sqlParkedGuard } from "../transition-sql.js";
import { fromStates, TRANSITIONS, UNCONFIRMED } from "../transitions.js";
import type { Job } from "../types.js";
import { notifyJob, type PgContext } from "./context.js";
import { appendEvent, refreshJob } from "./events.js";
import { mustGet } from "./read.js";

const guard = (name: "confirm" | "unconfirmed"): string => sqlParkedGuard(name, "r.state", "r.last_error", "r.number");

/** Which of `numbers` `user` has faxed before (faxed-numbers.ts says what counts). */
export async function faxedNumbers(ctx: PgContext, user: string, numbers: readonly string[]): Promise<string[]> {
  if (numbers.length === 0) return [];
  const r = await ctx.q<{ number: string }>("the numbers faxed before could not be read", FAXED_NUMBERS_SQL.postgres, [
    user,
    [...numbers],
  ]);
  return r.rows.map((x) => x.number);
}

/** Queues every recipient of job `id` that waits for confirmation; answers how many moved. */
export async function confirm(ctx: PgContext, id: string, by: string): Promise<{ job: Job; moved: number }> {
  const moved = await ctx.tx(`confirm ${id}`, async (c) => {
    const set = renderSet("confirm", POSTGRES, { alias: "r" });
    const n = set.count;
    const r = await c.query<{ idx: number }>(
      `UPDATE recipients r SET ${set.sql}
       WHERE r.job_id = $${n + 1} AND r.state = ANY($${n + 2})${guard("confirm")}
       RETURNING r.idx`,
      [...set.args({}, ctx.now()), id, fromStates("confirm")],
    );
    for (const x of r.rows)
      await appendEvent(ctx, c, {
        jobId: id,
        idx: x.idx,
        transition: "confirm",
        from: "held",
        to: TRANSITIONS.confirm.to,
        detail: `by ${by}`,
      });
    if (r.rows.length > 0) {
      await refreshJob(ctx, c, id);
      await notifyJob(ctx, c, id);
    }
    return r.rows.length;
  });
  return { job: await mustGet(ctx, id), moved };
}

/** Jobs created before `before` still waiting for confirmation end (cancelled); answers them. */
export async function expireUnconfirmed(ctx: PgContext, before: Date, reason: string): Promise<Job[]> {
  const ids = await ctx.tx("expire jobs waiting for confirmation", async (c) => {
    const set = renderSet("unconfirmed", POSTGRES, { alias: "r" });
    const n = set.count;
    const r = await c.query<{ job_id: string; idx: number }>(
      `UPDATE recipients r SET ${set.sql}
       FROM jobs j WHERE j.id = r.job_id AND j.created_at < $${n + 1} AND r.state = ANY($${n + 2})${guard("unconfirmed")}
       RETURNING r.job_id, r.idx`,
      [
        ...set.args({ last_error: `${UNCONFIRMED}: ${reason}` }, ctx.now()),
        before.toISOString(),
        fromStates("unconfirmed"),
      ],
    );
    for (const x of r.rows)
      await appendEvent(ctx, c, {
        jobId: x.job_id,
        idx: x.idx,
        transition: "unconfirmed",
        from: "held",
        to: TRANSITIONS.unconfirmed.to,
        detail: reason,
      });
    const jobs = [...new Set(r.rows.map((x) => x.job_id))];
    for (const id of jobs) await refreshJob(ctx, c, id);
    return jobs;
  });
  const out: Job[] = [];
  for (const id of ids) out.push(await mustGet(ctx, id));
  return out;
}
