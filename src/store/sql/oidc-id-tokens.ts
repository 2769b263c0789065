// The ID token of each console session begun through the OpenID provider, for sign-out: the
// provider's end_session_endpoint is sent it (id_token_hint). Kept in the store, so that sign-out
// on any gateway of a fleet signs out at the provider too, not only on the gateway of the
// callback. Under the SHA-256 of the session's id; the token sealed by the caller (it carries the
// person's claims); taken once at sign-out; expired ones cleared as new ones are kept.
import type { Db } from "./db.js";
import { sessionKey } from "./shared-state.js";

/** The table, as both backends create it (sqlite/migrations.ts, postgres/schema.ts). Shipped once merged: never edit. */
export function oidcIdTokensTable(): string {
  return `
  CREATE TABLE oidc_id_tokens (
    session_hash TEXT PRIMARY KEY,
    sealed_token TEXT NOT NULL,
    expires_at TEXT NOT NULL
  );
  CREATE INDEX oidc_id_tokens_expires ON oidc_id_tokens(expires_at);
  `;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** Keeps the sealed ID token of session `sessionId` until `until` (the session's own end). */
export async function putOidcIdToken(
  db: Db,
  sessionId: string,
  sealed: string,
  until: number,
  now: number,
): Promise<void> {
  await db.run("DELETE FROM oidc_id_tokens WHERE expires_at <= ?", [iso(now)]);
  await db.run(
    `INSERT INTO oidc_id_tokens (session_hash, sealed_token, expires_at) VALUES (?, ?, ?)
     ON CONFLICT (session_hash) DO UPDATE SET sealed_token = excluded.sealed_token, expires_at = excluded.expires_at`,
    [sessionKey(sessionId), sealed, iso(until)],
  );
}

/** The sealed ID token of `sessionId`, removed as it is read; null when none or expired. */
export async function takeOidcIdToken(db: Db, sessionId: string, now: number): Promise<string | null> {
  const r = await db.get<{ sealed_token: string; expires_at: string }>(
    "DELETE FROM oidc_id_tokens WHERE session_hash = ? RETURNING sealed_token, expires_at",
    [sessionKey(sessionId)],
  );
  return r && r.expires_at > iso(now) ? r.sealed_token : null;
}
