// A recipient's steps after its claim: accepted by the service, lost answer, postponed lookup,
// deferred, failed, delivered, progress, woken. Each is one row of the transition table
// (../transitions.ts): the guard `state IN (...)` is built from the table (narrowed by the
// caller's `expect`), the step is written to job_events and the job's state refreshed, all in
// one transaction.
import type { DeferOptions, FailOptions, FaxResultFields, RecipientKey } from "../queue-store.js";
import {
  deferValues,
  progressChanged,
  progressDetail,
  renderSet,
  resultValues,
  SQLITE,
  type StepValues,
  sqlStateList,
} from "../transition-sql.js";
import { fromStates, TRANSITIONS, type TransitionName } from "../transitions.js";
import type { RecipientState } from "../types.js";
import type { SqliteContext } from "./context.js";
import { appendEvent, refreshJob } from "./events.js";

interface StepOptions {
  /** Narrows the table's from-states (a stale caller's view of the row). */
  expect?: readonly RecipientState[];
  /** The row must carry this sendId (the send the caller is reporting on). */
  sendId?: string;
  detail?: string | null;
}

/**
 * Moves one recipient along transition `name` when its state allows it, writing the columns the
 * table names for the step with `values`. False (nothing written) otherwise.
 */
export function step(
  c: SqliteContext,
  name: TransitionName,
  key: RecipientKey,
  values: StepValues,
  opts: StepOptions = {},
): boolean {
  const from = fromStates(name, opts.expect);
  if (from.length === 0) return false;
  const to = TRANSITIONS[name].to;
  const guard = `job_id = ? AND idx = ? AND state IN (${sqlStateList(from)})${opts.sendId !== undefined ? " AND send_id = ?" : ""}`;
  const keyArgs = opts.sendId !== undefined ? [key.jobId, key.idx, opts.sendId] : [key.jobId, key.idx];
  const set = renderSet(name, SQLITE);
  return c.write(() => {
    const row = c.sql(`SELECT state FROM recipients WHERE ${guard}`).get(...keyArgs) as
      | { state: RecipientState }
      | undefined;
    if (!row) return false;
    c.sql(`UPDATE recipients SET ${set.sql} WHERE job_id = ? AND idx = ?`).run(
      ...set.args(values, c.now()),
      key.jobId,
      key.idx,
    );
    appendEvent(c, { jobId: key.jobId, idx: key.idx, transition: name, from: row.state, to, detail: opts.detail });
    refreshJob(c, key.jobId);
    return true;
  });
}

/** The service accepted the fax (messageId known): now follow it in `processing`. */
export function markAccepted(
  c: SqliteContext,
  key: RecipientKey,
  sendId: string,
  fields: FaxResultFields & { messageId: string },
  apiCalls = 0,
): boolean {
  // apiCalls rides along so a send costs one commit, not two.
  return step(
    c,
    "accept",
    key,
    { ...resultValues(fields), api_calls: apiCalls },
    { sendId, detail: `message ${fields.messageId}` },
  );
}

/** The send's outcome is not known: reconcile with the service before anything else. */
export function markUnknown(c: SqliteContext, key: RecipientKey, sendId: string, error: string): boolean {
  return step(c, "lose", key, { last_error: error }, { sendId, detail: error });
}

/** Reconciliation could not answer yet: look again no earlier than `nextAttemptAt`. */
export function postponeUnknown(
  c: SqliteContext,
  key: RecipientKey,
  sendId: string,
  error: string,
  nextAttemptAt: Date,
): boolean {
  return step(
    c,
    "postpone",
    key,
    { next_attempt_at: nextAttemptAt.toISOString(), last_error: error },
    { sendId, detail: error },
  );
}

/**
 * Waits for another try. `expect` guards against a stale caller: the row must still be in
 * one of those states (and carry `sendId` when given). `faxTry` counts a failed fax result.
 */
export function defer(c: SqliteContext, key: RecipientKey, opts: DeferOptions): boolean {
  return step(c, "defer", key, deferValues(opts), { sendId: opts.sendId, expect: opts.expect, detail: opts.error });
}

/** Gives up on the recipient with the reason people will read. */
export function fail(c: SqliteContext, key: RecipientKey, opts: FailOptions): boolean {
  return step(
    c,
    "fail",
    key,
    { ...resultValues(opts.fields ?? {}), last_error: opts.reason },
    { sendId: opts.sendId, expect: opts.expect, detail: opts.reason },
  );
}

/** The service reports the fax delivered. */
export function complete(c: SqliteContext, key: RecipientKey, fields: FaxResultFields): boolean {
  return step(c, "deliver", key, resultValues(fields), { detail: fields.resultInfo ?? null });
}

/** Progress of a fax still at the service (pages so far, attempt number); a step only when something changed. */
export function recordProgress(c: SqliteContext, key: RecipientKey, fields: FaxResultFields): void {
  const pages = fields.pagesComplete ?? null;
  const count = fields.pagesCount ?? null;
  const attempt = fields.faxAttempt ?? null;
  c.write(() => {
    const row = c
      .sql(
        `SELECT pages, pages_count, fax_attempt FROM recipients WHERE job_id = ? AND idx = ? AND state IN (${sqlStateList(fromStates("progress"))})`,
      )
      .get(key.jobId, key.idx) as
      | { pages: number | null; pages_count: number | null; fax_attempt: number | null }
      | undefined;
    if (!row || !progressChanged(row, fields)) return;
    step(c, "progress", key, resultValues(fields), {
      detail: progressDetail(pages ?? row.pages, count ?? row.pages_count, attempt),
    });
  });
}
/** Adds API calls spent on recipients (a batched call is shared out among them); not a step. */
export function addApiCalls(c: SqliteContext, keys: readonly RecipientKey[], calls: number): void {
  if (keys.length === 0 || calls === 0) return;
  const share = calls / keys.length;
  const stmt = c.sql("UPDATE recipients SET api_calls = api_calls + ? WHERE job_id = ? AND idx = ?");
  c.write(() => {
    for (const k of keys) stmt.run(share, k.jobId, k.idx);
  });
}

/** Makes `user`'s deferred recipients whose error starts with `errorPrefix` due now (a key hold ended). */
export function wakeDeferred(c: SqliteContext, user: string, errorPrefix: string): number {
  return c.write(() => {
    const rows = c
      .sql(
        `SELECT job_id, idx FROM recipients WHERE state IN (${sqlStateList(fromStates("wake"))}) AND substr(last_error, 1, ?) = ? AND job_id IN (SELECT id FROM jobs WHERE user = ?)`,
      )
      .all(errorPrefix.length, errorPrefix, user) as Array<{ job_id: string; idx: number }>;
    for (const r of rows) step(c, "wake", { jobId: r.job_id, idx: r.idx }, {});
    return rows.length;
  });
}
