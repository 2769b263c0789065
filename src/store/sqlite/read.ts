// A job as committed, read inside one of this store's synchronous transactions (the parts not yet
// on the query layer); the queue's reads themselves are ../sql/read.ts.
import { FaxgateError } from "../../errors.js";
import { toJob, toRecipient, type JobRow, type RecipientRow } from "../rows.js";
import type { Job } from "../types.js";
import type { SqliteContext } from "./context.js";

/** The job as committed (read inside the caller's transaction when there is one). */
export function jobById(c: SqliteContext, id: string): Job | null {
  const row = c.sql("SELECT * FROM jobs WHERE id = ?").get(id) as JobRow | undefined;
  if (!row) return null;
  const recs = (c.sql("SELECT * FROM recipients WHERE job_id = ? ORDER BY idx").all(id) as RecipientRow[]).map(
    toRecipient,
  );
  return toJob(row, recs);
}

export function mustGet(c: SqliteContext, id: string): Job {
  const job = jobById(c, id);
  if (!job) throw new FaxgateError("JOB_NOT_FOUND", `no job has the id ${JSON.stringify(id)}`);
  return job;
}
