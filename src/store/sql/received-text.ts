// The OCR duty of received faxes (issue 51), as rows of received_text (received-text-tables.ts):
// queued with the fax in one transaction, claimed under a lease (a killed run is claimed again
// when its lease ends), finished as done (text and the PDF with its text layer stored together),
// unreadable (kept as it was, and said so), or retried until it has failed too often.
import { type Db, nowIso, type Runner } from "./db.js";
import {
  claimTextRow,
  getTextRow,
  type TextState,
  type TextTable,
  textRowFailed,
  textRowRead,
  textRowUnreadable,
  wordCount,
} from "./text-duty.js";

export type { TextState };

export interface ReceivedText {
  faxId: string;
  user: string;
  state: TextState;
  attempts: number;
  lastError: string | null;
  body: string | null;
  /** Content rules hold the fax's routing until the text is known or this time (null: nothing waits). */
  waitsUntil: string | null;
  doneAt: string | null;
}

interface TextRow {
  fax_id: string;
  user_name: string;
  state: TextState;
  attempts: number | string;
  last_error: string | null;
  body: string | null;
  waits_until: string | null;
  done_at: string | null;
}

const COLUMNS = "fax_id, user_name, state, attempts, last_error, body, waits_until, done_at";

const toText = (r: TextRow): ReceivedText => ({
  faxId: r.fax_id,
  user: r.user_name,
  state: r.state,
  attempts: Number(r.attempts),
  lastError: r.last_error,
  body: r.body,
  waitsUntil: r.waits_until,
  doneAt: r.done_at,
});

/** Queues a fax's text to be read; inside the transaction that keeps the fax (sql/received.ts). */
export async function queueText(
  t: Runner,
  q: { faxId: string; user: string; now: string; waitsUntil: string | null },
): Promise<void> {
  await t.run(
    `INSERT INTO received_text (fax_id, user_name, state, next_attempt_at, waits_until, created_at)
     VALUES (?, ?, 'pending', ?, ?, ?) ON CONFLICT (fax_id) DO NOTHING`,
    [q.faxId, q.user, q.now, q.waitsUntil, q.now],
  );
}

/** received_text to the mechanism of text-duty.ts: a fax's outcomes go on its timeline. */
const RECEIVED: TextTable<TextRow, ReceivedText> = {
  table: "received_text",
  key: "fax_id",
  columns: COLUMNS,
  what: "a fax's text",
  toText,
  note: async (t, faxId, action, detail, at) => {
    await t.run("INSERT INTO received_events (fax_id, at, action, actor, detail) VALUES (?, ?, ?, NULL, ?)", [
      faxId,
      at,
      action,
      detail,
    ]);
  },
};

export function getReceivedText(db: Runner, faxId: string): Promise<ReceivedText | null> {
  return getTextRow(db, RECEIVED, faxId);
}

/**
 * Claims one fax's text to read, under a lease of `leaseMs`; `pick` chooses whose turn it is
 * (text-duty.ts claimTextRow). Null when nothing is due.
 */
export function claimText(
  db: Db,
  o: { leaseMs: number; pick: (users: string[]) => string },
): Promise<ReceivedText | null> {
  return claimTextRow(db, RECEIVED, o);
}

/**
 * The text is read: stored for search, and the PDF with its text layer replaces the one kept (so
 * every later delivery, mail or download carries it). `pdf` null keeps the document as it was.
 */
export function textRead(db: Db, faxId: string, r: { body: string; pdf: Uint8Array | null; pages: number }) {
  const pdf = r.pdf ? Buffer.from(r.pdf.buffer, r.pdf.byteOffset, r.pdf.byteLength) : null;
  const detail = `text layer added by OCR (${r.pages} pages, ${wordCount(r.body)} words)`;
  return textRowRead(
    db,
    RECEIVED,
    faxId,
    r.body,
    detail,
    pdf
      ? {
          run: async (t) => {
            await t.run("UPDATE received_faxes SET data = ?, bytes = ? WHERE id = ?", [pdf, pdf.length, faxId]);
          },
          blobBytes: pdf.length,
        }
      : undefined,
  );
}

/** OCR found no text it could read: the fax stays as it was and its timeline says so. */
export function textUnreadable(db: Db, faxId: string, why: string): Promise<boolean> {
  return textRowUnreadable(db, RECEIVED, faxId, why, `OCR could not read it; the fax is kept as it came (${why})`);
}

/**
 * OCR is off: the fax was claimed only for the look for its reply code, and no text is read. It
 * ends as unreadable without a timeline entry (nothing was tried), so a hold the look could not end
 * is routed by the rules (textsToRoute) and search finds it by its fields only.
 */
export async function textNotRead(db: Db, faxId: string): Promise<void> {
  await db.run(
    `UPDATE received_text SET state = 'unreadable', locked_until = NULL, last_error = 'OCR is off', done_at = ?
     WHERE fax_id = ? AND state = 'running'`,
    [nowIso(db), faxId],
  );
}

/** A run that failed: tried again at `retryAt`, or (null) given up, the fax kept as it was. */
export function textFailed(db: Db, faxId: string, why: string, retryAt: Date | null): Promise<boolean> {
  return textRowFailed(db, RECEIVED, faxId, why, retryAt, `OCR failed; the fax is kept as it came (${why})`);
}

/**
 * Faxes whose routing waited for their text and may now be routed: the text is known (done,
 * unreadable, failed) or the wait is over. Oldest first.
 */
export async function textsToRoute(db: Runner, now: string, limit = 50): Promise<ReceivedText[]> {
  const rows = await db.all<TextRow>(
    `SELECT ${COLUMNS} FROM received_text WHERE waits_until IS NOT NULL
       AND (state IN ('done','unreadable','failed') OR waits_until <= ?) ORDER BY waits_until LIMIT ?`,
    [now, limit],
  );
  return rows.map(toText);
}

/** The held routing is done: the fax no longer waits. True for the one caller that ended the wait. */
export async function endTextWait(db: Runner, faxId: string): Promise<boolean> {
  const r = await db.run("UPDATE received_text SET waits_until = NULL WHERE fax_id = ? AND waits_until IS NOT NULL", [
    faxId,
  ]);
  return r.changes > 0;
}
