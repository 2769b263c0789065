// Jobs that wait for their owner. Print now, address later: the owner gives the numbers
// (`address`) or the job ends when no one did in time (`unaddressed`); only the placeholder
// recipient moves (transitions.ts NEEDS_ADDRESS). A first fax to a new number: the owner confirms
// it (`confirm`, every held recipient queued) or it ends unconfirmed (`unconfirmed`); only
// recipients that wait for confirmation move (AWAITS_CONFIRMATION), so a second click, a second
// tab, another gateway or the expiry racing a click find nothing to move: one winner.
import { FaxgateError } from "../../errors.js";
import type { OwnerWait } from "../queue-store.js";
import { sqlParkedGuard, sqlStateList } from "../transition-sql.js";
import { fromStates, NEEDS_ADDRESS, TRANSITIONS, type TransitionName, UNCONFIRMED } from "../transitions.js";
import type { CoverSpec, Job, NewRecipient } from "../types.js";
import { type Db, dialect, inJson, nowIso, perDialect } from "./db.js";
import { appendEvent, refreshJob, refreshJobs } from "./events.js";
import { type Local, mustGet } from "./read.js";
import { setList } from "./transitions.js";

/** The rows transition `name` may move (its states and the rest of its guard). */
const movable = (name: TransitionName): string => `state IN (${sqlStateList(fromStates(name))})${sqlParkedGuard(name)}`;

const PLACEHOLDER_TEXT = `SELECT idx FROM recipients WHERE job_id = ? AND ${movable("address")}`;
const PLACEHOLDER = dialect({ sqlite: PLACEHOLDER_TEXT, postgres: `${PLACEHOLDER_TEXT} FOR UPDATE` });

/** Gives a job that waits for an address its numbers (the first takes the placeholder's place) and cover. */
export async function address(
  db: Db,
  local: Local,
  id: string,
  input: { recipients: NewRecipient[]; cover: CoverSpec },
): Promise<Job> {
  const seen = new Set<string>();
  const recipients = input.recipients.filter((r) => r.number !== "" && !seen.has(r.number) && seen.add(r.number));
  if (recipients.length === 0) throw new FaxgateError("NO_DESTINATION", "a fax needs at least one number");
  await db.tx(`address ${id}`, async (t) => {
    const row = await t.get<{ idx: number }>(PLACEHOLDER, [id]);
    if (!row)
      throw new FaxgateError(
        "JOB_STATE",
        `job ${id} is not waiting for an address (it was addressed, cancelled or expired meanwhile)`,
      );
    const now = nowIso(db);
    const [first, ...rest] = recipients;
    const to = TRANSITIONS.address.to;
    const set = setList("address");
    await t.run(set.update("WHERE job_id = ? AND idx = ?"), [
      ...set.args({ number: first!.number, name: first!.name ?? null }, now),
      id,
      row.idx,
    ]);
    const detail = "by its owner";
    await appendEvent(t, now, { jobId: id, idx: row.idx, transition: "address", from: "held", to, detail });
    for (const [i, x] of rest.entries()) {
      const idx = row.idx + 1 + i;
      await t.run(
        `INSERT INTO recipients (job_id, idx, number, name, state, budget_from, created_at, updated_at) VALUES (?, ?, ?, ?, '${to}', ?, ?, ?)`,
        [id, idx, x.number, x.name ?? null, now, now, now],
      );
      await appendEvent(t, now, { jobId: id, idx, transition: "address", from: null, to, detail });
    }
    await t.run("UPDATE jobs SET cover = ? WHERE id = ?", [JSON.stringify(input.cover), id]);
    await refreshJob(t, now, id);
    await db.announce(t, id);
  });
  return mustGet(db, local, id);
}

/** Queues every recipient of job `id` that waits for confirmation; answers how many moved. */
export async function confirm(db: Db, local: Local, id: string, by: string): Promise<{ job: Job; moved: number }> {
  const moved = await db.tx(`confirm ${id}`, async (t) => {
    const now = nowIso(db);
    const set = setList("confirm");
    const rows = await t.all<{ idx: number }>(set.update(`WHERE job_id = ? AND ${movable("confirm")} RETURNING idx`), [
      ...set.args({}, now),
      id,
    ]);
    if (rows.length === 0) return 0;
    for (const x of rows)
      await appendEvent(t, now, {
        jobId: id,
        idx: x.idx,
        transition: "confirm",
        from: "held",
        to: TRANSITIONS.confirm.to,
        detail: `by ${by}`,
      });
    await refreshJob(t, now, id);
    await db.announce(t, id);
    return rows.length;
  });
  return { job: await mustGet(db, local, id), moved };
}

/** Ends (cancelled) the jobs created before `before` that still wait along `name`; answers them. */
async function expireWaiting(
  db: Db,
  local: Local,
  name: "unaddressed" | "unconfirmed",
  before: Date,
  lastError: string,
  reason: string,
): Promise<Job[]> {
  const ids = await db.tx(`expire jobs waiting (${name})`, async (t) => {
    const now = nowIso(db);
    const set = setList(name);
    const rows = await t.all<{ job_id: string; idx: number }>(
      set.update(
        `WHERE ${movable(name)} AND job_id IN (SELECT id FROM jobs WHERE created_at < ?) RETURNING job_id, idx`,
      ),
      [...set.args({ last_error: lastError }, now), before.toISOString()],
    );
    for (const x of rows)
      await appendEvent(t, now, {
        jobId: x.job_id,
        idx: x.idx,
        transition: name,
        from: "held",
        to: TRANSITIONS[name].to,
        detail: reason,
      });
    const jobs = [...new Set(rows.map((x) => x.job_id))];
    await refreshJobs(t, now, jobs);
    return jobs;
  });
  const out: Job[] = [];
  for (const id of ids) out.push(await mustGet(db, local, id));
  return out;
}

/** Ends (cancelled) the jobs created before `before` that still wait for `what`; answers them. */
export const expireWaitingFor = (
  db: Db,
  local: Local,
  what: OwnerWait,
  before: Date,
  reason: string,
): Promise<Job[]> =>
  what === "address"
    ? expireWaiting(db, local, "unaddressed", before, `${NEEDS_ADDRESS}: ${reason}`, reason)
    : expireWaiting(db, local, "unconfirmed", before, `${UNCONFIRMED}: ${reason}`, reason);

/**
 * "A number the user never faxed before" (smtp.senderAuth.confirmNewDestinations): a number
 * counts as faxed once the fax service took a fax to it: `processing`, `delivered`, or `failed`
 * with the service's message id (it was sent and failed there). Held, queued, cancelled, or
 * failed before the service had it: not faxed. Numbers are compared as stored, normalised E.164.
 */
const FAXED_NUMBERS = perDialect(
  (d) => `SELECT DISTINCT r.number FROM recipients r JOIN jobs j ON j.id = r.job_id
   WHERE j."user" = ? AND ${inJson("r.number", d)}
     AND (r.state IN ('processing', 'delivered') OR (r.state = 'failed' AND r.message_id IS NOT NULL))`,
);

/** Which of `numbers` `user` has faxed before. */
export async function faxedNumbers(db: Db, user: string, numbers: readonly string[]): Promise<string[]> {
  if (numbers.length === 0) return [];
  return (await db.all<{ number: string }>(FAXED_NUMBERS, [user, JSON.stringify(numbers)])).map((r) => r.number);
}
