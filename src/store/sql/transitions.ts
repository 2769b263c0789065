// A recipient's steps after its claim: accepted by the service, lost answer, postponed lookup,
// deferred, failed, delivered, progress, woken. Each is one row of the transition table
// (../transitions.ts): its from-states (narrowed by the caller's `expect`) and SET list come from
// the table (../transition-sql.ts); the row is read (on PostgreSQL locked), moved, the step
// written to job_events and the job's state refreshed, all in one transaction.
import type { DeferOptions, FailOptions, FaxResultFields, RecipientKey } from "../queue-store.js";
import {
  deferValues,
  POSTGRES_Q,
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
import { type Db, type DialectName, dialect, nowIso, type Runner, type Sql } from "./db.js";
import { appendEvent, refreshJob, refreshJobs } from "./events.js";

interface StepOptions {
  /** Narrows the table's from-states (a stale caller's view of the row). */
  expect?: readonly RecipientState[];
  /** The row must carry this sendId (the send the caller is reporting on). */
  sendId?: string;
  detail?: string | null;
}

/** Transition `name`'s SET list in both dialects (they differ in MAX/GREATEST and a cast). */
export function setList(name: TransitionName, opts: { alias?: string } = {}) {
  const sqlite = renderSet(name, SQLITE, opts);
  const postgres = renderSet(name, POSTGRES_Q, opts);
  return {
    /** `UPDATE recipients SET <list> <rest>` in either dialect (`rest` may differ between them) */
    update: (rest: string | ((d: DialectName) => string), table = "recipients"): Sql => {
      const tail = typeof rest === "string" ? () => rest : rest;
      return dialect({
        sqlite: `UPDATE ${table} SET ${sqlite.sql} ${tail("sqlite")}`,
        postgres: `UPDATE ${table} SET ${postgres.sql} ${tail("postgres")}`,
      });
    },
    args: sqlite.args,
  };
}

const ROW = dialect({
  sqlite: "SELECT state, send_id FROM recipients WHERE job_id = ? AND idx = ?",
  postgres: "SELECT state, send_id FROM recipients WHERE job_id = ? AND idx = ? FOR UPDATE",
});

/**
 * Moves one recipient along transition `name` inside the caller's transaction, writing the
 * columns the table names with `values`, when its state allows (and it carries `sendId` when
 * given). Answers whether the row changed.
 */
export async function stepIn(
  t: Runner,
  now: string,
  name: TransitionName,
  key: RecipientKey,
  values: StepValues,
  opts: StepOptions = {},
): Promise<boolean> {
  const row = await t.get<{ state: RecipientState; send_id: string | null }>(ROW, [key.jobId, key.idx]);
  if (!row) return false;
  if (!fromStates(name, opts.expect).includes(row.state)) return false;
  if (opts.sendId !== undefined && row.send_id !== opts.sendId) return false;
  const set = setList(name);
  await t.run(set.update("WHERE job_id = ? AND idx = ?"), [...set.args(values, now), key.jobId, key.idx]);
  const to = TRANSITIONS[name].to;
  await appendEvent(t, now, {
    jobId: key.jobId,
    idx: key.idx,
    transition: name,
    from: row.state,
    to,
    detail: opts.detail,
  });
  await refreshJob(t, now, key.jobId);
  return true;
}

/** One step in a transaction of its own. */
export function step(
  db: Db,
  name: TransitionName,
  key: RecipientKey,
  values: StepValues,
  opts: StepOptions = {},
): Promise<boolean> {
  // nothing can move: no transaction (a stale caller's `expect` that the table rules out)
  if (fromStates(name, opts.expect).length === 0) return Promise.resolve(false);
  return db.tx(`${name} ${key.jobId}/${key.idx}`, (t) => stepIn(t, nowIso(db), name, key, values, opts));
}

/** The service accepted the fax (messageId known): now follow it in `processing`. */
export function markAccepted(
  db: Db,
  key: RecipientKey,
  sendId: string,
  fields: FaxResultFields & { messageId: string },
  apiCalls = 0,
): Promise<boolean> {
  // apiCalls rides along so a send costs one commit, not two.
  return step(db, "accept", key, Object.assign(resultValues(fields), { api_calls: apiCalls }), {
    sendId,
    detail: `message ${fields.messageId}`,
  });
}

/** The send's outcome is not known: reconcile with the service before anything else. */
export function markUnknown(db: Db, key: RecipientKey, sendId: string, error: string): Promise<boolean> {
  return step(db, "lose", key, { last_error: error }, { sendId, detail: error });
}

/** Reconciliation could not answer yet: look again no earlier than `nextAttemptAt`. */
export function postponeUnknown(
  db: Db,
  key: RecipientKey,
  sendId: string,
  error: string,
  nextAttemptAt: Date,
): Promise<boolean> {
  return step(
    db,
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
export function defer(db: Db, key: RecipientKey, opts: DeferOptions): Promise<boolean> {
  return step(db, "defer", key, deferValues(opts), { sendId: opts.sendId, expect: opts.expect, detail: opts.error });
}

/** Gives up on the recipient with the reason people will read. */
export function fail(db: Db, key: RecipientKey, opts: FailOptions): Promise<boolean> {
  return step(db, "fail", key, Object.assign(resultValues(opts.fields ?? {}), { last_error: opts.reason }), {
    sendId: opts.sendId,
    expect: opts.expect,
    detail: opts.reason,
  });
}

/** The service reports the fax delivered. */
export function complete(db: Db, key: RecipientKey, fields: FaxResultFields): Promise<boolean> {
  return step(db, "deliver", key, resultValues(fields), { detail: fields.resultInfo ?? null });
}

const PROGRESS_ROW = `SELECT pages, pages_count, fax_attempt FROM recipients WHERE job_id = ? AND idx = ? AND state IN (${sqlStateList(fromStates("progress"))})`;

/** Progress of a fax still at the service (pages so far, attempt number); a step only when something changed. */
export async function recordProgress(db: Db, key: RecipientKey, fields: FaxResultFields): Promise<void> {
  await db.tx("record progress", async (t) => {
    const row = await t.get<{ pages: number | null; pages_count: number | null; fax_attempt: number | null }>(
      dialect({ sqlite: PROGRESS_ROW, postgres: `${PROGRESS_ROW} FOR UPDATE` }),
      [key.jobId, key.idx],
    );
    if (!row || !progressChanged(row, fields)) return;
    await stepIn(t, nowIso(db), "progress", key, resultValues(fields), {
      detail: progressDetail(
        fields.pagesComplete ?? row.pages,
        fields.pagesCount ?? row.pages_count,
        fields.faxAttempt ?? null,
      ),
    });
  });
}

/** Adds API calls spent on recipients (a batched call is shared out among them); not a step. */
export async function addApiCalls(db: Db, keys: readonly RecipientKey[], calls: number): Promise<void> {
  if (keys.length === 0 || calls === 0) return;
  // one statement for all of them; the cast types the VALUES list for PostgreSQL
  const rows = keys.map(() => "(?, CAST(? AS INTEGER))").join(", ");
  await db.run(`UPDATE recipients SET api_calls = api_calls + ? WHERE (job_id, idx) IN (VALUES ${rows})`, [
    calls / keys.length,
    ...keys.flatMap((k) => [k.jobId, k.idx]),
  ]);
}

/** Makes `user`'s deferred recipients whose error starts with `errorPrefix` due now (a key hold ended). */
export function wakeDeferred(db: Db, user: string, errorPrefix: string): Promise<number> {
  return db.tx("wake deferred faxes", async (t) => {
    const now = nowIso(db);
    const set = setList("wake");
    const rows = await t.all<{ job_id: string; idx: number }>(
      set.update(
        `WHERE state IN (${sqlStateList(fromStates("wake"))}) AND substr(last_error, 1, ?) = ?
           AND job_id IN (SELECT id FROM jobs WHERE "user" = ?) RETURNING job_id, idx`,
      ),
      [...set.args({}, now), errorPrefix.length, errorPrefix, user],
    );
    for (const r of rows)
      await appendEvent(t, now, { jobId: r.job_id, idx: r.idx, transition: "wake", from: "deferred", to: "deferred" });
    await refreshJobs(
      t,
      now,
      rows.map((r) => r.job_id),
    );
    return rows.length;
  });
}
