// Print now, address later (PostgreSQL): a job that waits for an address gets its numbers from
// its owner (`address`), or ends when no one gave them in time (`unaddressed`). Both move only the
// placeholder recipient (transitions.ts NEEDS_ADDRESS), in one transaction each.
import { FaxgateError } from "../../errors.js";
import { POSTGRES, renderSet, sqlParkedGuard } from "../transition-sql.js";
import { fromStates, NEEDS_ADDRESS, TRANSITIONS } from "../transitions.js";
import type { CoverSpec, Job, NewRecipient } from "../types.js";
import { notifyJob, type PgContext } from "./context.js";
import { appendEvent, refreshJob } from "./events.js";
import { mustGet } from "./read.js";

const placeholder = (name: "address" | "unaddressed"): string =>
  sqlParkedGuard(name, "r.state", "r.last_error", "r.number");

export async function address(
  ctx: PgContext,
  id: string,
  input: { recipients: NewRecipient[]; cover: CoverSpec },
): Promise<Job> {
  const seen = new Set<string>();
  const recipients = input.recipients.filter((r) => r.number !== "" && !seen.has(r.number) && seen.add(r.number));
  if (recipients.length === 0) throw new FaxgateError("NO_DESTINATION", "a fax needs at least one number");
  await ctx.tx(`address ${id}`, async (c) => {
    const r = await c.query<{ idx: number }>(
      `SELECT r.idx FROM recipients r WHERE r.job_id = $1 AND r.state = ANY($2)${placeholder("address")} FOR UPDATE`,
      [id, fromStates("address")],
    );
    const row = r.rows[0];
    if (!row)
      throw new FaxgateError(
        "JOB_STATE",
        `job ${id} is not waiting for an address (it was addressed, cancelled or expired meanwhile)`,
      );
    const now = ctx.now();
    const [first, ...rest] = recipients;
    const set = renderSet("address", POSTGRES);
    await c.query(`UPDATE recipients SET ${set.sql} WHERE job_id = $${set.count + 1} AND idx = $${set.count + 2}`, [
      ...set.args({ number: first!.number, name: first!.name ?? null }, now),
      id,
      row.idx,
    ]);
    const to = TRANSITIONS.address.to;
    await appendEvent(ctx, c, {
      jobId: id,
      idx: row.idx,
      transition: "address",
      from: "held",
      to,
      detail: "by its owner",
    });
    for (const [i, x] of rest.entries()) {
      await c.query(
        `INSERT INTO recipients (job_id, idx, number, name, state, budget_from, created_at, updated_at) VALUES ($1, $2, $3, $4, $6, $5, $5, $5)`,
        [id, row.idx + 1 + i, x.number, x.name ?? null, now, to],
      );
      await appendEvent(ctx, c, {
        jobId: id,
        idx: row.idx + 1 + i,
        transition: "address",
        from: null,
        to,
        detail: "by its owner",
      });
    }
    await c.query("UPDATE jobs SET cover = $1 WHERE id = $2", [JSON.stringify(input.cover), id]);
    await refreshJob(ctx, c, id);
    await notifyJob(ctx, c, id);
  });
  return mustGet(ctx, id);
}

/** Jobs created before `before` still waiting for an address end (cancelled); answers them. */
export async function expireUnaddressed(ctx: PgContext, before: Date, reason: string): Promise<Job[]> {
  const ids = await ctx.tx("expire jobs waiting for an address", async (c) => {
    const set = renderSet("unaddressed", POSTGRES, { alias: "r" });
    const n = set.count;
    const r = await c.query<{ job_id: string; idx: number }>(
      `UPDATE recipients r SET ${set.sql}
       FROM jobs j WHERE j.id = r.job_id AND j.created_at < $${n + 1} AND r.state = ANY($${n + 2})${placeholder("unaddressed")}
       RETURNING r.job_id, r.idx`,
      [
        ...set.args({ last_error: `${NEEDS_ADDRESS}: ${reason}` }, ctx.now()),
        before.toISOString(),
        fromStates("unaddressed"),
      ],
    );
    for (const x of r.rows) {
      await appendEvent(ctx, c, {
        jobId: x.job_id,
        idx: x.idx,
        transition: "unaddressed",
        from: "held",
        to: TRANSITIONS.unaddressed.to,
        detail: reason,
      });
      await refreshJob(ctx, c, x.job_id);
    }
    return r.rows.map((x) => x.job_id);
  });
  const out: Job[] = [];
  for (const id of ids) out.push(await mustGet(ctx, id));
  return out;
}
