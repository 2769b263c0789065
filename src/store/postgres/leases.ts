// Leases on PostgreSQL (graphile-worker style): due recipients are claimed under a lease, in one
// transaction, before any HTTP call. Several instances share the queue: rows are taken with
// FOR UPDATE SKIP LOCKED and each destination number is locked (pg_advisory_xact_lock) before
// its faxes in flight are counted, so one fax per number is in flight across all instances.
// Leases expire by time only.
import { newSendId } from "../job-id.js";
import type { ClaimedGroup, ClaimOptions, RecipientKey } from "../queue-store.js";
import { POSTGRES, renderSet } from "../transition-sql.js";
import { fromStates, IN_FLIGHT_STATES, TRANSITIONS } from "../transitions.js";
import type { RecipientState } from "../types.js";
import { lockKey, type PgContext, type Q } from "./context.js";
import { cacheDocuments } from "./documents.js";
import { appendEvent, refreshJob, refreshJobs } from "./events.js";
import { readJob } from "./read.js";

const INTERRUPTED = "the gateway stopped while the send was in progress";

export async function claimDue(
  ctx: PgContext,
  owner: string,
  limit: number,
  leaseMs: number,
  opts: ClaimOptions = {},
): Promise<ClaimedGroup[]> {
  const perNumber = opts.perNumber ?? 1;
  const horizon = opts.scheduleHorizonMs ?? 24 * 60 * 60 * 1000;
  const groups = await ctx.tx("claim due faxes", async (c) => {
    const nowMs = ctx.clock.now();
    const now = new Date(nowMs).toISOString();
    // numbers already at their limit are passed over in the query, as on SQLite: a long queue to
    // one busy number would otherwise fill every candidate list and hold back everyone else's fax
    const cand = await c.query<{ job_id: string; idx: number; number: string }>(
      `SELECT r.job_id, r.idx, r.number FROM recipients r JOIN jobs j ON j.id = r.job_id
       WHERE r.state = ANY($1) AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= $2)
         AND (j.scheduled_at IS NULL OR j.scheduled_at <= $3)
         AND r.number NOT IN (SELECT number FROM recipients WHERE state = ANY($5) GROUP BY number HAVING COUNT(*) >= $6)
       ORDER BY COALESCE(r.next_attempt_at, r.created_at), j.seq, r.idx
       LIMIT $4`,
      [
        fromStates("claim"),
        now,
        new Date(nowMs + horizon).toISOString(),
        Math.max(limit * 8, 64),
        IN_FLIGHT_STATES,
        perNumber,
      ],
    );
    if (cand.rows.length === 0) return [];
    // One fax in flight per number across all instances: a number is only claimed under its
    // transaction lock, and counted after taking it (another claimer's marks are committed
    // before it lets the lock go). A number another instance is claiming right now, and a row
    // another instance has locked, are skipped rather than waited for, so claimers spread out.
    const inFlight = new Map<string, number>();
    const picked = new Map<string, number[]>();
    for (const r of cand.rows) {
      if (!picked.has(r.job_id) && picked.size >= limit) continue;
      let busy = inFlight.get(r.number);
      if (busy === undefined) {
        busy = await inFlightTo(c, r.number);
        inFlight.set(r.number, busy);
      }
      if (busy >= perNumber) continue;
      const row = await c.query(
        `SELECT 1 FROM recipients WHERE job_id = $1 AND idx = $2 AND state = ANY($3) AND (next_attempt_at IS NULL OR next_attempt_at <= $4) FOR UPDATE SKIP LOCKED`,
        [r.job_id, r.idx, fromStates("claim"), now],
      );
      if (row.rows.length === 0) continue;
      inFlight.set(r.number, busy + 1);
      const g = picked.get(r.job_id) ?? [];
      g.push(r.idx);
      picked.set(r.job_id, g);
    }
    const until = new Date(nowMs + leaseMs).toISOString();
    const set = renderSet("claim", POSTGRES, { alias: "r" });
    const n = set.count;
    const out: ClaimedGroup[] = [];
    for (const [jobId, idxs] of picked) {
      const sendId = newSendId(nowMs);
      const before = await c.query<{ idx: number; state: RecipientState }>(
        `UPDATE recipients r SET ${set.sql}
         FROM recipients old WHERE old.job_id = r.job_id AND old.idx = r.idx AND r.job_id = $${n + 1} AND r.idx = ANY($${n + 2})
         RETURNING r.idx, old.state`,
        [...set.args({ send_id: sendId, locked_by: owner, locked_until: until }, now), jobId, idxs],
      );
      for (const b of before.rows)
        await appendEvent(ctx, c, {
          jobId,
          idx: b.idx,
          transition: "claim",
          from: b.state,
          to: TRANSITIONS.claim.to,
          detail: `send ${sendId}`,
        });
      await refreshJob(ctx, c, jobId);
      const job = (await readJob(ctx, c, jobId))!;
      const chosen = new Set(idxs);
      out.push({ job, sendId, recipients: job.recipients.filter((r) => chosen.has(r.idx)) });
    }
    return out;
  });
  await Promise.all(groups.map((g) => cacheDocuments(ctx, g.job)));
  return groups;
}

/** Faxes in flight to `number`, under the number's lock; infinite when another claimer holds it. */
async function inFlightTo(c: Q, number: string): Promise<number> {
  const got = await c.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext($1)) AS ok", [
    lockKey(`number:${number}`),
  ]);
  if (!got.rows[0]!.ok) return Number.POSITIVE_INFINITY;
  const r = await c.query<{ n: number }>(
    "SELECT COUNT(*)::int AS n FROM recipients WHERE number = $1 AND state = ANY($2)",
    [number, IN_FLIGHT_STATES],
  );
  return r.rows[0]!.n;
}

/** Keeps the lease of a send that is still running. */
export async function extendLease(
  ctx: PgContext,
  owner: string,
  keys: readonly RecipientKey[],
  leaseMs: number,
): Promise<void> {
  if (keys.length === 0) return;
  const until = new Date(ctx.clock.now() + leaseMs).toISOString();
  await ctx.q(
    "extend a lease",
    `UPDATE recipients r SET locked_until = $1 FROM unnest($2::text[], $3::int[]) AS k(job_id, idx)
     WHERE r.job_id = k.job_id AND r.idx = k.idx AND r.locked_by = $4 AND r.state = 'sending'`,
    [until, keys.map((k) => k.jobId), keys.map((k) => k.idx), owner],
  );
}

/**
 * Marks the `sending` rows `which` picks (a WHERE on parameters after the SET's) `unknown`: their
 * send may have gone out. One step each; answers the rows moved.
 */
async function expire(
  ctx: PgContext,
  c: Q,
  which: (first: number) => string,
  args: unknown[],
  detail: string,
): Promise<Array<{ job_id: string; idx: number }>> {
  const set = renderSet("expire", POSTGRES);
  const r = await c.query<{ job_id: string; idx: number }>(
    `UPDATE recipients SET ${set.sql} WHERE ${which(set.count + 1)} RETURNING job_id, idx`,
    [...set.args({ last_error: INTERRUPTED }, ctx.now()), ...args],
  );
  for (const s of r.rows)
    await appendEvent(ctx, c, {
      jobId: s.job_id,
      idx: s.idx,
      transition: "expire",
      from: "sending",
      to: TRANSITIONS.expire.to,
      detail,
    });
  await refreshJobs(
    ctx,
    c,
    r.rows.map((s) => s.job_id),
  );
  return r.rows;
}

/**
 * `sending` rows whose lease ran out become `unknown`. Leases expire by time only: several
 * instances share the queue, so `all` (SQLite's "every lease is mine and gone") is ignored here.
 */
export function releaseExpired(ctx: PgContext): Promise<{ unknown: number; released: number }> {
  return ctx.tx("release expired leases", async (c) => {
    const now = ctx.now();
    const stale = await expire(
      ctx,
      c,
      (n) =>
        `(job_id, idx) IN (SELECT job_id, idx FROM recipients WHERE state = ANY($${n}) AND locked_until < $${n + 1} FOR UPDATE SKIP LOCKED)`,
      [fromStates("expire"), now],
      "the lease ran out",
    );
    const r1 = await c.query(
      `UPDATE recipients SET locked_by = NULL, locked_until = NULL WHERE state <> ALL($2) AND locked_until IS NOT NULL AND locked_until < $1`,
      [now, fromStates("expire")],
    );
    const r2 = await c.query(
      "UPDATE notifications SET locked_by = NULL, locked_until = NULL WHERE locked_until IS NOT NULL AND locked_until < $1",
      [now],
    );
    return { unknown: stale.length, released: (r1.rowCount ?? 0) + (r2.rowCount ?? 0) };
  });
}

/** At stop: sends of this owner still running may have gone out, so they become `unknown`. */
export function releaseOwner(ctx: PgContext, owner: string): Promise<number> {
  return ctx.tx("release this gateway's leases", async (c) => {
    const rows = await expire(
      ctx,
      c,
      (n) => `state = ANY($${n}) AND locked_by = $${n + 1}`,
      [fromStates("expire"), owner],
      "the gateway stopped",
    );
    await c.query("UPDATE notifications SET locked_by = NULL, locked_until = NULL WHERE locked_by = $1", [owner]);
    return rows.length;
  });
}
