// A recipient's steps after its claim: accepted by the service, lost answer, postponed lookup,
// deferred, failed, delivered, progress, woken. Each is one row of the transition table
// (../transitions.ts): the guard `state IN (...)` is built from the table (narrowed by the
// caller's `expect`), the step is written to job_events and the job's state refreshed, all in
// one transaction.
import type { FaxResultFields, RecipientKey } from "../queue-store.js";
import { fromStates, sqlStateList, TRANSITIONS, type TransitionName } from "../transitions.js";
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
 * Moves one recipient along transition `name` when its state allows it: `set` is the rest of the
 * UPDATE's SET list, with `args` for its placeholders. False (nothing written) otherwise.
 */
export function step(
  c: SqliteContext,
  name: TransitionName,
  key: RecipientKey,
  set: string,
  args: readonly unknown[],
  opts: StepOptions = {},
): boolean {
  const from = fromStates(name, opts.expect);
  if (from.length === 0) return false;
  const to = TRANSITIONS[name].to;
  const guard = `job_id = ? AND idx = ? AND state IN (${sqlStateList(from)})${opts.sendId !== undefined ? " AND send_id = ?" : ""}`;
  const keyArgs = opts.sendId !== undefined ? [key.jobId, key.idx, opts.sendId] : [key.jobId, key.idx];
  return c.write(() => {
    const row = c.sql(`SELECT state FROM recipients WHERE ${guard}`).get(...keyArgs) as
      | { state: RecipientState }
      | undefined;
    if (!row) return false;
    c.sql(`UPDATE recipients SET state = '${to}', ${set}, updated_at = ? WHERE job_id = ? AND idx = ?`).run(
      ...args,
      c.now(),
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
    `message_id = ?, locked_by = NULL, locked_until = NULL, next_attempt_at = NULL, last_error = NULL,
     pages = COALESCE(?, pages), pages_count = COALESCE(?, pages_count), api_calls = api_calls + ?`,
    [fields.messageId, fields.pagesComplete ?? null, fields.pagesCount ?? null, apiCalls],
    { sendId, detail: `message ${fields.messageId}` },
  );
}

/** The send's outcome is not known: reconcile with the service before anything else. */
export function markUnknown(c: SqliteContext, key: RecipientKey, sendId: string, error: string): boolean {
  return step(
    c,
    "lose",
    key,
    "locked_by = NULL, locked_until = NULL, next_attempt_at = NULL, last_error = ?",
    [error],
    { sendId, detail: error },
  );
}

/** Reconciliation could not answer yet: look again no earlier than `nextAttemptAt`. */
export function postponeUnknown(
  c: SqliteContext,
  key: RecipientKey,
  sendId: string,
  error: string,
  nextAttemptAt: Date,
): boolean {
  return step(c, "postpone", key, "next_attempt_at = ?, last_error = ?", [nextAttemptAt.toISOString(), error], {
    sendId,
    detail: error,
  });
}

/**
 * Waits for another try. `expect` guards against a stale caller: the row must still be in
 * one of those states (and carry `sendId` when given). `faxTry` counts a failed fax result.
 */
export function defer(
  c: SqliteContext,
  key: RecipientKey,
  opts: {
    error: string;
    nextAttemptAt: Date;
    sendId?: string;
    faxTry?: boolean;
    refundAttempt?: boolean;
    expect?: RecipientState[];
  },
): boolean {
  return step(
    c,
    "defer",
    key,
    "next_attempt_at = ?, last_error = ?, locked_by = NULL, locked_until = NULL, fax_tries = fax_tries + ?, attempts = MAX(0, attempts - ?)",
    [opts.nextAttemptAt.toISOString(), opts.error, opts.faxTry ? 1 : 0, opts.refundAttempt ? 1 : 0],
    { sendId: opts.sendId, expect: opts.expect, detail: opts.error },
  );
}

/** Gives up on the recipient with the reason people will read. */
export function fail(
  c: SqliteContext,
  key: RecipientKey,
  opts: { reason: string; fields?: FaxResultFields; sendId?: string; expect?: RecipientState[] },
): boolean {
  const f = opts.fields ?? {};
  return step(
    c,
    "fail",
    key,
    `last_error = ?, locked_by = NULL, locked_until = NULL, next_attempt_at = NULL,
     result_code = COALESCE(?, result_code), result_info = COALESCE(?, result_info), error_code = COALESCE(?, error_code), error_info = COALESCE(?, error_info),
     pages = COALESCE(?, pages), pages_count = COALESCE(?, pages_count), duration = COALESCE(?, duration), fax_attempt = COALESCE(?, fax_attempt),
     finished_at = ?`,
    [
      opts.reason,
      f.resultCode ?? null,
      f.resultInfo ?? null,
      f.errorCode ?? null,
      f.errorInfo ?? null,
      f.pagesComplete ?? null,
      f.pagesCount ?? null,
      f.duration ?? null,
      f.faxAttempt ?? null,
      c.now(),
    ],
    { sendId: opts.sendId, expect: opts.expect, detail: opts.reason },
  );
}

/** The service reports the fax delivered. */
export function complete(c: SqliteContext, key: RecipientKey, fields: FaxResultFields): boolean {
  return step(
    c,
    "deliver",
    key,
    `last_error = NULL, locked_by = NULL, locked_until = NULL, next_attempt_at = NULL,
     message_id = COALESCE(?, message_id), result_code = ?, result_info = ?, error_code = ?, error_info = ?,
     pages = COALESCE(?, pages), pages_count = COALESCE(?, pages_count), duration = COALESCE(?, duration), fax_attempt = COALESCE(?, fax_attempt),
     finished_at = ?`,
    [
      fields.messageId ?? null,
      fields.resultCode ?? null,
      fields.resultInfo ?? null,
      fields.errorCode ?? null,
      fields.errorInfo ?? null,
      fields.pagesComplete ?? null,
      fields.pagesCount ?? null,
      fields.duration ?? null,
      fields.faxAttempt ?? null,
      c.now(),
    ],
    { detail: fields.resultInfo ?? null },
  );
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
    if (!row) return;
    const same =
      (pages === null || pages === row.pages) &&
      (count === null || count === row.pages_count) &&
      (attempt === null || attempt === row.fax_attempt);
    if (same) return;
    const p = pages ?? row.pages;
    const n = count ?? row.pages_count;
    step(
      c,
      "progress",
      key,
      "pages = COALESCE(?, pages), pages_count = COALESCE(?, pages_count), fax_attempt = COALESCE(?, fax_attempt)",
      [pages, count, attempt],
      {
        detail:
          [
            p !== null ? `page ${p}${n !== null ? ` of ${n}` : ""}` : null,
            attempt !== null ? `attempt ${attempt}` : null,
          ]
            .filter(Boolean)
            .join(", ") || null,
      },
    );
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
    for (const r of rows) step(c, "wake", { jobId: r.job_id, idx: r.idx }, "next_attempt_at = ?", [c.now()]);
    return rows.length;
  });
}
