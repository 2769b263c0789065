// Print now, address later (SQLite): a job that waits for an address gets its numbers from its
// owner (`address`), or ends when no one gave them in time (`unaddressed`). Both move only the
// placeholder recipient (transitions.ts NEEDS_ADDRESS), in one write each.
import { FaxgateError } from "../../errors.js";
import { renderSet, SQLITE, sqlParkedGuard, sqlStateList } from "../transition-sql.js";
import { fromStates, NEEDS_ADDRESS } from "../transitions.js";
import type { CoverSpec, Job, NewRecipient } from "../types.js";
import type { SqliteContext } from "./context.js";
import { appendEvent, refreshJob } from "./events.js";
import { mustGet } from "./read.js";

const PLACEHOLDER = (name: "address" | "unaddressed") =>
  `SELECT r.job_id, r.idx FROM recipients r WHERE r.state IN (${sqlStateList(fromStates(name))})${sqlParkedGuard(name, "r.state", "r.last_error", "r.number")}`;

export function address(c: SqliteContext, id: string, input: { recipients: NewRecipient[]; cover: CoverSpec }): Job {
  const seen = new Set<string>();
  const recipients = input.recipients.filter((r) => r.number !== "" && !seen.has(r.number) && seen.add(r.number));
  if (recipients.length === 0) throw new FaxgateError("NO_DESTINATION", "a fax needs at least one number");
  c.write(() => {
    const row = c.sql(`${PLACEHOLDER("address")} AND r.job_id = ?`).get(id) as { idx: number } | undefined;
    if (!row)
      throw new FaxgateError(
        "JOB_STATE",
        `job ${id} is not waiting for an address (it was addressed, cancelled or expired meanwhile)`,
      );
    const now = c.now();
    const [first, ...rest] = recipients;
    const set = renderSet("address", SQLITE);
    c.sql(`UPDATE recipients SET ${set.sql} WHERE job_id = ? AND idx = ?`).run(
      ...set.args({ number: first!.number, name: first!.name ?? null }, now),
      id,
      row.idx,
    );
    appendEvent(c, {
      jobId: id,
      idx: row.idx,
      transition: "address",
      from: "held",
      to: "queued",
      detail: "by its owner",
    });
    const insert = c.sql(
      `INSERT INTO recipients (job_id, idx, number, name, state, budget_from, created_at, updated_at) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?)`,
    );
    rest.forEach((r, i) => {
      insert.run(id, row.idx + 1 + i, r.number, r.name ?? null, now, now, now);
      appendEvent(c, {
        jobId: id,
        idx: row.idx + 1 + i,
        transition: "address",
        from: null,
        to: "queued",
        detail: "by its owner",
      });
    });
    c.sql("UPDATE jobs SET cover = ? WHERE id = ?").run(JSON.stringify(input.cover), id);
    refreshJob(c, id);
  });
  return mustGet(c, id);
}

/** Jobs created before `before` still waiting for an address end (cancelled); answers them. */
export function expireUnaddressed(c: SqliteContext, before: Date, reason: string): Job[] {
  const ids = c.write(() => {
    const rows = c
      .sql(`${PLACEHOLDER("unaddressed")} AND r.job_id IN (SELECT id FROM jobs WHERE created_at < ?)`)
      .all(before.toISOString()) as Array<{ job_id: string; idx: number }>;
    const now = c.now();
    const set = renderSet("unaddressed", SQLITE);
    const mark = c.sql(`UPDATE recipients SET ${set.sql} WHERE job_id = ? AND idx = ?`);
    const args = set.args({ last_error: `${NEEDS_ADDRESS}: ${reason}` }, now);
    for (const r of rows) {
      mark.run(...args, r.job_id, r.idx);
      appendEvent(c, {
        jobId: r.job_id,
        idx: r.idx,
        transition: "unaddressed",
        from: "held",
        to: "cancelled",
        detail: reason,
      });
      refreshJob(c, r.job_id);
    }
    return rows.map((r) => r.job_id);
  });
  return ids.map((id) => mustGet(c, id));
}
