// Received faxes in the SQLite store (store/received.ts): the row with its document, and its timeline.
import { newJobId } from "../job-id.js";
import { SQLITE } from "../transition-sql.js";
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
import type { SqliteContext } from "./context.js";

function byId(c: SqliteContext, id: string): ReceivedFax | null {
  const r = c.sql(`SELECT ${RECEIVED_COLUMNS} FROM received_faxes WHERE id = ?`).get(id) as ReceivedRow | undefined;
  return r ? toReceived(r) : null;
}

function addEvent(c: SqliteContext, id: string, e: Omit<ReceivedEvent, "at">, at: string): void {
  c.sql("INSERT INTO received_events (fax_id, at, action, actor, detail) VALUES (?, ?, ?, ?, ?)").run(
    id,
    at,
    e.action,
    e.actor,
    e.detail,
  );
}

export function keepReceived(c: SqliteContext, f: NewReceivedFax): { fax: ReceivedFax; duplicate: boolean } {
  return c.write(() => {
    const now = c.now();
    const id = `FR${newJobId(c.clock.now()).slice(2)}`;
    const insert = receivedInsert(f, id, now, SQLITE.param);
    const r = c.sql(insert.sql).run(...insert.values);
    if (r.changes === 0) {
      const old = c
        .sql(`SELECT ${RECEIVED_COLUMNS} FROM received_faxes WHERE message_id = ?`)
        .get(f.messageId) as ReceivedRow;
      return { fax: toReceived(old), duplicate: true };
    }
    addEvent(c, id, { action: "stored", actor: null, detail: f.detail }, now);
    return { fax: byId(c, id)!, duplicate: false };
  }, f.document?.length ?? 0);
}

export function getReceived(c: SqliteContext, id: string): ReceivedFax | null {
  return byId(c, id);
}

export function listReceived(c: SqliteContext, f: ReceivedFilter): ReceivedFax[] {
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.messageId !== undefined) {
    where.push("message_id = ?");
    args.push(f.messageId);
  }
  if (f.groups) {
    if (f.groups.length === 0) return [];
    where.push(`(${f.groups.map(() => "groups LIKE ?").join(" OR ")})`);
    args.push(...f.groups.map(groupPattern));
  }
  if (f.states?.length) {
    where.push(`state IN (${f.states.map(() => "?").join(", ")})`);
    args.push(...f.states);
  }
  if (f.receivedBefore) {
    where.push("received_at < ?");
    args.push(f.receivedBefore);
  }
  args.push(f.limit ?? 200);
  const rows = c.db
    .prepare(
      `SELECT ${RECEIVED_COLUMNS} FROM received_faxes ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY received_at DESC, id DESC LIMIT ?`,
    )
    .all(...args) as ReceivedRow[];
  return rows.map(toReceived);
}

export function readReceivedDocument(c: SqliteContext, id: string): Buffer | null {
  const r = c.sql("SELECT data FROM received_faxes WHERE id = ?").get(id) as { data: Buffer | null } | undefined;
  return r?.data ?? null;
}

export function changeReceived(c: SqliteContext, id: string, ch: ReceivedChange): ReceivedFax | null {
  return c.write(() => {
    const cur = byId(c, id);
    if (!cur || (ch.expect && !ch.expect.includes(cur.state))) return null;
    const now = c.now();
    const s = ch.set;
    c.sql(`UPDATE received_faxes SET state = ?, owner = ?, note = ?, escalated_at = ? WHERE id = ?`).run(
      s.state ?? cur.state,
      s.owner !== undefined ? s.owner : cur.owner,
      s.note !== undefined ? s.note : cur.note,
      s.escalatedAt !== undefined ? s.escalatedAt : cur.escalatedAt,
      id,
    );
    addEvent(c, id, ch.event, now);
    return byId(c, id);
  });
}

export function listReceivedEvents(c: SqliteContext, id: string): ReceivedEvent[] {
  return c
    .sql("SELECT at, action, actor, detail FROM received_events WHERE fax_id = ? ORDER BY id")
    .all(id) as ReceivedEvent[];
}

export function purgeReceived(c: SqliteContext, olderThanMs: number): number {
  const cutoff = new Date(c.clock.now() - olderThanMs).toISOString();
  return c.write(() => c.sql("DELETE FROM received_faxes WHERE received_at < ?").run(cutoff).changes);
}
