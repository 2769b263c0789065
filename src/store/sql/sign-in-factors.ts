// Console sign-in factors (issue 50): each person's passkeys (WebAuthn credentials) and TOTP
// authenticator, several per person, each named. Written once for both stores. A TOTP secret is
// kept only encrypted (the caller seals it with the key from the secrets file); `last_step` is
// the last TOTP time step accepted, so a code is never taken twice, also across a fleet.
import type { Db } from "./db.js";

/** The table, as both backends create it (sqlite/migrations.ts, postgres/schema.ts). Shipped: never edit. */
export function signInFactorsTable(): string {
  return `
  CREATE TABLE sign_in_factors (
    id TEXT PRIMARY KEY,
    user_name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('passkey','totp')),
    name TEXT NOT NULL,
    credential_id TEXT UNIQUE,
    public_key TEXT,
    counter INTEGER NOT NULL DEFAULT 0,
    transports TEXT,
    sealed_secret TEXT,
    last_step INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    used_at TEXT
  );
  CREATE INDEX sign_in_factors_user ON sign_in_factors(user_name);
  `;
}

export interface SignInFactor {
  id: string;
  user: string;
  kind: "passkey" | "totp";
  name: string;
  /** passkey: the credential's id (base64url) */
  credentialId: string | null;
  /** passkey: its COSE public key (base64url) */
  publicKey: string | null;
  counter: number;
  transports: string[];
  /** totp: the secret, sealed */
  sealedSecret: string | null;
  lastStep: number;
  createdAt: string;
  usedAt: string | null;
}

interface Row {
  id: string;
  user_name: string;
  kind: "passkey" | "totp";
  name: string;
  credential_id: string | null;
  public_key: string | null;
  counter: number;
  transports: string | null;
  sealed_secret: string | null;
  last_step: number;
  created_at: string;
  used_at: string | null;
}

const fromRow = (r: Row): SignInFactor => ({
  id: r.id,
  user: r.user_name,
  kind: r.kind,
  name: r.name,
  credentialId: r.credential_id,
  publicKey: r.public_key,
  counter: Number(r.counter),
  transports: r.transports ? (JSON.parse(r.transports) as string[]) : [],
  sealedSecret: r.sealed_secret,
  lastStep: Number(r.last_step),
  createdAt: r.created_at,
  usedAt: r.used_at,
});

export class SignInFactors {
  constructor(private readonly db: Db) {}

  async of(user: string): Promise<SignInFactor[]> {
    const rows = await this.db.all<Row>("SELECT * FROM sign_in_factors WHERE user_name = ? ORDER BY created_at, id", [
      user,
    ]);
    return rows.map(fromRow);
  }

  async add(
    f: Omit<SignInFactor, "usedAt" | "lastStep" | "counter"> & { counter?: number; lastStep?: number },
  ): Promise<void> {
    await this.db.run(
      `INSERT INTO sign_in_factors (id, user_name, kind, name, credential_id, public_key, counter, transports,
         sealed_secret, last_step, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        f.id,
        f.user,
        f.kind,
        f.name,
        f.credentialId,
        f.publicKey,
        f.counter ?? 0,
        f.transports.length ? JSON.stringify(f.transports) : null,
        f.sealedSecret,
        f.lastStep ?? 0,
        f.createdAt,
      ],
    );
  }

  /** A passkey used: its new signature counter. */
  async usedPasskey(id: string, counter: number, at: string): Promise<void> {
    await this.db.run("UPDATE sign_in_factors SET counter = ?, used_at = ? WHERE id = ?", [counter, at, id]);
  }

  /**
   * A TOTP code of time step `step` accepted: true only for the first taker (a step at or below
   * the last one accepted is a code used before, refused).
   */
  async takeStep(id: string, step: number, at: string): Promise<boolean> {
    const r = await this.db.run(
      "UPDATE sign_in_factors SET last_step = ?, used_at = ? WHERE id = ? AND last_step < ?",
      [step, at, id, step],
    );
    return r.changes === 1;
  }

  async remove(user: string, id: string): Promise<boolean> {
    return (await this.db.run("DELETE FROM sign_in_factors WHERE user_name = ? AND id = ?", [user, id])).changes === 1;
  }

  /** Every factor of `user` removed (an operator's reset): how many there were. */
  async reset(user: string): Promise<number> {
    return (await this.db.run("DELETE FROM sign_in_factors WHERE user_name = ?", [user])).changes;
  }
}
