// Received faxes in the PostgreSQL store (store/received.ts), as sqlite/received.ts says them.
import type pg from "pg";
import { newJobId } from "../job-id.js";
import { POSTGRES } from "../transition-sql.js";
import {
  receivedInsert,
  groupPattern,
  RECEIVED_COLUMNS,
  toReceived,
  type ReceivedChange,
  type ReceivedFilter,
  type ReceivedRow,
} from "../received.js";
import type { NewReceivedFax, ReceivedEvent, ReceivedFax } from "../../received/index.js";

type Q = Pick<pg.PoolClient, "query">;

async function byId(c: Q, id: string, lock = false): Promise<ReceivedFax | null> {
  const r = await c.query<ReceivedRow>(
    `SELECT ${RECEIVED_COLUMNS} FROM received_faxes WHERE id = $1${lock ? " FOR UPDATE" : ""}`,
    [id],
  );
  return r.rows[0] ? toReceived(r.rows[0]) : null;
}

async function addEvent(c: Q, id: string, e: Omit<ReceivedEvent, "at">, at: string): Promise<void> {
  await c.query("INSERT INTO received_events (fax_id, at, action, actor, detail) VALUES ($1, $2, $3, $4, $5)", [
    id,
    at,
    e.action,
    e.actor,
    e.detail,
  ]);
}

export async function keepReceived(
  c: Q,
  f: NewReceivedFax,
  nowMs: number,
): Promise<{ fax: ReceivedFax; duplicate: boolean }> {
  const now = new Date(nowMs).toISOString();
  const id = `FR${newJobId(nowMs).slice(2)}`;
  const insert = receivedInsert(f, id, now, POSTGRES.param);
  const r = await c.query(insert.sql, insert.values);
  if (r.rowCount === 0) {
    const old = await c.query<ReceivedRow>(`SELECT ${RECEIVED_COLUMNS} FROM received_faxes WHERE message_id = $1`, [
      f.messageId,
    ]);
    return { fax: toReceived(old.rows[0]!), duplicate: true };
  }
  await addEvent(c, id, { action: "stored", actor: null, detail: f.detail }, now);
  return { fax: (await byId(c, id))!, duplicate: false };
}

export function getReceived(c: Q, id: string): Promise<ReceivedFax | null> {
  return byId(c, id);
}

export async function listReceived(c: Q, f: ReceivedFilter): Promise<ReceivedFax[]> {
  const where: string[] = [];
  const args: unknown[] = [];
  const arg = (v: unknown) => `$${args.push(v)}`;
  if (f.messageId !== undefined) where.push(`message_id = ${arg(f.messageId)}`);
  if (f.groups) {
    if (f.groups.length === 0) return [];
    where.push(`(${f.groups.map((g) => `groups LIKE ${arg(groupPattern(g))}`).join(" OR ")})`);
  }
  if (f.states?.length) where.push(`state = ANY(${arg(f.states)})`);
  if (f.receivedBefore) where.push(`received_at < ${arg(f.receivedBefore)}`);
  const limit = arg(f.limit ?? 200);
  const r = await c.query<ReceivedRow>(
    `SELECT ${RECEIVED_COLUMNS} FROM received_faxes ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY received_at DESC, id DESC LIMIT ${limit}`,
    args,
  );
  return r.rows.map(toReceived);
}

export async function readReceivedDocument(c: Q, id: string): Promise<Buffer | null> {
  const r = await c.query<{ data: Buffer | null }>("SELECT data FROM received_faxes WHERE id = $1", [id]);
  return r.rows[0]?.data ?? null;
}

export async function changeReceived(c: Q, id: string, ch: ReceivedChange, nowMs: number): Promise<ReceivedFax | null> {
  // the row is locked for the rest of the transaction: two "take it" at once, one wins
  const cur = await byId(c, id, true);
  if (!cur || (ch.expect && !ch.expect.includes(cur.state))) return null;
  const s = ch.set;
  await c.query("UPDATE received_faxes SET state = $1, owner = $2, note = $3, escalated_at = $4 WHERE id = $5", [
    s.state ?? cur.state,
    s.owner !== undefined ? s.owner : cur.owner,
    s.note !== undefined ? s.note : cur.note,
    s.escalatedAt !== undefined ? s.escalatedAt : cur.escalatedAt,
    id,
  ]);
  await addEvent(c, id, ch.event, new Date(nowMs).toISOString());
  return byId(c, id);
}

export async function listReceivedEvents(c: Q, id: string): Promise<ReceivedEvent[]> {
  const r = await c.query<ReceivedEvent>(
    "SELECT at, action, actor, detail FROM received_events WHERE fax_id = $1 ORDER BY id",
    [id],
  );
  return r.rows;
}

export async function purgeReceived(c: Q, olderThanMs: number, nowMs: number): Promise<number> {
  const r = await c.query("DELETE FROM received_faxes WHERE received_at < $1", [
    new Date(nowMs - olderThanMs).toISOString(),
  ]);
  return r.rowCount ?? 0;
}
