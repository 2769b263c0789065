// A received fax that answered a sent one (its reply code verified, issue 51): both timelines
// say so in one transaction, the sent job's "reply" step naming the received fax and the
// received fax's "reply to" entry naming the job, so each page links to the other. Once per fax.
import { type Db, nowIso } from "./db.js";
import type { JobState } from "../types.js";
import { appendEvent } from "./events.js";

/** The job step's name; its detail is the received fax's id. */
export const REPLY_TRANSITION = "reply";
/** The received fax's entry; its detail is the sent job's id. */
export const REPLY_TO_ACTION = "reply to";

/** True when this call wrote the link; false when the fax was linked before or the job is gone. */
export function linkReply(db: Db, l: { faxId: string; jobId: string }): Promise<boolean> {
  return db.tx("link a reply to its sent fax", async (t) => {
    const job = await t.get<{ state: JobState }>("SELECT state FROM jobs WHERE id = ?", [l.jobId]);
    if (!job) return false;
    const had = await t.get<{ n: number }>(
      "SELECT 1 AS n FROM received_events WHERE fax_id = ? AND action = ? LIMIT 1",
      [l.faxId, REPLY_TO_ACTION],
    );
    if (had) return false;
    const now = nowIso(db);
    await appendEvent(t, now, {
      jobId: l.jobId,
      idx: null,
      transition: REPLY_TRANSITION,
      from: null,
      to: job.state,
      detail: l.faxId,
    });
    await t.run("INSERT INTO received_events (fax_id, at, action, actor, detail) VALUES (?, ?, ?, NULL, ?)", [
      l.faxId,
      now,
      REPLY_TO_ACTION,
      l.jobId,
    ]);
    return true;
  });
}
