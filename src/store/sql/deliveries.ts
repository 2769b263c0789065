// Connector deliveries of received faxes (issue 52), a queue of their own: queued once per (fax,
// connector) when the fax is routed, claimed under a lease (PostgreSQL: FOR UPDATE SKIP LOCKED, so
// gateways sharing the queue never take the same row; SQLite: BEGIN IMMEDIATE), then delivered,
// put back with a later try, or failed. A lease that runs out (the gateway died mid-delivery) lets
// the row be claimed again; the connectors make a second try land once (conditional create, the
// same control id, a file's sidecar), so a crash never makes a second document.
import { randomBytes } from "node:crypto";
import { type Db, nowIso, perDialect, type Runner } from "./db.js";
import { addEvent } from "./received.js";

export type DeliveryKind = "fhir" | "hl7" | "webdav" | "smb" | "graph";
export type DeliveryState = "pending" | "delivering" | "delivered" | "failed";

export interface NewDelivery {
  faxId: string;
  /** the connector's stable name (kind and where), one row per fax and target */
  target: string;
  kind: DeliveryKind;
  rule: string;
  /** who is told when it fails for good (the fax's user) */
  owner: string;
  /** the delivery's config (no secrets: those are named, read from the secrets file at use) */
  spec: unknown;
}

export interface Delivery {
  id: string;
  faxId: string;
  target: string;
  kind: DeliveryKind;
  rule: string;
  owner: string;
  spec: unknown;
  state: DeliveryState;
  /** tries so far, the one claimed included */
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
  result: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

const COLUMNS =
  "id, fax_id, target, kind, rule, owner, spec, state, attempts, next_attempt_at, last_error, result, created_at, delivered_at";

function toDelivery(r: Record<string, unknown>): Delivery {
  return {
    id: String(r.id),
    faxId: String(r.fax_id),
    target: String(r.target),
    kind: r.kind as DeliveryKind,
    rule: String(r.rule),
    owner: String(r.owner),
    spec: JSON.parse(String(r.spec)) as unknown,
    state: r.state as DeliveryState,
    attempts: Number(r.attempts),
    nextAttemptAt: String(r.next_attempt_at),
    lastError: (r.last_error as string | null) ?? null,
    result: (r.result as string | null) ?? null,
    createdAt: String(r.created_at),
    deliveredAt: (r.delivered_at as string | null) ?? null,
  };
}

const INSERT = `INSERT INTO deliveries (id, fax_id, target, kind, rule, owner, spec, state, attempts, next_attempt_at, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT (fax_id, target) DO NOTHING`;

/** Queues each delivery once: a fax routed again (a crash before "routed") queues nothing new. */
export async function queueDeliveries(db: Db, list: readonly NewDelivery[]): Promise<number> {
  if (list.length === 0) return 0;
  return db.tx("queue connector deliveries", async (t) => {
    const now = nowIso(db);
    let n = 0;
    for (const d of list)
      n += (
        await t.run(INSERT, [
          `DL${randomBytes(8).toString("hex")}`,
          d.faxId,
          d.target,
          d.kind,
          d.rule,
          d.owner,
          JSON.stringify(d.spec),
          now,
          now,
        ])
      ).changes;
    return n;
  });
}

/** Due rows (or rows whose lease ran out), claimed in one statement; another claimer's are passed over. */
const CLAIM = perDialect(
  (d) => `UPDATE deliveries SET state = 'delivering', attempts = attempts + 1, locked_by = ?, locked_until = ?
  WHERE id IN (SELECT id FROM deliveries
    WHERE (state = 'pending' AND next_attempt_at <= ?) OR (state = 'delivering' AND locked_until < ?)
    ORDER BY next_attempt_at LIMIT ?${d === "postgres" ? " FOR UPDATE SKIP LOCKED" : ""})
  RETURNING ${COLUMNS}`,
);

export function claimDeliveries(db: Db, owner: string, limit: number, leaseMs: number): Promise<Delivery[]> {
  return db.tx("claim connector deliveries", async (t) => {
    const now = nowIso(db);
    const until = new Date(db.clock.now() + leaseMs).toISOString();
    const rows = await t.all<Record<string, unknown>>(CLAIM, [owner, until, now, now, limit]);
    return rows.map(toDelivery).sort((a, b) => a.nextAttemptAt.localeCompare(b.nextAttemptAt));
  });
}

/** Keeps this gateway's lease of a row it is about to deliver; false when it is no longer ours. */
export async function extendDelivery(db: Db, id: string, owner: string, leaseMs: number): Promise<boolean> {
  const until = new Date(db.clock.now() + leaseMs).toISOString();
  const r = await db.run(
    "UPDATE deliveries SET locked_until = ? WHERE id = ? AND locked_by = ? AND state = 'delivering'",
    [until, id, owner],
  );
  return r.changes === 1;
}

const MINE = "WHERE id = ? AND locked_by = ? AND state = 'delivering'";

/**
 * Delivered: the row, the fax's timeline entry and (through `recorded`) its ledger row commit
 * together. False when the row was no longer this gateway's (nothing changed then).
 */
export function deliveryDone(
  db: Db,
  d: Pick<Delivery, "id" | "faxId">,
  owner: string,
  result: { where: string; timeline: string },
  recorded: (t: Runner) => Promise<void>,
): Promise<boolean> {
  return db.tx("connector delivery done", async (t) => {
    const now = nowIso(db);
    const r = await t.run(
      `UPDATE deliveries SET state = 'delivered', delivered_at = ?, result = ?, last_error = NULL, locked_by = NULL, locked_until = NULL ${MINE}`,
      [now, result.where.slice(0, 500), d.id, owner],
    );
    if (r.changes === 0) return false;
    await addEvent(t, d.faxId, { action: "delivered", actor: null, detail: result.timeline }, now);
    await recorded(t);
    return true;
  });
}

/** Tried again at `nextAttemptAt`; `counted` false gives back the try (a row not tried this pass). */
export async function deliveryRetry(
  db: Db,
  id: string,
  owner: string,
  error: string,
  nextAttemptAt: Date,
  counted = true,
): Promise<void> {
  await db.run(
    `UPDATE deliveries SET state = 'pending', locked_by = NULL, locked_until = NULL, last_error = ?, next_attempt_at = ?,
       attempts = attempts - ? ${MINE}`,
    [error.slice(0, 500), nextAttemptAt.toISOString(), counted ? 0 : 1, id, owner],
  );
}

/** Failed for good: the row and the fax's timeline entry ("not delivered to ...: why"). */
export function deliveryFailed(
  db: Db,
  d: Pick<Delivery, "id" | "faxId">,
  owner: string,
  error: string,
  timeline: string,
): Promise<boolean> {
  return db.tx("connector delivery failed", async (t) => {
    const r = await t.run(
      `UPDATE deliveries SET state = 'failed', last_error = ?, locked_by = NULL, locked_until = NULL ${MINE}`,
      [error.slice(0, 500), d.id, owner],
    );
    if (r.changes === 0) return false;
    await addEvent(t, d.faxId, { action: "not-delivered", actor: null, detail: timeline }, nowIso(db));
    return true;
  });
}

/**
 * "Deliver again" (console, CLI): a failed row (or a pending one, brought forward) is due now,
 * its tries counted afresh. Answers the row as it now is, or null when it is not one to redo.
 */
export function deliverAgain(db: Db, id: string, actor: string | null): Promise<Delivery | null> {
  return db.tx("deliver again", async (t) => {
    const now = nowIso(db);
    const r = await t.run(
      "UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = ? WHERE id = ? AND state IN ('failed','pending')",
      [now, id],
    );
    if (r.changes === 0) return null;
    const row = toDelivery(
      (await t.get<Record<string, unknown>>(`SELECT ${COLUMNS} FROM deliveries WHERE id = ?`, [id]))!,
    );
    await addEvent(t, row.faxId, { action: "deliver-again", actor, detail: `${row.kind} ${row.target}` }, now);
    return row;
  });
}

export interface DeliveryFilter {
  faxId?: string;
  state?: DeliveryState;
  limit?: number;
}

export async function listDeliveries(db: Db, f: DeliveryFilter = {}): Promise<Delivery[]> {
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.faxId) {
    where.push("fax_id = ?");
    args.push(f.faxId);
  }
  if (f.state) {
    where.push("state = ?");
    args.push(f.state);
  }
  const rows = await db.all<Record<string, unknown>>(
    `SELECT ${COLUMNS} FROM deliveries ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, id LIMIT ?`,
    [...args, f.limit ?? 200],
  );
  return rows.map(toDelivery);
}

/** The soonest time a pending row is due (the worker sleeps until then at most). */
export async function nextDeliveryAt(db: Db): Promise<string | null> {
  const r = await db.get<{ t: string | null }>(
    "SELECT MIN(next_attempt_at) AS t FROM deliveries WHERE state = 'pending'",
  );
  return r?.t ?? null;
}
