// Retention and legal holds on the one query layer (issue 56), both backends: a purge's choice and
// its deletes in one transaction that sees the holds, and a hold taken in a transaction of its own
// under the same lock, so a hold and a purge cannot interleave (PostgreSQL: one advisory lock for
// both; SQLite: BEGIN IMMEDIATE already lets one writer in). The service copies to delete wait in
// service_purges, each claimed under a lease, so a delete cut short by a crash is done again.
import { randomBytes } from "node:crypto";
import { FaxgateError } from "../../errors.js";
import { sqlStateList } from "../transition-sql.js";
import { FINAL_JOB_STATES } from "../transitions.js";
import { type Db, inJson, lockKey, nowIso, perDialect, type Runner } from "./db.js";

export const HOLD_KINDS = ["user", "number", "job", "received", "matter"] as const;
export type HoldKind = (typeof HOLD_KINDS)[number];

export interface LegalHold {
  id: string;
  kind: HoldKind;
  value: string;
  reason: string;
  heldBy: string;
  heldAt: string;
  releasedBy: string | null;
  releasedAt: string | null;
}

/** A local copy whose time is up, as the purge took it. */
export interface PurgedItem {
  kind: "job" | "received";
  id: string;
  user: string;
  /** the job's finish or the fax's receipt */
  at: string;
  /** the service copies of it: one per recipient sent (jobs), the received fax itself */
  copies: Array<{ messageId: string; number: string | null }>;
  /** a received fax's groups, a job's tags (a matter is a tag) */
  labels: string[];
}

/** A service copy to delete, as claimed. */
export interface ServicePurge {
  messageId: string;
  user: string;
  objectKind: "job" | "received";
  objectId: string;
  number: string | null;
  attempts: number;
  alerted: boolean;
}

const LOCK = lockKey("retention");
const ACTIVE = "h.released_at IS NULL";
const matterOf = (labels: string) => `${labels} LIKE '%"' || h.value || '"%'`;

const JOB_HELD = `EXISTS (SELECT 1 FROM legal_holds h WHERE ${ACTIVE} AND (
  (h.kind = 'job' AND h.value = j.id) OR (h.kind = 'user' AND h.value = j."user")
  OR (h.kind = 'number' AND EXISTS (SELECT 1 FROM recipients r WHERE r.job_id = j.id AND r.number = h.value))
  OR (h.kind = 'matter' AND ${matterOf("j.tags")})))`;
const RECEIVED_HELD = `EXISTS (SELECT 1 FROM legal_holds h WHERE ${ACTIVE} AND (
  (h.kind = 'received' AND h.value = f.id) OR (h.kind = 'user' AND h.value = f.user_name)
  OR (h.kind = 'number' AND (h.value = f.sender OR h.value = f.dialled))))`;
const COPY_HELD = `EXISTS (SELECT 1 FROM legal_holds h WHERE ${ACTIVE} AND (
  (h.kind = p.object_kind AND h.value = p.object_id) OR (h.kind = 'user' AND h.value = p.user_name)
  OR (h.kind = 'number' AND h.value = p.number) OR (h.kind = 'matter' AND ${matterOf("p.matters")})))`;

/** Items one purge transaction takes (as the queue's purge: the main thread is back between batches). */
export const RETENTION_BATCH = 200;

const JOB_CANDIDATES = `SELECT j.id, j."user" AS owner, j.tags, j.finished_at AS at FROM jobs j
  WHERE j.state IN (${sqlStateList(FINAL_JOB_STATES)}) AND j.finished_at IS NOT NULL AND j.finished_at < ?
  AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.job_id = j.id AND n.state = 'pending')
  AND NOT ${JOB_HELD} ORDER BY j.finished_at LIMIT ${RETENTION_BATCH}`;
const JOB_COPIES = perDialect(
  (d) => `SELECT job_id, number, message_id FROM recipients WHERE ${inJson("job_id", d)} AND message_id IS NOT NULL`,
);
const RECEIVED_CANDIDATES = `SELECT f.id, f.user_name AS owner, f.message_id, f.sender, f.groups, f.received_at AS at
  FROM received_faxes f WHERE f.received_at < ? AND NOT ${RECEIVED_HELD} ORDER BY f.received_at LIMIT ${RETENTION_BATCH}`;
const DROP_NOTICES = perDialect((d) => `DELETE FROM notifications WHERE ${inJson("job_id", d)} AND state <> 'pending'`);
const DROP_JOBS = perDialect((d) => `DELETE FROM jobs WHERE ${inJson("id", d)}`);
const DROP_RECEIVED = perDialect((d) => `DELETE FROM received_faxes WHERE ${inJson("id", d)}`);
const QUEUE_COPY = `INSERT INTO service_purges (message_id, user_name, object_kind, object_id, number, matters, due_at,
  state, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (message_id) DO NOTHING`;

const labelsOf = (json: unknown): string[] => {
  try {
    const v = JSON.parse(String(json ?? "[]")) as unknown;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
  } catch {
    return [];
  }
};

export interface PurgeRule {
  /** the oldest time any item of the kind may be kept from (the shortest rule of the kind) */
  jobsBefore: string;
  receivedBefore: string;
  /** whether this item's own rule (its user's, its groups') has run out */
  expired(item: PurgedItem): boolean;
  /** when the service copy of this item is due to go (ISO) */
  serviceDue(item: PurgedItem): string;
  /** inside the purge's transaction: its ledger row */
  purged(t: Runner, item: PurgedItem): Promise<void>;
}

async function queueCopies(t: Runner, now: string, item: PurgedItem, due: string): Promise<void> {
  for (const c of item.copies)
    await t.run(QUEUE_COPY, [
      c.messageId,
      item.user,
      item.kind,
      item.id,
      c.number,
      JSON.stringify(item.labels),
      due,
      now,
      now,
    ]);
}

/**
 * One batch of local copies whose time is up and that no hold covers, chosen and deleted in one
 * transaction (the holds seen are the ones committed before it); their service copies are queued
 * to go when theirs is up. `removeFiles` runs after the commit (a crash leaves an orphan folder,
 * never a row without its files). Returns what went.
 */
export async function purgeExpired(
  db: Db,
  rule: PurgeRule,
  removeFiles: (jobId: string) => Promise<void>,
): Promise<PurgedItem[]> {
  const gone = await db.tx("purge expired copies", async (t) => {
    await t.lock(LOCK);
    const now = nowIso(db);
    const jobs = await t.all<{ id: string; owner: string; tags: string; at: string }>(JOB_CANDIDATES, [
      rule.jobsBefore,
    ]);
    const copies = jobs.length
      ? await t.all<{ job_id: string; number: string; message_id: string }>(JOB_COPIES, [
          JSON.stringify(jobs.map((j) => j.id)),
        ])
      : [];
    const items: PurgedItem[] = jobs.map((j) => ({
      kind: "job",
      id: j.id,
      user: j.owner,
      at: j.at,
      labels: labelsOf(j.tags),
      copies: copies.filter((c) => c.job_id === j.id).map((c) => ({ messageId: c.message_id, number: c.number })),
    }));
    const received = await t.all<{
      id: string;
      owner: string;
      message_id: string;
      sender: string | null;
      groups: string;
      at: string;
    }>(RECEIVED_CANDIDATES, [rule.receivedBefore]);
    for (const f of received)
      items.push({
        kind: "received",
        id: f.id,
        user: f.owner,
        at: f.at,
        labels: labelsOf(f.groups),
        copies: [{ messageId: f.message_id, number: f.sender }],
      });
    const chosen = items.filter((i) => rule.expired(i));
    const jobIds = JSON.stringify(chosen.filter((i) => i.kind === "job").map((i) => i.id));
    await t.run(DROP_NOTICES, [jobIds]);
    await t.run(DROP_JOBS, [jobIds]);
    await t.run(DROP_RECEIVED, [JSON.stringify(chosen.filter((i) => i.kind === "received").map((i) => i.id))]);
    for (const item of chosen) {
      await queueCopies(t, now, item, rule.serviceDue(item));
      await rule.purged(t, item);
    }
    return chosen;
  });
  for (const item of gone) if (item.kind === "job") await removeFiles(item.id);
  return gone;
}

const SENT_COPIES = `SELECT j.id, j."user" AS owner, j.tags, j.finished_at AS at, r.number, r.message_id
  FROM recipients r JOIN jobs j ON j.id = r.job_id
  WHERE j.state IN (${sqlStateList(FINAL_JOB_STATES)}) AND j.finished_at IS NOT NULL AND j.finished_at < ?
  AND r.message_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM service_purges p WHERE p.message_id = r.message_id)
  ORDER BY j.finished_at LIMIT ${RETENTION_BATCH}`;
const RECEIVED_COPIES = `SELECT f.id, f.user_name AS owner, f.groups, f.received_at AS at, f.sender AS number, f.message_id
  FROM received_faxes f WHERE f.received_at < ?
  AND NOT EXISTS (SELECT 1 FROM service_purges p WHERE p.message_id = f.message_id)
  ORDER BY f.received_at LIMIT ${RETENTION_BATCH}`;

/**
 * Queues the service copies of items still kept here whose service rule is shorter than the local
 * one: each with the time its own rule says (a hold is looked at when the delete is claimed).
 */
export async function queueServiceCopies(
  db: Db,
  before: { jobs: string; received: string },
  serviceDue: (item: PurgedItem) => string,
): Promise<number> {
  return db.tx("queue service copies", async (t) => {
    const now = nowIso(db);
    type Row = {
      id: string;
      owner: string;
      tags?: string;
      groups?: string;
      at: string;
      number: string | null;
      message_id: string;
    };
    const sent = await t.all<Row>(SENT_COPIES, [before.jobs]);
    const received = await t.all<Row>(RECEIVED_COPIES, [before.received]);
    const rows = [
      ...sent.map((r) => ({ r, kind: "job" as const })),
      ...received.map((r) => ({ r, kind: "received" as const })),
    ];
    for (const { r, kind } of rows) {
      const item: PurgedItem = {
        kind,
        id: r.id,
        user: r.owner,
        at: r.at,
        labels: labelsOf(kind === "job" ? r.tags : r.groups),
        copies: [{ messageId: r.message_id, number: r.number }],
      };
      await queueCopies(t, now, item, serviceDue(item));
    }
    return rows.length;
  });
}

const CLAIM_COPIES = `SELECT p.message_id, p.user_name, p.object_kind, p.object_id, p.number, p.attempts, p.alerted
  FROM service_purges p WHERE p.due_at <= ? AND p.next_attempt_at <= ?
  AND (p.state = 'pending' OR (p.state = 'deleting' AND p.locked_until < ?))
  AND NOT ${COPY_HELD} ORDER BY p.next_attempt_at LIMIT ?`;

/**
 * Service copies due for their delete and not held, claimed for `leaseMs` (a claim whose process
 * died is taken again once the lease is over: its delete may or may not have been done).
 */
export function claimServicePurges(db: Db, limit: number, leaseMs: number): Promise<ServicePurge[]> {
  return db.tx("claim service purges", async (t) => {
    await t.lock(LOCK);
    const now = nowIso(db);
    const until = new Date(db.clock.now() + leaseMs).toISOString();
    const rows = await t.all<{
      message_id: string;
      user_name: string;
      object_kind: "job" | "received";
      object_id: string;
      number: string | null;
      attempts: number;
      alerted: number;
    }>(CLAIM_COPIES, [now, now, now, limit]);
    for (const r of rows)
      await t.run(
        "UPDATE service_purges SET state = 'deleting', attempts = attempts + 1, locked_until = ? WHERE message_id = ?",
        [until, r.message_id],
      );
    return rows.map((r) => ({
      messageId: r.message_id,
      user: r.user_name,
      objectKind: r.object_kind,
      objectId: r.object_id,
      number: r.number,
      attempts: Number(r.attempts) + 1,
      alerted: Number(r.alerted) === 1,
    }));
  });
}

/**
 * Deletes claimed by a run that is gone, back to pending now (not when their lease runs out): only
 * for a store one gateway holds alone (SQLite, under the data folder's lock). Whether the delete
 * was done before the crash is found out by doing it again: a 404 is read back as gone.
 */
export async function takeBackServicePurges(db: Db): Promise<number> {
  const r = await db.run("UPDATE service_purges SET state = 'pending', locked_until = NULL WHERE state = 'deleting'");
  return r.changes;
}

/** The service said the copy is gone: done, with its ledger row in the same transaction (once). */
export function servicePurged(db: Db, messageId: string, recorded: (t: Runner) => Promise<void>): Promise<boolean> {
  return db.tx("service copy purged", async (t) => {
    const r = await t.run(
      "UPDATE service_purges SET state = 'done', done_at = ?, locked_until = NULL, last_error = NULL WHERE message_id = ? AND state = 'deleting'",
      [nowIso(db), messageId],
    );
    if (r.changes === 0) return false;
    await recorded(t);
    return true;
  });
}

/** The delete did not take: tried again at `nextAttemptAt`; `alerted` once the alert went out. */
export async function servicePurgeFailed(
  db: Db,
  messageId: string,
  error: string,
  nextAttemptAt: Date,
  alerted: boolean,
): Promise<void> {
  await db.run(
    `UPDATE service_purges SET state = 'pending', locked_until = NULL, last_error = ?, next_attempt_at = ?,
       alerted = CASE WHEN ? = 1 THEN 1 ELSE alerted END WHERE message_id = ? AND state = 'deleting'`,
    [error.slice(0, 500), nextAttemptAt.toISOString(), alerted ? 1 : 0, messageId],
  );
}

export interface ServicePurgeRow {
  messageId: string;
  objectKind: string;
  objectId: string;
  state: string;
  attempts: number;
  lastError: string | null;
  dueAt: string;
  doneAt: string | null;
}

/** The service copies known, newest first (doctor, tests, the operator). */
export async function listServicePurges(db: Db, state?: string): Promise<ServicePurgeRow[]> {
  const rows = await db.all<Record<string, unknown>>(
    `SELECT message_id, object_kind, object_id, state, attempts, last_error, due_at, done_at FROM service_purges
     ${state ? "WHERE state = ?" : ""} ORDER BY due_at DESC`,
    state ? [state] : [],
  );
  return rows.map((r) => ({
    messageId: String(r.message_id),
    objectKind: String(r.object_kind),
    objectId: String(r.object_id),
    state: String(r.state),
    attempts: Number(r.attempts),
    lastError: (r.last_error as string | null) ?? null,
    dueAt: String(r.due_at),
    doneAt: (r.done_at as string | null) ?? null,
  }));
}

// ---- legal holds

const HOLD_COLUMNS = "id, kind, value, reason, held_by, held_at, released_by, released_at";
const toHold = (r: Record<string, unknown>): LegalHold => ({
  id: String(r.id),
  kind: r.kind as HoldKind,
  value: String(r.value),
  reason: String(r.reason),
  heldBy: String(r.held_by),
  heldAt: String(r.held_at),
  releasedBy: (r.released_by as string | null) ?? null,
  releasedAt: (r.released_at as string | null) ?? null,
});

/** A new hold, with its ledger row in the same transaction, under the purge's lock. */
export function addHold(
  db: Db,
  input: { kind: HoldKind; value: string; reason: string; by: string },
  recorded: (t: Runner, hold: LegalHold) => Promise<void>,
): Promise<LegalHold> {
  return db.tx("add a legal hold", async (t) => {
    await t.lock(LOCK);
    const hold: LegalHold = {
      id: `hold-${randomBytes(6).toString("hex")}`,
      kind: input.kind,
      value: input.value,
      reason: input.reason,
      heldBy: input.by,
      heldAt: nowIso(db),
      releasedBy: null,
      releasedAt: null,
    };
    await t.run(`INSERT INTO legal_holds (${HOLD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)`, [
      hold.id,
      hold.kind,
      hold.value,
      hold.reason,
      hold.heldBy,
      hold.heldAt,
    ]);
    await recorded(t, hold);
    return hold;
  });
}

/** Releases an active hold (with its ledger row); what it held is purged by the next pass if its time is up. */
export function releaseHold(
  db: Db,
  id: string,
  by: string,
  recorded: (t: Runner, hold: LegalHold) => Promise<void>,
): Promise<LegalHold> {
  return db.tx("release a legal hold", async (t) => {
    await t.lock(LOCK);
    const now = nowIso(db);
    const r = await t.run(
      "UPDATE legal_holds SET released_by = ?, released_at = ? WHERE id = ? AND released_at IS NULL",
      [by, now, id],
    );
    if (r.changes === 0) throw new FaxgateError("HOLD_NOT_FOUND", `no active legal hold has the id ${id.slice(0, 40)}`);
    const row = await t.get<Record<string, unknown>>(`SELECT ${HOLD_COLUMNS} FROM legal_holds WHERE id = ?`, [id]);
    const hold = toHold(row!);
    await recorded(t, hold);
    return hold;
  });
}

/** Active holds (with `all`, released ones too), oldest first. */
export async function listHolds(db: Db, all = false): Promise<LegalHold[]> {
  const rows = await db.all<Record<string, unknown>>(
    `SELECT ${HOLD_COLUMNS} FROM legal_holds ${all ? "" : "WHERE released_at IS NULL"} ORDER BY held_at, id`,
  );
  return rows.map(toHold);
}
