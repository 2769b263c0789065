// A notification queued inside one of this store's synchronous transactions (a job's outcome,
// a rejected input); the notification queue itself is ../sql/notifications.ts.
import type { NewNotification } from "../types.js";
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
