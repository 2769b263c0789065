// Leases (graphile-worker style): due recipients are claimed under a lease, in one transaction,
// before any HTTP call; a lease that runs out means the send may have gone out, so the recipient
// becomes `unknown` and is reconciled, never sent again blindly. Several PostgreSQL gateways share
// one queue: there a claimed row is taken FOR UPDATE SKIP LOCKED and a number is counted under
// its transaction lock (tryLock); SQLite's BEGIN IMMEDIATE already lets one claimer in at a time.
import { FaxgateError } from "../../errors.js";
import { newSendId } from "../job-id.js";
import type { ClaimedGroup, ClaimOptions, RecipientKey } from "../queue-store.js";
import { sqlStateList } from "../transition-sql.js";
import { fromStates, IN_FLIGHT_STATES, TRANSITIONS } from "../transitions.js";
import type { RecipientState } from "../types.js";
import { type Db, type DialectName, dialect, nowIso, perDialect, type Runner } from "./db.js";
import { appendEvent, refreshJob, refreshJobs } from "./events.js";
import { jobById, type Local } from "./read.js";
import { setList } from "./transitions.js";

const CLAIMABLE = sqlStateList(fromStates("claim"));
const IN_FLIGHT = sqlStateList(IN_FLIGHT_STATES);
const EXPIRING = sqlStateList(fromStates("expire"));
const INTERRUPTED = "the gateway stopped while the send was in progress";
const DAY_MS = 24 * 60 * 60 * 1000;

/** Numbers with `?` or more faxes in flight: the DUE query passes over their recipients. */
const AT_LIMIT = `SELECT number FROM recipients WHERE state IN (${IN_FLIGHT}) GROUP BY number HAVING COUNT(*) >= ?`;

/**
 * Due rows, oldest first. The numbers already at their limit are passed over here, counted once
 * from the few rows in flight: a long queue to one busy number would otherwise fill every
 * candidate list and hold back everyone else's fax. The rows are read in order from the partial
 * index recipients_claimable and the read stops at the LIMIT (sql/shared-state.ts): PostgreSQL
 * picks it itself; SQLite's planner, from its statistics, would rather take every waiting row by
 * recipients_due and sort them (50 ms at 20,000 waiting, against 0.9 ms), so it is named there.
 */
export const DUE = perDialect(
  (
    d,
  ) => `SELECT r.job_id, r.idx, r.number FROM recipients r${d === "sqlite" ? " INDEXED BY recipients_claimable" : ""} JOIN jobs j ON j.id = r.job_id
   WHERE r.state IN (${CLAIMABLE}) AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?)
     AND (j.scheduled_at IS NULL OR j.scheduled_at <= ?)
     AND r.number NOT IN (${AT_LIMIT})
   ORDER BY COALESCE(r.next_attempt_at, r.created_at), j.${d === "sqlite" ? "rowid" : "seq"}, r.idx
   LIMIT ?`,
);

/** A candidate still claimable now, with its state; on PostgreSQL locked, or passed over when another claimer holds it. */
const FREE_ROW_TEXT = `SELECT state FROM recipients WHERE job_id = ? AND idx = ? AND state IN (${CLAIMABLE})
   AND (next_attempt_at IS NULL OR next_attempt_at <= ?)`;
const FREE_ROW = dialect({ sqlite: FREE_ROW_TEXT, postgres: `${FREE_ROW_TEXT} FOR UPDATE SKIP LOCKED` });

const IN_FLIGHT_TO = `SELECT CAST(COUNT(*) AS INTEGER) AS n FROM recipients WHERE number = ? AND state IN (${IN_FLIGHT})`;

/** The recipients of one job picked by a claim, their idx given as one JSON array: one statement per job. */
const IDX_LIST: Record<DialectName, string> = {
  sqlite: "idx IN (SELECT value FROM json_each(?))",
  postgres: "idx IN (SELECT CAST(json_array_elements_text(CAST(? AS json)) AS INTEGER))",
};
const CLAIM = setList("claim");
const MARK_CLAIMED = CLAIM.update((d) => `WHERE job_id = ? AND ${IDX_LIST[d]}`);

/** Faxes in flight to `number`, under the number's lock; infinite when another claimer holds it. */
async function inFlightTo(t: Runner, number: string): Promise<number> {
  if (!(await t.tryLock(`number:${number}`))) return Number.POSITIVE_INFINITY;
  return (await t.get<{ n: number }>(IN_FLIGHT_TO, [number]))!.n;
}

/**
 * Claims due queued/deferred recipients, grouped per job (one send call each), marks them
 * `sending` under a lease with a fresh sendId and commits before any HTTP call is made.
 */
export async function claimDue(
  db: Db,
  local: Local,
  owner: string,
  limit: number,
  leaseMs: number,
  opts: ClaimOptions = {},
): Promise<ClaimedGroup[]> {
  const perNumber = opts.perNumber ?? 1;
  const horizon = opts.scheduleHorizonMs ?? DAY_MS;
  const at = db.clock.now();
  // Looked for outside the transaction (SQLite: a WAL read waits for no one, so a pass that finds
  // nothing does not queue behind intake's commits; PostgreSQL: no BEGIN for an empty pass). Each
  // candidate is checked again inside it (FREE_ROW), so one taken meanwhile is passed over.
  const candidates = await db.all<{ job_id: string; idx: number; number: string }>(DUE, [
    new Date(at).toISOString(),
    new Date(at + horizon).toISOString(),
    perNumber,
    Math.max(limit * 8, 64),
  ]);
  if (candidates.length === 0) {
    if (opts.blocked)
      for (const r of await db.all<{ number: string }>(AT_LIMIT, [perNumber])) opts.blocked.add(r.number);
    return [];
  }
  return db.tx("claim due faxes", async (t) => {
    const nowMs = db.clock.now();
    const now = new Date(nowMs).toISOString();
    const inFlight = new Map<string, number>();
    const picked = new Map<string, Array<{ idx: number; state: RecipientState }>>();
    for (const r of candidates) {
      if (!picked.has(r.job_id) && picked.size >= limit) continue;
      let busy = inFlight.get(r.number);
      if (busy === undefined) {
        busy = await inFlightTo(t, r.number);
        inFlight.set(r.number, busy);
      }
      if (busy >= perNumber) continue;
      const row = await t.get<{ state: RecipientState }>(FREE_ROW, [r.job_id, r.idx, now]);
      if (!row) continue;
      inFlight.set(r.number, busy + 1);
      const g = picked.get(r.job_id) ?? [];
      g.push({ idx: r.idx, state: row.state });
      picked.set(r.job_id, g);
    }
    const until = new Date(nowMs + leaseMs).toISOString();
    const out: ClaimedGroup[] = [];
    for (const [jobId, recs] of picked) {
      const sendId = newSendId(nowMs);
      await t.run(MARK_CLAIMED, [
        ...CLAIM.args({ send_id: sendId, locked_by: owner, locked_until: until }, now),
        jobId,
        JSON.stringify(recs.map((r) => r.idx)),
      ]);
      for (const r of recs)
        await appendEvent(t, now, {
          jobId,
          idx: r.idx,
          transition: "claim",
          from: r.state,
          to: TRANSITIONS.claim.to,
          detail: `send ${sendId}`,
        });
      await refreshJob(t, now, jobId);
      const job = (await jobById(t, local, jobId))!;
      const idxs = new Set(recs.map((r) => r.idx));
      out.push({ job, sendId, recipients: job.recipients.filter((r) => idxs.has(r.idx)) });
    }
    return out;
  });
}

/** Keeps the lease of a send that is still running (one statement for all its recipients). */
export async function extendLease(
  db: Db,
  owner: string,
  keys: readonly RecipientKey[],
  leaseMs: number,
): Promise<void> {
  if (keys.length === 0) return;
  const until = new Date(db.clock.now() + leaseMs).toISOString();
  // the cast types the VALUES list for PostgreSQL
  const rows = keys.map(() => "(?, CAST(? AS INTEGER))").join(", ");
  await db.run(
    `UPDATE recipients SET locked_until = ? WHERE locked_by = ? AND state = 'sending' AND (job_id, idx) IN (VALUES ${rows})`,
    [until, owner, ...keys.flatMap((k) => [k.jobId, k.idx])],
  );
}

const EXPIRE = setList("expire");
const UNCLAIM = setList("unclaim");
/** A claim whose call never left: nothing reached the service (see markCallLeaving). */
const NOT_LEFT = "call_left = 0";
/** A claim whose call may have left, or one made by a gateway older than call_left (NULL). */
const MAY_HAVE_LEFT = "COALESCE(call_left, 1) <> 0";
const NEVER_LEFT = "the gateway stopped before the send's call left; it goes out again";

/**
 * Ends the `sending` rows `where` picks, in the caller's transaction, one step each: those whose
 * call never left go back to the queue due now (unclaim), the others become `unknown` (their send
 * may have gone out: expire). Answers how many became unknown.
 */
async function expire(
  t: Runner,
  now: string,
  where: (d: DialectName, left: string) => string,
  args: readonly unknown[],
  detail: string,
): Promise<number> {
  await endSending(t, now, "unclaim", (d) => where(d, NOT_LEFT), args, NEVER_LEFT, "the send never left");
  return endSending(t, now, "expire", (d) => where(d, MAY_HAVE_LEFT), args, INTERRUPTED, detail);
}

async function endSending(
  t: Runner,
  now: string,
  step: "expire" | "unclaim",
  where: (d: DialectName) => string,
  args: readonly unknown[],
  lastError: string,
  detail: string,
): Promise<number> {
  const set = step === "expire" ? EXPIRE : UNCLAIM;
  const values = step === "expire" ? { last_error: lastError } : { last_error: lastError, attempts: 1 };
  const rows = await t.all<{ job_id: string; idx: number }>(
    set.update((d) => `WHERE ${where(d)} RETURNING job_id, idx`),
    [...set.args(values, now), ...args],
  );
  for (const s of rows)
    await appendEvent(t, now, {
      jobId: s.job_id,
      idx: s.idx,
      transition: step,
      from: "sending",
      to: TRANSITIONS[step].to,
      detail,
    });
  await refreshJobs(
    t,
    now,
    rows.map((s) => s.job_id),
  );
  return rows.length;
}

/**
 * The send's call is about to leave: call_left 1 on its claimed rows, committed before the
 * request, so that a gateway killed before this line leaves a claim that goes back to the queue
 * (unclaim) instead of one looked up and, where the service drops custom fields, parked. Only
 * while the claim is still this owner's (state, send and lease holder): false, and nothing
 * written, when any row was taken back meanwhile; then the call must not be made.
 */
export async function markCallLeaving(
  db: Db,
  owner: string,
  sendId: string,
  keys: readonly RecipientKey[],
): Promise<boolean> {
  if (keys.length === 0) return true;
  const rows = keys.map(() => "(?, CAST(? AS INTEGER))").join(", ");
  return db
    .tx("mark a send's call leaving", async (t) => {
      const r = await t.run(
        `UPDATE recipients SET call_left = 1 WHERE state = 'sending' AND send_id = ? AND locked_by = ? AND (job_id, idx) IN (VALUES ${rows})`,
        [sendId, owner, ...keys.flatMap((k) => [k.jobId, k.idx])],
      );
      // all or none (thrown to roll back): a claim taken back in part is not ours to send
      if (r.changes !== keys.length) throw new FaxgateError("CLAIM_LOST", "the claim was taken back");
      return true;
    })
    .catch((err: unknown) => {
      if (err instanceof FaxgateError && err.code === "CLAIM_LOST") return false;
      throw err;
    });
}

/**
 * Whether any lease ran out, asked every dispatcher pass: only the states that hold leases are
 * looked at (a claimed send, a notice being sent), through their state indexes. Asked of every
 * row with a lock column, it read each finished job's rows (issue 55: 89 ms a pass at 200,000
 * finished on SQLite, a scan of the table on both backends). A stale lock left on a row in
 * another state blocks nothing; it is tidied with the next expiry found.
 */
export const ANY_EXPIRED = `SELECT CASE WHEN EXISTS (SELECT 1 FROM recipients WHERE state IN (${EXPIRING}) AND locked_until < ?)
    OR EXISTS (SELECT 1 FROM notifications WHERE state = 'pending' AND locked_until < ?) THEN 1 ELSE 0 END AS n`;

/**
 * At start (and each pass): a `sending` row whose lease ran out may have reached the service,
 * so it becomes `unknown` (reconciled, never blindly resent); other stale leases are dropped.
 * `all` (SQLite, whose daemon holds the data folder's lock): every lease is from a run that is
 * gone. PostgreSQL's instances share the queue, so there leases run out by time only.
 */
export async function releaseExpired(
  db: Db,
  opts: { all?: boolean } = {},
): Promise<{ unknown: number; released: number }> {
  const all = opts.all === true && db.dialect === "sqlite";
  const cutoff = all ? "9999-12-31T23:59:59.999Z" : nowIso(db);
  // looked for first outside the transaction, as claimDue does: most passes find none
  if (!(await db.get<{ n: number }>(ANY_EXPIRED, [cutoff, cutoff]))!.n) return { unknown: 0, released: 0 };
  return db.tx("release expired leases", async (t) => {
    const now = nowIso(db);
    const unknown = await expire(
      t,
      now,
      (d, left) =>
        d === "sqlite"
          ? `state IN (${EXPIRING}) AND ${left} AND locked_until < ?`
          : `(job_id, idx) IN (SELECT job_id, idx FROM recipients WHERE state IN (${EXPIRING}) AND ${left} AND locked_until < ? FOR UPDATE SKIP LOCKED)`,
      [cutoff],
      all ? INTERRUPTED : "the lease ran out",
    );
    const r1 = await t.run(
      `UPDATE recipients SET locked_by = NULL, locked_until = NULL WHERE state NOT IN (${EXPIRING}) AND locked_until IS NOT NULL AND locked_until < ?`,
      [cutoff],
    );
    const r2 = await t.run(
      "UPDATE notifications SET locked_by = NULL, locked_until = NULL WHERE locked_until IS NOT NULL AND locked_until < ?",
      [cutoff],
    );
    return { unknown, released: r1.changes + r2.changes };
  });
}

/**
 * At stop: sends of this owner still running may have gone out, so they become `unknown`; those
 * whose call never left go back to the queue.
 */
export function releaseOwner(db: Db, owner: string): Promise<number> {
  return db.tx("release this gateway's leases", async (t) => {
    const n = await expire(
      t,
      nowIso(db),
      (_d, left) => `state IN (${EXPIRING}) AND ${left} AND locked_by = ?`,
      [owner],
      INTERRUPTED,
    );
    await t.run("UPDATE notifications SET locked_by = NULL, locked_until = NULL WHERE locked_by = ?", [owner]);
    return n;
  });
}
