// Console sign-ins through the OpenID provider that are under way (issue 50): what the callback
// needs (state, nonce, PKCE verifier, where to go next), kept in the store so that a fleet behind
// a balancer without sticky sessions finishes on any gateway the sign-in it began on another.
// Kept under the SHA-256 of the browser cookie's random id (a reader of the table cannot take a
// sign-in over with it); taken once (DELETE ... RETURNING: two callbacks with one cookie, one
// wins); expired ones are cleared as new ones begin. Written once for both stores.
import type { Db } from "./db.js";
import { sessionKey } from "./shared-state.js";

/** The table, as both backends create it (sqlite/migrations.ts, postgres/schema.ts). Shipped once merged: never edit. */
export function oidcPendingTable(): string {
  return `
  CREATE TABLE oidc_pending (
    id_hash TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    expires_at TEXT NOT NULL
  );
  CREATE INDEX oidc_pending_expires ON oidc_pending(expires_at);
  `;
}

/** One sign-in under way: the relying party's secrets and the console path to return to. */
export interface OidcPendingRecord {
  state: string;
  nonce: string;
  codeVerifier: string;
  next: string;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** Keeps a sign-in begun now under `id` (the cookie's value) until `until`; clears the expired. */
export async function putOidcPending(
  db: Db,
  id: string,
  p: OidcPendingRecord,
  until: number,
  now: number,
): Promise<void> {
  await db.run("DELETE FROM oidc_pending WHERE expires_at <= ?", [iso(now)]);
  await db.run("INSERT INTO oidc_pending (id_hash, body, expires_at) VALUES (?, ?, ?)", [
    sessionKey(id),
    JSON.stringify(p),
    iso(until),
  ]);
}

/** The sign-in kept under `id`, removed in the same statement (one use); null when none or expired. */
export async function takeOidcPending(db: Db, id: string, now: number): Promise<OidcPendingRecord | null> {
  const r = await db.get<{ body: string; expires_at: string }>(
    "DELETE FROM oidc_pending WHERE id_hash = ? RETURNING body, expires_at",
    [sessionKey(id)],
  );
  if (!r || r.expires_at <= iso(now)) return null;
  return JSON.parse(r.body) as OidcPendingRecord;
}
