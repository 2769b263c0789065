// The notification queue: each mail is queued once (unique dedupe key), claimed under a lease
// (on PostgreSQL with SKIP LOCKED, so two instances never mail the same notice), and finished as
// sent, skipped, deferred or failed.
import { type NotificationRow, toNotification } from "../rows.js";
import type { NewNotification, Notification } from "../types.js";
import { type Db, dialect, nowIso, type Runner } from "./db.js";

/** Queues a notification inside the caller's transaction; a second one with the same key is a duplicate. */
export async function insertNotification(
  t: Runner,
  now: string,
  n: NewNotification,
): Promise<{ id: number; duplicate: boolean }> {
  const r = await t.get<{ id: number }>(
    `INSERT INTO notifications (kind, "user", job_id, dedupe_key, payload, state, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`,
    [n.kind, n.user, n.jobId ?? null, n.dedupeKey, JSON.stringify(n.payload), now, now],
  );
  if (r) return { id: r.id, duplicate: false };
  const existing = await t.get<{ id: number }>("SELECT id FROM notifications WHERE dedupe_key = ?", [n.dedupeKey]);
  return { id: existing!.id, duplicate: true };
}

export function enqueueNotification(db: Db, n: NewNotification): Promise<{ id: number; duplicate: boolean }> {
  return db.tx("queue a notification", (t) => insertNotification(t, nowIso(db), n));
}

const CLAIM = `UPDATE notifications SET locked_by = ?, locked_until = ?, attempts = attempts + 1
  WHERE id IN (SELECT id FROM notifications
               WHERE state = 'pending' AND next_attempt_at <= ? AND (locked_until IS NULL OR locked_until < ?)
               ORDER BY next_attempt_at, id LIMIT ?`;

export async function claimNotifications(
  db: Db,
  owner: string,
  limit: number,
  leaseMs: number,
): Promise<Notification[]> {
  const nowMs = db.clock.now();
  const now = new Date(nowMs).toISOString();
  // one statement, on its own: SQLite gives it BEGIN IMMEDIATE (sqlite-db.ts), PostgreSQL skips
  // the rows another instance has locked, so two instances never take the same notice
  const rows = await db.all<NotificationRow>(
    dialect({ sqlite: `${CLAIM}) RETURNING *`, postgres: `${CLAIM} FOR UPDATE SKIP LOCKED) RETURNING *` }),
    [owner, new Date(nowMs + leaseMs).toISOString(), now, now, limit],
  );
  return rows.sort((a, b) => a.next_attempt_at.localeCompare(b.next_attempt_at) || a.id - b.id).map(toNotification);
}

export async function completeNotification(db: Db, id: number, state: "sent" | "skipped"): Promise<void> {
  await db.run(
    "UPDATE notifications SET state = ?, sent_at = ?, locked_by = NULL, locked_until = NULL, last_error = NULL WHERE id = ?",
    [state, nowIso(db), id],
  );
}

export async function deferNotification(db: Db, id: number, error: string, nextAttemptAt: Date): Promise<void> {
  await db.run(
    "UPDATE notifications SET next_attempt_at = ?, last_error = ?, locked_by = NULL, locked_until = NULL WHERE id = ?",
    [nextAttemptAt.toISOString(), error, id],
  );
}

export async function failNotification(db: Db, id: number, error: string): Promise<void> {
  await db.run(
    "UPDATE notifications SET state = 'failed', last_error = ?, locked_by = NULL, locked_until = NULL WHERE id = ?",
    [error, id],
  );
}

/** For tests and operators: notifications, newest first. */
export async function listNotifications(
  db: Db,
  filter: { jobId?: string; kind?: string; user?: string } = {},
): Promise<Notification[]> {
  const where: string[] = [];
  const args: string[] = [];
  for (const [column, value] of [
    ["job_id", filter.jobId],
    ["kind", filter.kind],
    ['"user"', filter.user],
  ] as const) {
    if (value === undefined) continue;
    where.push(`${column} = ?`);
    args.push(value);
  }
  const rows = await db.all<NotificationRow>(
    `SELECT * FROM notifications${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC`,
    args,
  );
  return rows.map(toNotification);
}
