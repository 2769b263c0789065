// A job as committed, read inside one of this store's transactions or outside: the operation
// written once (../sql/read.ts), its documents' paths in this instance's cache.
import type pg from "pg";
import * as reads from "../sql/read.js";
import type { Job } from "../types.js";
import type { PgContext, Q } from "./context.js";
import { withLocalPaths } from "./documents.js";
import { pgDb, pgRunner } from "./pg-db.js";

export function readJob(ctx: PgContext, c: Q | pg.Pool, id: string): Promise<Job | null> {
  const r = c === ctx.pool ? pgDb(ctx) : pgRunner(c as Q);
  return reads.jobById(r, (job) => withLocalPaths(ctx, job), id);
}

export function mustGet(ctx: PgContext, id: string): Promise<Job> {
  return reads.mustGet(pgDb(ctx), (job) => withLocalPaths(ctx, job), id);
}
