// Console second-factor steps under way (issue 50), kept in the store so that a fleet behind a
// balancer without sticky sessions finishes on any gateway what one request began on another:
// - kind 'sign-in': a sign-in whose password (or provider) proof passed and that waits for a
//   passkey or a code, under the SHA-256 of the random id in its cookie;
// - kind 'enrol': a signed-in person adding a factor, under the SHA-256 of their session's id.
// Either carries the ceremony in flight: the WebAuthn challenge handed out, and the TOTP secret
// being confirmed, sealed by the caller (never in clear); a sign-in through the provider also
// its ID token, sealed, for the session's sign-out. A challenge or secret is taken once
// (compare-and-clear), a sign-in is ended once (DELETE ... RETURNING): of two gateways given the
// same cookie, one wins. Bounded: the expired are cleared as new ones begin, and a person keeps
// at most MAX_PER_PERSON of a kind, the newest, so a flood of first steps cannot grow the table
// and the real person's own latest sign-in always stays. Written once for both stores (the
// separate oidc_pending, shipped already, knows no person to bound by).
import type { Db } from "./db.js";
import { sessionKey } from "./shared-state.js";

/** The table, as both backends create it (sqlite/migrations.ts, postgres/schema.ts). Shipped once merged: never edit. */
export function factorPendingTable(): string {
  return `
  CREATE TABLE factor_pending (
    id_hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('sign-in','enrol')),
    user_name TEXT NOT NULL,
    via TEXT,
    challenge TEXT,
    sealed_secret TEXT,
    sealed_id_token TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
  );
  CREATE INDEX factor_pending_expires ON factor_pending(expires_at);
  CREATE INDEX factor_pending_user ON factor_pending(user_name, kind, created_at);
  `;
}

export type FactorPendingKind = "sign-in" | "enrol";

/** Where a step under way is kept: its kind and the id (cookie or session) it is found by. */
export interface FactorPendingKey {
  kind: FactorPendingKind;
  id: string;
}

export interface FactorPendingRecord {
  user: string;
  /** sign-in: how the first proof was given ("password", "oidc") */
  via: string | null;
  /** the WebAuthn challenge handed out and not yet answered */
  challenge: string | null;
  /** the TOTP secret being enrolled, sealed */
  sealedSecret: string | null;
  /** sign-in through the provider: its ID token (sealed), for the session's sign-out */
  sealedIdToken: string | null;
  expiresAt: number;
}

/** The ceremony fields a step carries; the names are the columns'. */
export type CeremonyField = "challenge" | "sealed_secret";
const FIELDS: readonly CeremonyField[] = ["challenge", "sealed_secret"];

// a person's sign-ins (or enrolments) under way at once; the oldest go first
export const MAX_PER_PERSON = 5;

interface Row {
  user_name: string;
  via: string | null;
  challenge: string | null;
  sealed_secret: string | null;
  sealed_id_token: string | null;
  expires_at: string;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const fromRow = (r: Row): FactorPendingRecord => ({
  user: r.user_name,
  via: r.via,
  challenge: r.challenge,
  sealedSecret: r.sealed_secret,
  sealedIdToken: r.sealed_id_token,
  expiresAt: Date.parse(r.expires_at),
});
const field = (f: CeremonyField): CeremonyField => {
  // the column name goes into the text: only the two known ones
  if (!FIELDS.includes(f)) throw new Error(`not a ceremony field: ${f}`);
  return f;
};

export class FactorPending {
  constructor(
    private readonly db: Db,
    private readonly now: () => number,
  ) {}

  /**
   * Keeps a step begun now until `until`. A sign-in is new each time; an enrolment of the same
   * session is the same row again, its expiry renewed and its ceremony kept. `idToken`: the
   * provider's, sealed, carried to the session a sign-in ends in.
   */
  async begin(
    key: FactorPendingKey,
    user: string,
    via: string | null,
    until: number,
    idToken: string | null = null,
  ): Promise<void> {
    const now = this.now();
    const hash = sessionKey(key.id);
    await this.db.tx("factor-pending", async (t) => {
      await t.run("DELETE FROM factor_pending WHERE expires_at <= ?", [iso(now)]);
      // room for this one: the person's newest others stay, the rest go
      await t.run(
        `DELETE FROM factor_pending WHERE user_name = ? AND kind = ? AND id_hash <> ? AND id_hash NOT IN (
           SELECT id_hash FROM factor_pending WHERE user_name = ? AND kind = ? AND id_hash <> ?
           ORDER BY created_at DESC, id_hash LIMIT ?)`,
        [user, key.kind, hash, user, key.kind, hash, MAX_PER_PERSON - 1],
      );
      await t.run(
        `INSERT INTO factor_pending (id_hash, kind, user_name, via, sealed_id_token, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id_hash) DO UPDATE SET expires_at = excluded.expires_at`,
        [hash, key.kind, user, via, idToken, iso(now), iso(until)],
      );
    });
  }

  /** The step under `key`, or null when there is none (never begun, ended, pushed out) or it expired. */
  async get(key: FactorPendingKey): Promise<FactorPendingRecord | null> {
    const r = await this.db.get<Row>(
      `SELECT user_name, via, challenge, sealed_secret, sealed_id_token, expires_at FROM factor_pending
       WHERE id_hash = ? AND kind = ? AND expires_at > ?`,
      [sessionKey(key.id), key.kind, iso(this.now())],
    );
    return r ? fromRow(r) : null;
  }

  /** Hands out a ceremony's value (a new challenge, a sealed secret): false when the step is gone. */
  async set(key: FactorPendingKey, f: CeremonyField, value: string): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE factor_pending SET ${field(f)} = ? WHERE id_hash = ? AND kind = ? AND expires_at > ?`,
      [value, sessionKey(key.id), key.kind, iso(this.now())],
    );
    return r.changes === 1;
  }

  /** Takes the value read before, once: true only for the one request (of any gateway) that cleared it. */
  async take(key: FactorPendingKey, f: CeremonyField, value: string): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE factor_pending SET ${field(f)} = NULL WHERE id_hash = ? AND kind = ? AND ${field(f)} = ? AND expires_at > ?`,
      [sessionKey(key.id), key.kind, value, iso(this.now())],
    );
    return r.changes === 1;
  }

  /** Ends the step: true only for the one request that removed it while it was still alive. */
  async end(key: FactorPendingKey): Promise<boolean> {
    const r = await this.db.get<{ expires_at: string }>(
      "DELETE FROM factor_pending WHERE id_hash = ? AND kind = ? RETURNING expires_at",
      [sessionKey(key.id), key.kind],
    );
    return Boolean(r && r.expires_at > iso(this.now()));
  }
}
