// The OCR duty of received faxes (issue 51), as rows of received_text (received-text-tables.ts):
// queued with the fax in one transaction, claimed under a lease (a killed run is claimed again
// when its lease ends), finished as done (text and the PDF with its text layer stored together),
// unreadable (kept as it was, and said so), or retried until it has failed too often.
import { type Db, nowIso, type Runner } from "./db.js";

export type TextState = "pending" | "running" | "done" | "unreadable" | "failed";

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

export async function getReceivedText(db: Runner, faxId: string): Promise<ReceivedText | null> {
  const r = await db.get<TextRow>(`SELECT ${COLUMNS} FROM received_text WHERE fax_id = ?`, [faxId]);
  return r ? toText(r) : null;
}

/** Due work: pending and due, or running under a lease that ended (its runner died). */
const DUE = "((state = 'pending' AND next_attempt_at <= ?) OR (state = 'running' AND locked_until < ?))";

/**
 * Claims one fax's text to read, under a lease of `leaseMs`. `pick` chooses whose turn it is
 * among the users with due work (the duty's round robin), so one user's hundred pages never
 * hold another's one page behind them. Null when nothing is due.
 */
export function claimText(
  db: Db,
  o: { leaseMs: number; pick: (users: string[]) => string },
): Promise<ReceivedText | null> {
  return db.tx("claim a fax's text", async (t) => {
    const now = nowIso(db);
    const users = await t.all<{ user_name: string }>(
      `SELECT user_name FROM received_text WHERE ${DUE} GROUP BY user_name ORDER BY MIN(seq)`,
      [now, now],
    );
    if (users.length === 0) return null;
    const user = o.pick(users.map((u) => u.user_name));
    const row = await t.get<{ seq: number }>(
      `SELECT seq FROM received_text WHERE ${DUE} AND user_name = ? ORDER BY seq LIMIT 1`,
      [now, now, user],
    );
    if (!row) return null;
    const until = new Date(db.clock.now() + o.leaseMs).toISOString();
    // another gateway may have claimed it meanwhile: only the one whose update lands has it
    const r = await t.run(
      `UPDATE received_text SET state = 'running', attempts = attempts + 1, locked_until = ?
       WHERE seq = ? AND ${DUE}`,
      [until, row.seq, now, now],
    );
    if (r.changes === 0) return null;
    const got = await t.get<TextRow>(`SELECT ${COLUMNS} FROM received_text WHERE seq = ?`, [row.seq]);
    return got ? toText(got) : null;
  });
}

async function addEvent(t: Runner, faxId: string, action: string, detail: string, at: string): Promise<void> {
  await t.run("INSERT INTO received_events (fax_id, at, action, actor, detail) VALUES (?, ?, ?, NULL, ?)", [
    faxId,
    at,
    action,
    detail,
  ]);
}

/**
 * The text is read: stored for search, and the PDF with its text layer replaces the one kept (so
 * every later delivery, mail or download carries it). `pdf` null keeps the document as it was.
 */
export function textRead(db: Db, faxId: string, r: { body: string; pdf: Uint8Array | null; pages: number }) {
  const pdf = r.pdf ? Buffer.from(r.pdf.buffer, r.pdf.byteOffset, r.pdf.byteLength) : null;
  return db.tx(
    "store a fax's text",
    async (t) => {
      const now = nowIso(db);
      const u = await t.run(
        `UPDATE received_text SET state = 'done', body = ?, locked_until = NULL, last_error = NULL, done_at = ?
         WHERE fax_id = ? AND state = 'running'`,
        [r.body, now, faxId],
      );
      if (u.changes === 0) return false;
      if (pdf) await t.run("UPDATE received_faxes SET data = ?, bytes = ? WHERE id = ?", [pdf, pdf.length, faxId]);
      await addEvent(
        t,
        faxId,
        "text read",
        `text layer added by OCR (${r.pages} pages, ${wordCount(r.body)} words)`,
        now,
      );
      return true;
    },
    { blobBytes: pdf?.length ?? 0 },
  );
}

const wordCount = (s: string): number => s.split(/\s+/).filter(Boolean).length;

/** OCR found no text it could read: the fax stays as it was and its timeline says so. */
export function textUnreadable(db: Db, faxId: string, why: string): Promise<boolean> {
  return db.tx("mark a fax's text unreadable", async (t) => {
    const now = nowIso(db);
    const u = await t.run(
      `UPDATE received_text SET state = 'unreadable', body = NULL, locked_until = NULL, last_error = ?, done_at = ?
       WHERE fax_id = ? AND state = 'running'`,
      [why, now, faxId],
    );
    if (u.changes === 0) return false;
    await addEvent(t, faxId, "text unreadable", `OCR could not read it; the fax is kept as it came (${why})`, now);
    return true;
  });
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
  return db.tx("defer a fax's text", async (t) => {
    const now = nowIso(db);
    const u = retryAt
      ? await t.run(
          `UPDATE received_text SET state = 'pending', next_attempt_at = ?, locked_until = NULL, last_error = ?
           WHERE fax_id = ? AND state = 'running'`,
          [retryAt.toISOString(), why, faxId],
        )
      : await t.run(
          `UPDATE received_text SET state = 'failed', locked_until = NULL, last_error = ?, done_at = ?
           WHERE fax_id = ? AND state = 'running'`,
          [why, now, faxId],
        );
    if (u.changes === 0) return false;
    if (!retryAt) await addEvent(t, faxId, "text failed", `OCR failed; the fax is kept as it came (${why})`, now);
    return true;
  });
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

/** Counts by state, for the health page and tests. */
export async function textCounts(db: Runner): Promise<Record<TextState, number>> {
  const rows = await db.all<{ state: TextState; n: number | string }>(
    "SELECT state, COUNT(*) AS n FROM received_text GROUP BY state",
  );
  const out: Record<TextState, number> = { pending: 0, running: 0, done: 0, unreadable: 0, failed: 0 };
  for (const r of rows) out[r.state] = Number(r.n);
  return out;
}
