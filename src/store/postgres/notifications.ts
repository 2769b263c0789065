// A notification queued inside one of this store's transactions (a job's outcome, a rejected
// input): the operation written once, ../sql/notifications.ts, on this transaction's connection.
import * as notes from "../sql/notifications.js";
import type { NewNotification } from "../types.js";
import type { PgContext, Q } from "./context.js";
import { pgRunner } from "./pg-db.js";

/** Queues a notice once per dedupeKey, inside the caller's transaction. */
export function insertNotification(
  ctx: PgContext,
  c: Q,
  n: NewNotification,
): Promise<{ id: number; duplicate: boolean }> {
  return notes.insertNotification(pgRunner(c), ctx.now(), n);
}
