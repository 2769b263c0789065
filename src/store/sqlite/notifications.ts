// The notification queue: each mail is queued once (unique dedupe key), claimed under a lease,
// and finished as sent, skipped, deferred or failed.
import type { NewNotification, Notification } from "../types.js";
import { toNotification, type NotificationRow } from "../rows.js";
import type { SqliteContext } from "./context.js";

/** Queues a notification inside the caller's transaction; a second one with the same key is a duplicate. */
export function insertNotification(c: SqliteContext, n: NewNotification): { id: number; duplicate: boolean } {
  const now = c.now();
  const r = c
    .sql(
      `INSERT INTO notifications (kind, user, job_id, dedupe_key, payload, state, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT(dedupe_key) DO NOTHING`,
    )
    .run(n.kind, n.user, n.jobId ?? null, n.dedupeKey, JSON.stringify(n.payload), now, now);
  if (r.changes === 1) return { id: Number(r.lastInsertRowid), duplicate: false };
  const existing = c.sql("SELECT id FROM notifications WHERE dedupe_key = ?").get(n.dedupeKey) as { id: number };
  return { id: existing.id, duplicate: true };
}

export function enqueueNotification(c: SqliteContext, n: NewNotification): { id: number; duplicate: boolean } {
  return c.write(() => insertNotification(c, n));
}

export function claimNotifications(c: SqliteContext, owner: string, limit: number, leaseMs: number): Notification[] {
  return c.write(() => {
    const nowMs = c.clock.now();
    const now = new Date(nowMs).toISOString();
    const rows = c
      .sql(
        `SELECT * FROM notifications WHERE state = 'pending' AND next_attempt_at <= ? AND (locked_until IS NULL OR locked_until < ?) ORDER BY next_attempt_at, id LIMIT ?`,
      )
      .all(now, now, limit) as NotificationRow[];
    const mark = c.sql(
      "UPDATE notifications SET locked_by = ?, locked_until = ?, attempts = attempts + 1 WHERE id = ?",
    );
    const until = new Date(nowMs + leaseMs).toISOString();
    for (const r of rows) mark.run(owner, until, r.id);
    return rows.map((r) => toNotification({ ...r, attempts: r.attempts + 1 }));
  });
}

export function completeNotification(c: SqliteContext, id: number, state: "sent" | "skipped"): void {
  c.sql(
    `UPDATE notifications SET state = ?, sent_at = ?, locked_by = NULL, locked_until = NULL, last_error = NULL WHERE id = ?`,
  ).run(state, c.now(), id);
}

export function deferNotification(c: SqliteContext, id: number, error: string, nextAttemptAt: Date): void {
  c.sql(
    `UPDATE notifications SET next_attempt_at = ?, last_error = ?, locked_by = NULL, locked_until = NULL WHERE id = ?`,
  ).run(nextAttemptAt.toISOString(), error, id);
}

export function failNotification(c: SqliteContext, id: number, error: string): void {
  c.sql(
    `UPDATE notifications SET state = 'failed', last_error = ?, locked_by = NULL, locked_until = NULL WHERE id = ?`,
  ).run(error, id);
}

/** For tests and operators: notifications, newest first. */
export function listNotifications(
  c: SqliteContext,
  filter: { jobId?: string; kind?: string; user?: string } = {},
): Notification[] {
  const rows = c
    .sql(
      `SELECT * FROM notifications WHERE (? IS NULL OR job_id = ?) AND (? IS NULL OR kind = ?) AND (? IS NULL OR user = ?) ORDER BY id DESC`,
    )
    .all(
      filter.jobId ?? null,
      filter.jobId ?? null,
      filter.kind ?? null,
      filter.kind ?? null,
      filter.user ?? null,
      filter.user ?? null,
    ) as NotificationRow[];
  return rows.map(toNotification);
}
