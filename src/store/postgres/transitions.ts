// A recipient's steps after its claim on PostgreSQL, as sqlite/transitions.ts has them: each is
// one row of the transition table (../transitions.ts), its guard and SET list rendered from it
// (../transition-sql.ts); the row is locked, the step written to job_events and the job's state
// refreshed, all in one transaction.
import type { DeferOptions, FailOptions, FaxResultFields, RecipientKey } from "../queue-store.js";
import {
  deferValues,
  POSTGRES,
  progressChanged,
  progressDetail,
  renderSet,
  resultValues,
  type StepValues,
} from "../transition-sql.js";
import { fromStates, TRANSITIONS, type TransitionName } from "../transitions.js";
import type { RecipientState } from "../types.js";
import type { PgContext, Q } from "./context.js";
import { appendEvent, refreshJob, refreshJobs } from "./events.js";

interface StepOptions {
  /** Narrows the table's from-states (a stale caller's view of the row). */
  expect?: readonly RecipientState[];
  /** The row must carry this sendId (the send the caller is reporting on). */
  sendId?: string;
  detail?: string | null;
}

/**
 * Moves one recipient along transition `name` inside the caller's transaction: locks the row and
 * writes the table's columns with `values` when its state is one of the from-states (narrowed by
 * `expect`, and with `sendId` when given). Answers whether the row changed.
 */
async function stepIn(
  ctx: PgContext,
  c: Q,
  name: TransitionName,
  key: RecipientKey,
  values: StepValues,
  opts: StepOptions,
): Promise<boolean> {
  const cur = await c.query<{ state: RecipientState; send_id: string | null }>(
    "SELECT state, send_id FROM recipients WHERE job_id = $1 AND idx = $2 FOR UPDATE",
    [key.jobId, key.idx],
  );
  const row = cur.rows[0];
  if (!row) return false;
  if (!fromStates(name, opts.expect).includes(row.state)) return false;
  if (opts.sendId != null && row.send_id !== opts.sendId) return false;
  const set = renderSet(name, POSTGRES);
  await c.query(`UPDATE recipients SET ${set.sql} WHERE job_id = $${set.count + 1} AND idx = $${set.count + 2}`, [
    ...set.args(values, ctx.now()),
    key.jobId,
    key.idx,
  ]);
  const to = TRANSITIONS[name].to;
  await appendEvent(ctx, c, {
    jobId: key.jobId,
    idx: key.idx,
    transition: name,
    from: row.state,
    to,
    detail: opts.detail,
  });
  await refreshJob(ctx, c, key.jobId);
  return true;
}

/** One step in a transaction of its own. */
export function step(
  ctx: PgContext,
  name: TransitionName,
  key: RecipientKey,
  values: StepValues,
  opts: StepOptions = {},
): Promise<boolean> {
  return ctx.tx(`${name} ${key.jobId}/${key.idx}`, (c) => stepIn(ctx, c, name, key, values, opts));
}

/** The service accepted the fax (messageId known): now follow it in `processing`. */
export function markAccepted(
  ctx: PgContext,
  key: RecipientKey,
  sendId: string,
  fields: FaxResultFields & { messageId: string },
  apiCalls = 0,
): Promise<boolean> {
  return step(
    ctx,
    "accept",
    key,
    { ...resultValues(fields), api_calls: apiCalls },
    { sendId, detail: `message ${fields.messageId}` },
  );
}

/** The send's outcome is not known: reconcile with the service before anything else. */
export function markUnknown(ctx: PgContext, key: RecipientKey, sendId: string, error: string): Promise<boolean> {
  return step(ctx, "lose", key, { last_error: error }, { sendId, detail: error });
}

/** Reconciliation could not answer yet: look again no earlier than `nextAttemptAt`. */
export function postponeUnknown(
  ctx: PgContext,
  key: RecipientKey,
  sendId: string,
  error: string,
  nextAttemptAt: Date,
): Promise<boolean> {
  return step(
    ctx,
    "postpone",
    key,
    { next_attempt_at: nextAttemptAt.toISOString(), last_error: error },
    { sendId, detail: error },
  );
}

export function defer(ctx: PgContext, key: RecipientKey, opts: DeferOptions): Promise<boolean> {
  return step(ctx, "defer", key, deferValues(opts), { expect: opts.expect, sendId: opts.sendId, detail: opts.error });
}

export function fail(ctx: PgContext, key: RecipientKey, opts: FailOptions): Promise<boolean> {
  return step(
    ctx,
    "fail",
    key,
    { ...resultValues(opts.fields ?? {}), last_error: opts.reason },
    { expect: opts.expect, sendId: opts.sendId, detail: opts.reason },
  );
}

export function complete(ctx: PgContext, key: RecipientKey, fields: FaxResultFields): Promise<boolean> {
  return step(ctx, "deliver", key, resultValues(fields), { detail: fields.resultInfo ?? null });
}

/** Progress of a fax still at the service; a step (with its event) only when something changed. */
export async function recordProgress(ctx: PgContext, key: RecipientKey, fields: FaxResultFields): Promise<void> {
  await ctx.tx("record progress", async (c) => {
    const cur = await c.query<{ pages: number | null; pages_count: number | null; fax_attempt: number | null }>(
      "SELECT pages, pages_count, fax_attempt FROM recipients WHERE job_id = $1 AND idx = $2 AND state = ANY($3) FOR UPDATE",
      [key.jobId, key.idx, fromStates("progress")],
    );
    const row = cur.rows[0];
    if (!row || !progressChanged(row, fields)) return;
    const attempt = fields.faxAttempt ?? null;
    await stepIn(ctx, c, "progress", key, resultValues(fields), {
      detail: progressDetail(fields.pagesComplete ?? row.pages, fields.pagesCount ?? row.pages_count, attempt),
    });
  });
}

/** Adds API calls spent on recipients (a batched call is shared out among them); not a step. */
export async function addApiCalls(ctx: PgContext, keys: readonly RecipientKey[], calls: number): Promise<void> {
  if (keys.length === 0 || calls === 0) return;
  await ctx.q(
    "count API calls",
    `UPDATE recipients r SET api_calls = api_calls + $1 FROM unnest($2::text[], $3::int[]) AS k(job_id, idx) WHERE r.job_id = k.job_id AND r.idx = k.idx`,
    [calls / keys.length, keys.map((k) => k.jobId), keys.map((k) => k.idx)],
  );
}

/** Makes `user`'s deferred recipients whose error starts with `errorPrefix` due now (a key hold ended). */
export function wakeDeferred(ctx: PgContext, user: string, errorPrefix: string): Promise<number> {
  return ctx.tx("wake deferred faxes", async (c) => {
    const set = renderSet("wake", POSTGRES);
    const n = set.count;
    const r = await c.query<{ job_id: string; idx: number }>(
      `UPDATE recipients SET ${set.sql}
       WHERE state = ANY($${n + 1}) AND substr(last_error, 1, $${n + 2}) = $${n + 3} AND job_id IN (SELECT id FROM jobs WHERE "user" = $${n + 4})
       RETURNING job_id, idx`,
      [...set.args({}, ctx.now()), fromStates("wake"), errorPrefix.length, errorPrefix, user],
    );
    for (const x of r.rows)
      await appendEvent(ctx, c, { jobId: x.job_id, idx: x.idx, transition: "wake", from: "deferred", to: "deferred" });
    await refreshJobs(
      ctx,
      c,
      r.rows.map((x) => x.job_id),
    );
    return r.rows.length;
  });
}
