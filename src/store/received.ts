// Received faxes kept in the queue store: the service's record of each (who sent it, the number
// dialled, pages), its document, the inboxes it shows in, and its life in a group's shared inbox
// (new -> taken -> done) with every action in its timeline. One row per service messageId, so the
// webhook and the poller, however often they see a fax, keep it once.
import type { ReceivedState, NewReceivedFax, ReceivedFax, ReceivedEvent } from "../received/index.js";

export interface ReceivedFilter {
  /** The one fax with this service messageId. */
  messageId?: string;
  /** Faxes that show in any of these inboxes. */
  groups?: string[];
  states?: ReceivedState[];
  /** Received before this ISO time. */
  receivedBefore?: string;
  limit?: number;
}

export interface ReceivedChange {
  set: { state?: ReceivedState; owner?: string | null; note?: string | null; escalatedAt?: string | null };
  /** Changed only from one of these states (a "take it" loses to one that came first). */
  expect?: ReceivedState[];
  event: Omit<ReceivedEvent, "at">;
}

/** The store's side of it (both backends; QueueStore extends this). */
export interface ReceivedStore {
  /** Keeps a received fax once: a second call with the same messageId stores nothing. */
  keepReceived(f: NewReceivedFax): Promise<{ fax: ReceivedFax; duplicate: boolean }>;
  getReceived(id: string): Promise<ReceivedFax | null>;
  listReceived(filter?: ReceivedFilter): Promise<ReceivedFax[]>;
  readReceivedDocument(id: string): Promise<Buffer | null>;
  /** Null when the fax is gone or not in an expected state (nothing changed then). */
  changeReceived(id: string, change: ReceivedChange): Promise<ReceivedFax | null>;
  listReceivedEvents(id: string): Promise<ReceivedEvent[]>;
  /** Removes received faxes (and their documents) received before now minus the retention. */
  purgeReceived(olderThanMs: number): Promise<number>;
}

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

/**
 * A new received fax kept once: `INSERT ... ON CONFLICT (message_id) DO NOTHING` with `param`'s
 * placeholders (a Dialect's, transition-sql.ts), and its values in order.
 */
export function receivedInsert(
  f: NewReceivedFax,
  id: string,
  storedAt: string,
  param: (n: number) => string,
): { sql: string; values: unknown[] } {
  const doc = f.document ? Buffer.from(f.document.buffer, f.document.byteOffset, f.document.byteLength) : null;
  const row: Record<string, unknown> = {
    id,
    message_id: f.messageId,
    user_name: f.user,
    dialled: f.dialled,
    sender: f.sender,
    csid: f.csid,
    pages: f.pages,
    status: f.status,
    received_at: f.receivedAt,
    stored_at: storedAt,
    groups: JSON.stringify(f.groups),
    state: "new",
    bytes: doc?.length ?? 0,
    data: doc,
  };
  const params = Object.keys(row).map((_, n) => param(n + 1));
  return {
    sql: `INSERT INTO received_faxes (${Object.keys(row).join(", ")}) VALUES (${params.join(", ")}) ON CONFLICT (message_id) DO NOTHING`,
    values: Object.values(row),
  };
}

/** The columns a listing reads (never the document itself). */
export const RECEIVED_COLUMNS = `id, message_id, user_name, dialled, sender, csid, pages, status, received_at, stored_at, groups, state, owner, note, escalated_at, bytes`;

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

/** `groups` is stored as a JSON array; a group matches when its quoted name is in it. */
export function groupPattern(group: string): string {
  return `%${JSON.stringify(group)}%`;
}
