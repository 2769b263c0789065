// The OCR duty's rows, one mechanism for both of its tables: received_text (a received fax's
// text, received-text.ts) and sent_text (a sent job's, sent-text.ts) have the same duty columns
// (state, lease, tries, the text), so claiming a row under a lease and finishing it (read,
// unreadable, tried again or given up) is said once here, parameterised by the table, its key
// column and the owner's timeline where each outcome is noted.
import { type Db, nowIso, type Runner } from "./db.js";

export type TextState = "pending" | "running" | "done" | "unreadable" | "failed";

/** A table of the OCR duty and how its rows read and are told on their owner's timeline. */
export interface TextTable<Row, Text> {
  table: "received_text" | "sent_text";
  /** The owner's id: the fax's or the job's. */
  key: "fax_id" | "job_id";
  /** The columns read into a row. */
  columns: string;
  /** Names the transactions: "claim <what>", "store <what>"... */
  what: string;
  toText(r: Row): Text;
  /** A step on the owner's timeline, inside the transaction that finishes the row. */
  note(t: Runner, id: string, action: string, detail: string, at: string): Promise<void>;
}

/** Due work: pending and due, or running under a lease that ended (its runner died). */
const DUE = "((state = 'pending' AND next_attempt_at <= ?) OR (state = 'running' AND locked_until < ?))";

export async function getTextRow<R, T>(db: Runner, tt: TextTable<R, T>, id: string): Promise<T | null> {
  const r = await db.get<R>(`SELECT ${tt.columns} FROM ${tt.table} WHERE ${tt.key} = ?`, [id]);
  return r ? tt.toText(r) : null;
}

/**
 * Claims one row to read, under a lease of `leaseMs`. `pick` chooses whose turn it is among the
 * users with due work (the duty's round robin), so one user's hundred pages never hold another's
 * one page behind them. Null when nothing is due.
 */
export function claimTextRow<R, T>(
  db: Db,
  tt: TextTable<R, T>,
  o: { leaseMs: number; pick: (users: string[]) => string },
): Promise<T | null> {
  return db.tx(`claim ${tt.what}`, async (t) => {
    const now = nowIso(db);
    const users = await t.all<{ user_name: string }>(
      `SELECT user_name FROM ${tt.table} WHERE ${DUE} GROUP BY user_name ORDER BY MIN(seq)`,
      [now, now],
    );
    if (users.length === 0) return null;
    const user = o.pick(users.map((u) => u.user_name));
    const row = await t.get<{ seq: number }>(
      `SELECT seq FROM ${tt.table} WHERE ${DUE} AND user_name = ? ORDER BY seq LIMIT 1`,
      [now, now, user],
    );
    if (!row) return null;
    const until = new Date(db.clock.now() + o.leaseMs).toISOString();
    // another gateway may have claimed it meanwhile: only the one whose update lands has it
    const r = await t.run(
      `UPDATE ${tt.table} SET state = 'running', attempts = attempts + 1, locked_until = ? WHERE seq = ? AND ${DUE}`,
      [until, row.seq, now, now],
    );
    if (r.changes === 0) return null;
    const got = await t.get<R>(`SELECT ${tt.columns} FROM ${tt.table} WHERE seq = ?`, [row.seq]);
    return got ? tt.toText(got) : null;
  });
}

export const wordCount = (s: string): number => s.split(/\s+/).filter(Boolean).length;

/**
 * The text is read and stored for search; `detail` goes on the owner's timeline (how much, never
 * what). `also` runs in the same transaction when the row was the runner's (a fax's new PDF).
 */
export function textRowRead<R, T>(
  db: Db,
  tt: TextTable<R, T>,
  id: string,
  body: string,
  detail: string,
  also?: { run: (t: Runner) => Promise<void>; blobBytes: number },
): Promise<boolean> {
  return db.tx(
    `store ${tt.what}`,
    async (t) => {
      const now = nowIso(db);
      const u = await t.run(
        `UPDATE ${tt.table} SET state = 'done', body = ?, locked_until = NULL, last_error = NULL, done_at = ?
         WHERE ${tt.key} = ? AND state = 'running'`,
        [body, now, id],
      );
      if (u.changes === 0) return false;
      if (also) await also.run(t);
      await tt.note(t, id, "text read", detail, now);
      return true;
    },
    { blobBytes: also?.blobBytes ?? 0 },
  );
}

/** OCR found no text it could read: the owner stays as it was and its timeline says `detail`. */
export function textRowUnreadable<R, T>(
  db: Db,
  tt: TextTable<R, T>,
  id: string,
  why: string,
  detail: string,
): Promise<boolean> {
  return db.tx(`mark ${tt.what} unreadable`, async (t) => {
    const now = nowIso(db);
    const u = await t.run(
      `UPDATE ${tt.table} SET state = 'unreadable', body = NULL, locked_until = NULL, last_error = ?, done_at = ?
       WHERE ${tt.key} = ? AND state = 'running'`,
      [why, now, id],
    );
    if (u.changes === 0) return false;
    await tt.note(t, id, "text unreadable", detail, now);
    return true;
  });
}

/** A run that failed: tried again at `retryAt`, or (null) given up, the timeline saying `detail`. */
export function textRowFailed<R, T>(
  db: Db,
  tt: TextTable<R, T>,
  id: string,
  why: string,
  retryAt: Date | null,
  detail: string,
): Promise<boolean> {
  return db.tx(`defer ${tt.what}`, async (t) => {
    const now = nowIso(db);
    const u = retryAt
      ? await t.run(
          `UPDATE ${tt.table} SET state = 'pending', next_attempt_at = ?, locked_until = NULL, last_error = ?
           WHERE ${tt.key} = ? AND state = 'running'`,
          [retryAt.toISOString(), why, id],
        )
      : await t.run(
          `UPDATE ${tt.table} SET state = 'failed', locked_until = NULL, last_error = ?, done_at = ?
           WHERE ${tt.key} = ? AND state = 'running'`,
          [why, now, id],
        );
    if (u.changes === 0) return false;
    if (!retryAt) await tt.note(t, id, "text failed", detail, now);
    return true;
  });
}

/** Counts by state, for /metrics (text-backlog.ts) and tests. */
export async function textRowCounts(db: Runner, table: TextTable<unknown, unknown>["table"]) {
  const rows = await db.all<{ state: TextState; n: number | string }>(
    `SELECT state, COUNT(*) AS n FROM ${table} GROUP BY state`,
  );
  const out: Record<TextState, number> = { pending: 0, running: 0, done: 0, unreadable: 0, failed: 0 };
  for (const r of rows) out[r.state] = Number(r.n);
  return out;
}
