// Outbound notices on PostgreSQL (outcome, rejected, received): a small queue of its own with
// leases, claimed with SKIP LOCKED so that two instances never mail the same notice.
import { type NotificationRow, toNotification } from "../rows.js";
import type { NewNotification, Notification } from "../types.js";
import type { PgContext, Q } from "./context.js";

/** Queues a notice once per dedupeKey, inside the caller's transaction. */
export async function insertNotification(
  ctx: PgContext,
  c: Q,
  n: NewNotification,
): Promise<{ id: number; duplicate: boolean }> {
  const now = ctx.now();
  const r = await c.query<{ id: number }>(
    `INSERT INTO notifications (kind, "user", job_id, dedupe_key, payload, state, next_attempt_at, created_at)
     VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6) ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`,
    [n.kind, n.user, n.jobId ?? null, n.dedupeKey, JSON.stringify(n.payload), now],
  );
  if (r.rows[0]) return { id: r.rows[0].id, duplicate: false };
  const existing = await c.query<{ id: number }>("SELECT id FROM notifications WHERE dedupe_key = $1", [n.dedupeKey]);
  return { id: existing.rows[0]!.id, duplicate: true };
}

export function enqueueNotification(ctx: PgContext, n: NewNotification): Promise<{ id: number; duplicate: boolean }> {
  return ctx.tx("queue a notification", (c) => insertNotification(ctx, c, n));
}

export async function claimNotifications(
  ctx: PgContext,
  owner: string,
  limit: number,
  leaseMs: number,
): Promise<Notification[]> {
  const nowMs = ctx.clock.now();
  const now = new Date(nowMs).toISOString();
  // SKIP LOCKED: two instances claiming at once take different notices, so each is mailed once.
  const r = await ctx.q<NotificationRow>(
    "claim notifications",
    `UPDATE notifications SET locked_by = $1, locked_until = $2, attempts = attempts + 1
     WHERE id IN (SELECT id FROM notifications WHERE state = 'pending' AND next_attempt_at <= $3 AND (locked_until IS NULL OR locked_until < $3)
                  ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [owner, new Date(nowMs + leaseMs).toISOString(), now, limit],
  );
  return r.rows.sort((a, b) => a.next_attempt_at.localeCompare(b.next_attempt_at) || a.id - b.id).map(toNotification);
}

export async function completeNotification(ctx: PgContext, id: number, state: "sent" | "skipped"): Promise<void> {
  await ctx.q(
    "finish a notification",
    "UPDATE notifications SET state = $1, sent_at = $2, locked_by = NULL, locked_until = NULL, last_error = NULL WHERE id = $3",
    [state, ctx.now(), id],
  );
}

export async function deferNotification(ctx: PgContext, id: number, error: string, nextAttemptAt: Date): Promise<void> {
  await ctx.q(
    "defer a notification",
    "UPDATE notifications SET next_attempt_at = $1, last_error = $2, locked_by = NULL, locked_until = NULL WHERE id = $3",
    [nextAttemptAt.toISOString(), error, id],
  );
}

export async function failNotification(ctx: PgContext, id: number, error: string): Promise<void> {
  await ctx.q(
    "fail a notification",
    `UPDATE notifications SET state = 'failed', last_error = $1, locked_by = NULL, locked_until = NULL WHERE id = $2`,
    [error, id],
  );
}

export async function listNotifications(
  ctx: PgContext,
  filter: { jobId?: string; kind?: string; user?: string } = {},
): Promise<Notification[]> {
  const r = await ctx.q<NotificationRow>(
    "list notifications",
    `SELECT * FROM notifications WHERE ($1::text IS NULL OR job_id = $1) AND ($2::text IS NULL OR kind = $2) AND ($3::text IS NULL OR "user" = $3) ORDER BY id DESC`,
    [filter.jobId ?? null, filter.kind ?? null, filter.user ?? null],
  );
  return r.rows.map(toNotification);
}
