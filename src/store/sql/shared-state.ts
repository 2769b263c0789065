// What a fleet of gateways shares besides the queue (issue 55): the console's sessions and the
// counters of rate-limiter-flexible (sign-in lockouts, per-user and per-client rates). One text
// for both backends (sqlite/migrations.ts and postgres/schema.ts each run it as a step of their
// own). Part of a shipped step once merged: never edit it then; a change is a new step.
import type { Db } from "./db.js";
import { sha256Hex } from "../../sha256.js";

/** The sessions and the counters (rate-limiter-flexible's own layout: key, points, expiry in ms). */
export function sharedStateTables(): string {
  return `
  CREATE TABLE console_sessions (
    id_hash TEXT PRIMARY KEY,
    "user" TEXT NOT NULL,
    admin INTEGER NOT NULL,
    csrf_secret TEXT NOT NULL,
    csrf_token TEXT NOT NULL,
    signed_in_at TEXT NOT NULL,
    seen_at TEXT NOT NULL
  );
  CREATE INDEX console_sessions_user ON console_sessions("user");
  CREATE TABLE rate_limits (
    key TEXT PRIMARY KEY,
    points INTEGER NOT NULL DEFAULT 0,
    expire BIGINT
  );
  `;
}

/**
 * The large queue's indexes (docs/ha.md): partial, on the live states only, so a million finished
 * jobs are not in them. The claim reads the waiting rows in their send order from the first
 * (sql/leases.ts, DUE) and stops at its LIMIT instead of sorting every waiting row; the numbers in
 * flight are counted from the second. Their state lists are the transitions' (claim's from-states,
 * IN_FLIGHT_STATES) as they stand at this step; the plans are held by test/store/claim-plan.test.ts.
 */
export function largeQueueIndexes(): string {
  return `
  CREATE INDEX recipients_claimable ON recipients((COALESCE(next_attempt_at, created_at))) WHERE state IN ('queued','deferred');
  CREATE INDEX recipients_in_flight ON recipients(number) WHERE state IN ('sending','unknown','processing');
  `;
}

/** A session as the table keeps it: never its id, only the id's SHA-256 (a reader of the table cannot sign in with it). */
export interface StoredSession {
  user: string;
  admin: boolean;
  csrfSecret: string;
  csrfToken: string;
  signedInAt: number;
  seenAt: number;
}

interface Row {
  id_hash: string;
  user: string;
  admin: number;
  csrf_secret: string;
  csrf_token: string;
  signed_in_at: string;
  seen_at: string;
}

/** The key a session is kept under: the SHA-256 of its 256-bit random id (no salt needed for such an id). */
export const sessionKey = (id: string): string => sha256Hex(id);

const iso = (ms: number): string => new Date(ms).toISOString();
const fromRow = (r: Row): StoredSession => ({
  user: r.user,
  admin: Boolean(r.admin),
  csrfSecret: r.csrf_secret,
  csrfToken: r.csrf_token,
  signedInAt: Date.parse(r.signed_in_at),
  seenAt: Date.parse(r.seen_at),
});

export async function getSession(db: Db, key: string): Promise<StoredSession | null> {
  const r = await db.get<Row>("SELECT * FROM console_sessions WHERE id_hash = ?", [key]);
  return r ? fromRow(r) : null;
}

export async function putSession(db: Db, key: string, s: StoredSession): Promise<void> {
  await db.run(
    `INSERT INTO console_sessions (id_hash, "user", admin, csrf_secret, csrf_token, signed_in_at, seen_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id_hash) DO UPDATE SET "user" = excluded."user", admin = excluded.admin,
       csrf_secret = excluded.csrf_secret, csrf_token = excluded.csrf_token,
       signed_in_at = excluded.signed_in_at, seen_at = excluded.seen_at`,
    [key, s.user, s.admin ? 1 : 0, s.csrfSecret, s.csrfToken, iso(s.signedInAt), iso(s.seenAt)],
  );
}

export async function deleteSession(db: Db, key: string): Promise<void> {
  await db.run("DELETE FROM console_sessions WHERE id_hash = ?", [key]);
}

export async function listSessions(db: Db): Promise<Array<{ key: string; session: StoredSession }>> {
  const rows = await db.all<Row>("SELECT * FROM console_sessions ORDER BY signed_in_at");
  return rows.map((r) => ({ key: r.id_hash, session: fromRow(r) }));
}
