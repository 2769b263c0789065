// A job's history and summary state inside one of this store's transactions: the operations
// written once (../sql/events.ts), on this transaction's connection.
import * as events from "../sql/events.js";
import type { NewEvent } from "../types.js";
import type { PgContext, Q } from "./context.js";
import { pgRunner } from "./pg-db.js";

export function appendEvent(ctx: PgContext, c: Q, e: NewEvent): Promise<void> {
  return events.appendEvent(pgRunner(c), ctx.now(), e);
}

export function refreshJob(ctx: PgContext, c: Q, jobId: string): Promise<void> {
  return events.refreshJob(pgRunner(c), ctx.now(), jobId);
}

export function refreshJobs(ctx: PgContext, c: Q, jobIds: readonly string[]): Promise<void> {
  return events.refreshJobs(pgRunner(c), ctx.now(), jobIds);
}
