// Received faxes kept in the queue store (../received.ts says what the store offers): the row with
// its document, and its timeline (taken, done, noted, escalated...). Kept once per service
// messageId: `INSERT ... ON CONFLICT (message_id) DO NOTHING`, which both dialects speak.
import type { NewReceivedFax, ReceivedEvent, ReceivedFax, ReceivedState } from "../../received/index.js";
import { newJobId } from "../job-id.js";
import type { ReceivedChange, ReceivedFilter } from "../received.js";
import { type Db, dialect, marks, nowIso, type Runner } from "./db.js";
import { queueText } from "./received-text.js";

export interface ReceivedRow {
  id: string;
  message_id: string;
  user_name: string;
  dialled: string | null;
  sender: string | null;
  csid: string | null;
  pages: number | null;
  status: string;
  received_at: string;
  stored_at: string;
  groups: string;
  state: ReceivedState;
  owner: string | null;
  note: string | null;
  escalated_at: string | null;
  bytes: number | string | null;
}

/** The columns a listing reads (never the document itself). */
export const COLUMNS =
  "id, message_id, user_name, dialled, sender, csid, pages, status, received_at, stored_at, groups, state, owner, note, escalated_at, bytes";

export function toReceived(r: ReceivedRow): ReceivedFax {
  const bytes = r.bytes == null ? 0 : Number(r.bytes);
  return {
    id: r.id,
    messageId: r.message_id,
    user: r.user_name,
    dialled: r.dialled,
    sender: r.sender,
    csid: r.csid,
    pages: r.pages == null ? null : Number(r.pages),
    status: r.status,
    receivedAt: r.received_at,
    storedAt: r.stored_at,
    groups: JSON.parse(r.groups) as string[],
    state: r.state,
    owner: r.owner,
    note: r.note,
    escalatedAt: r.escalated_at,
    hasDocument: bytes > 0,
    bytes,
  };
}

const BY_ID = `SELECT ${COLUMNS} FROM received_faxes WHERE id = ?`;

async function byId(r: Runner, id: string): Promise<ReceivedFax | null> {
  const row = await r.get<ReceivedRow>(BY_ID, [id]);
  return row ? toReceived(row) : null;
}

export async function addEvent(t: Runner, id: string, e: Omit<ReceivedEvent, "at">, at: string): Promise<void> {
  await t.run("INSERT INTO received_events (fax_id, at, action, actor, detail) VALUES (?, ?, ?, ?, ?)", [
    id,
    at,
    e.action,
    e.actor,
    e.detail,
  ]);
}

const INSERT = `INSERT INTO received_faxes (id, message_id, user_name, dialled, sender, csid, pages, status,
    received_at, stored_at, groups, state, bytes, data)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'new', ?, ?) ON CONFLICT (message_id) DO NOTHING`;

/** Keeps a received fax once: a second call with the same messageId stores nothing. */
export function keepReceived(db: Db, f: NewReceivedFax): Promise<{ fax: ReceivedFax; duplicate: boolean }> {
  const doc = f.document ? Buffer.from(f.document.buffer, f.document.byteOffset, f.document.byteLength) : null;
  return db.tx(
    "keep a received fax",
    async (t) => {
      const now = nowIso(db);
      const id = `FR${newJobId(db.clock.now()).slice(2)}`;
      const r = await t.run(INSERT, [
        id,
        f.messageId,
        f.user,
        f.dialled,
        f.sender,
        f.csid,
        f.pages,
        f.status,
        f.receivedAt,
        now,
        JSON.stringify(f.groups),
        doc?.length ?? 0,
        doc,
      ]);
      if (r.changes === 0) {
        const old = await t.get<ReceivedRow>(`SELECT ${COLUMNS} FROM received_faxes WHERE message_id = ?`, [
          f.messageId,
        ]);
        return { fax: toReceived(old!), duplicate: true };
      }
      await addEvent(t, id, { action: "stored", actor: null, detail: f.detail }, now);
      if (f.readText && doc) await queueText(t, { faxId: id, user: f.user, now, waitsUntil: f.readText.waitsUntil });
      return { fax: (await byId(t, id))!, duplicate: false };
    },
    { blobBytes: doc?.length ?? 0 },
  );
}

export const getReceived = (db: Db, id: string): Promise<ReceivedFax | null> => byId(db, id);

/** `groups` is stored as a JSON array; a group matches when its quoted name is in it. */
export const groupPattern = (group: string): string => `%${JSON.stringify(group)}%`;

export async function listReceived(db: Db, f: ReceivedFilter): Promise<ReceivedFax[]> {
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
    where.push(`state IN (${marks(f.states.length)})`);
    args.push(...f.states);
  }
  if (f.receivedBefore) {
    where.push("received_at < ?");
    args.push(f.receivedBefore);
  }
  const rows = await db.all<ReceivedRow>(
    `SELECT ${COLUMNS} FROM received_faxes ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY received_at DESC, id DESC LIMIT ?`,
    [...args, f.limit ?? 200],
  );
  return rows.map(toReceived);
}

export async function readReceivedDocument(db: Db, id: string): Promise<Buffer | null> {
  return (await db.get<{ data: Buffer | null }>("SELECT data FROM received_faxes WHERE id = ?", [id]))?.data ?? null;
}

/** The row locked for the rest of the transaction on PostgreSQL: two "take it" at once, one wins. */
const LOCKED = dialect({ sqlite: BY_ID, postgres: `${BY_ID} FOR UPDATE` });

/** Null when the fax is gone or not in an expected state (nothing changed then). */
export function changeReceived(db: Db, id: string, ch: ReceivedChange): Promise<ReceivedFax | null> {
  return db.tx("change a received fax", async (t) => {
    const row = await t.get<ReceivedRow>(LOCKED, [id]);
    const cur = row ? toReceived(row) : null;
    if (!cur || (ch.expect && !ch.expect.includes(cur.state))) return null;
    const s = ch.set;
    await t.run("UPDATE received_faxes SET state = ?, owner = ?, note = ?, escalated_at = ?, groups = ? WHERE id = ?", [
      s.state ?? cur.state,
      s.owner !== undefined ? s.owner : cur.owner,
      s.note !== undefined ? s.note : cur.note,
      s.escalatedAt !== undefined ? s.escalatedAt : cur.escalatedAt,
      JSON.stringify(s.groups ?? cur.groups),
      id,
    ]);
    await addEvent(t, id, ch.event, nowIso(db));
    return byId(t, id);
  });
}

export function listReceivedEvents(db: Db, id: string): Promise<ReceivedEvent[]> {
  return db.all<ReceivedEvent>("SELECT at, action, actor, detail FROM received_events WHERE fax_id = ? ORDER BY id", [
    id,
  ]);
}

/** Removes received faxes (their documents and timelines with them) received before now minus the retention. */
export async function purgeReceived(db: Db, olderThanMs: number): Promise<number> {
  const cutoff = new Date(db.clock.now() - olderThanMs).toISOString();
  return (await db.run("DELETE FROM received_faxes WHERE received_at < ?", [cutoff])).changes;
}
