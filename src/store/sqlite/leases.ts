// Leases (graphile-worker style): due recipients are claimed under a lease, in one transaction,
// before any HTTP call; a lease that runs out means the send may have gone out, so the recipient
// becomes `unknown` and is reconciled, never sent again blindly.
import { newSendId } from "../job-id.js";
import type { ClaimedGroup, ClaimOptions, RecipientKey } from "../queue-store.js";
import { renderSet, SQLITE, sqlStateList } from "../transition-sql.js";
import { fromStates, IN_FLIGHT_STATES, TRANSITIONS } from "../transitions.js";
import type { RecipientState } from "../types.js";
import type { SqliteContext } from "./context.js";
import { appendEvent, refreshJob } from "./events.js";
import { jobById } from "./read.js";
import type { RecipientRow } from "../rows.js";

const CLAIMABLE = sqlStateList(fromStates("claim"));
const IN_FLIGHT = sqlStateList(IN_FLIGHT_STATES);
const EXPIRING = sqlStateList(fromStates("expire"));
const INTERRUPTED = "the gateway stopped while the send was in progress";

/**
 * Claims due queued/deferred recipients, grouped per job (one send call each), marks them
 * `sending` under a lease with a fresh sendId and commits before any HTTP call is made.
 */
export function claimDue(
  c: SqliteContext,
  owner: string,
  limit: number,
  leaseMs: number,
  opts: ClaimOptions = {},
): ClaimedGroup[] {
  const perNumber = opts.perNumber ?? 1;
  const horizon = opts.scheduleHorizonMs ?? 24 * 60 * 60 * 1000;
  // the numbers at their limit are counted once (from the few rows in flight), not once for
  // every due row: a long queue to one busy number is not a count per row at every claim
  const due = c.sql(
    `SELECT r.* FROM recipients r JOIN jobs j ON j.id = r.job_id
       WHERE r.state IN (${CLAIMABLE}) AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= ?)
         AND (j.scheduled_at IS NULL OR j.scheduled_at <= ?)
         AND r.number NOT IN (SELECT number FROM recipients WHERE state IN (${IN_FLIGHT}) GROUP BY number HAVING COUNT(*) >= ?)
       ORDER BY COALESCE(r.next_attempt_at, r.created_at), j.rowid, r.idx
       LIMIT ?`,
  );
  const dueRows = (nowMs: number): RecipientRow[] =>
    due.all(
      new Date(nowMs).toISOString(),
      new Date(nowMs + horizon).toISOString(),
      perNumber,
      Math.max(limit * 8, 64),
    ) as RecipientRow[];
  // Looked at first without the write lock (a WAL read waits for no one): a pass that finds
  // nothing due does not queue behind intake's commits on the main thread.
  if (dueRows(c.clock.now()).length === 0) return [];
  return c.write((): ClaimedGroup[] => {
    const nowMs = c.clock.now();
    const now = new Date(nowMs).toISOString();
    const rows = dueRows(nowMs);
    const inFlight = new Map<string, number>();
    const countStmt = c.sql(`SELECT COUNT(*) AS n FROM recipients WHERE number = ? AND state IN (${IN_FLIGHT})`);
    const groups = new Map<string, RecipientRow[]>();
    for (const r of rows) {
      if (!groups.has(r.job_id) && groups.size >= limit) continue;
      const busy = inFlight.get(r.number) ?? (countStmt.get(r.number) as { n: number }).n;
      if (busy >= perNumber) continue;
      inFlight.set(r.number, busy + 1);
      const g = groups.get(r.job_id) ?? [];
      g.push(r);
      groups.set(r.job_id, g);
    }
    const until = new Date(nowMs + leaseMs).toISOString();
    const set = renderSet("claim", SQLITE);
    const mark = c.sql(`UPDATE recipients SET ${set.sql} WHERE job_id = ? AND idx = ?`);
    const out: ClaimedGroup[] = [];
    for (const [jobId, recs] of groups) {
      const sendId = newSendId(nowMs);
      for (const r of recs) {
        mark.run(...set.args({ send_id: sendId, locked_by: owner, locked_until: until }, now), jobId, r.idx);
        appendEvent(c, {
          jobId,
          idx: r.idx,
          transition: "claim",
          from: r.state as RecipientState,
          to: TRANSITIONS.claim.to,
          detail: `send ${sendId}`,
        });
      }
      refreshJob(c, jobId);
      const job = jobById(c, jobId)!;
      const idxs = new Set(recs.map((r) => r.idx));
      out.push({ job, sendId, recipients: job.recipients.filter((r) => idxs.has(r.idx)) });
    }
    return out;
  });
}

/** Keeps the lease of a send that is still running. */
export function extendLease(c: SqliteContext, owner: string, keys: readonly RecipientKey[], leaseMs: number): void {
  const until = new Date(c.clock.now() + leaseMs).toISOString();
  const stmt = c.sql(
    `UPDATE recipients SET locked_until = ? WHERE job_id = ? AND idx = ? AND locked_by = ? AND state = 'sending'`,
  );
  c.write(() => {
    for (const k of keys) stmt.run(until, k.jobId, k.idx, owner);
  });
}

/** Marks the given `sending` rows `unknown` (their send may have gone out), one step each. */
function expire(c: SqliteContext, rows: ReadonlyArray<{ job_id: string; idx: number }>): void {
  const set = renderSet("expire", SQLITE);
  const mark = c.sql(`UPDATE recipients SET ${set.sql} WHERE job_id = ? AND idx = ?`);
  const args = set.args({ last_error: INTERRUPTED }, c.now());
  for (const s of rows) {
    mark.run(...args, s.job_id, s.idx);
    appendEvent(c, {
      jobId: s.job_id,
      idx: s.idx,
      transition: "expire",
      from: "sending",
      to: TRANSITIONS.expire.to,
      detail: INTERRUPTED,
    });
  }
  for (const job of new Set(rows.map((s) => s.job_id))) refreshJob(c, job);
}

/**
 * At start (and each pass): a `sending` row whose lease ran out may have reached the service,
 * so it becomes `unknown` (reconciled, never blindly resent); other stale leases are dropped.
 */
export function releaseExpired(c: SqliteContext, opts: { all?: boolean } = {}): { unknown: number; released: number } {
  // `all`: the daemon holds the data folder's lock, so every lease is from a run that is gone
  const cutoff = opts.all ? "9999-12-31T23:59:59.999Z" : c.now();
  // looked for first without the write lock, as claimDue does: most passes find none
  const any = c
    .sql(
      `SELECT EXISTS (SELECT 1 FROM recipients WHERE locked_until IS NOT NULL AND locked_until < ?)
          OR EXISTS (SELECT 1 FROM notifications WHERE locked_until IS NOT NULL AND locked_until < ?) AS n`,
    )
    .get(cutoff, cutoff) as { n: number };
  if (!any.n) return { unknown: 0, released: 0 };
  return c.write(() => {
    const stale = c
      .sql(`SELECT job_id, idx FROM recipients WHERE state IN (${EXPIRING}) AND locked_until < ?`)
      .all(cutoff) as Array<{ job_id: string; idx: number }>;
    expire(c, stale);
    const r1 = c
      .sql(
        `UPDATE recipients SET locked_by = NULL, locked_until = NULL WHERE state NOT IN (${EXPIRING}) AND locked_until IS NOT NULL AND locked_until < ?`,
      )
      .run(cutoff);
    const r2 = c
      .sql(
        `UPDATE notifications SET locked_by = NULL, locked_until = NULL WHERE locked_until IS NOT NULL AND locked_until < ?`,
      )
      .run(cutoff);
    return { unknown: stale.length, released: r1.changes + r2.changes };
  });
}

/** At stop: sends of this owner still running may have gone out, so they become `unknown`. */
export function releaseOwner(c: SqliteContext, owner: string): number {
  return c.write(() => {
    const rows = c
      .sql(`SELECT job_id, idx FROM recipients WHERE state IN (${EXPIRING}) AND locked_by = ?`)
      .all(owner) as Array<{ job_id: string; idx: number }>;
    expire(c, rows);
    c.sql(`UPDATE notifications SET locked_by = NULL, locked_until = NULL WHERE locked_by = ?`).run(owner);
    return rows.length;
  });
}
