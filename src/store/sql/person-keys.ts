// Keys that follow people (issue 50 point 2): per person, the fax service's user id an operator
// mapped (`faxgate directory map`, for a directory that lacks it) and the API key the gateway
// minted for them. The token is kept only sealed (AES-256-GCM: the caller seals it with the key
// from the secrets file), so a copy of the database alone gives no one a key. Written once for
// both stores; the mapping outlives a deleted key (a person disabled and enabled again).
import { type Db, nowIso } from "./db.js";

/** The table, as both backends create it (sqlite/migrations.ts, postgres/schema.ts). Shipped: never edit. */
export function personKeysTable(): string {
  return `
  CREATE TABLE person_keys (
    user_name TEXT PRIMARY KEY,
    mapped_user_id TEXT,
    key_id TEXT,
    service_user_id TEXT,
    sealed_token TEXT,
    access TEXT,
    expires_at TEXT,
    minted_at TEXT,
    updated_at TEXT NOT NULL
  );
  `;
}

export interface PersonKey {
  user: string;
  /** the service user id an operator mapped (null: none) */
  mappedUserId: string | null;
  /** the minted key (all null: none now) */
  keyId: string | null;
  serviceUserId: string | null;
  sealedToken: string | null;
  access: string | null;
  expiresAt: string | null;
  mintedAt: string | null;
}

interface Row {
  user_name: string;
  mapped_user_id: string | null;
  key_id: string | null;
  service_user_id: string | null;
  sealed_token: string | null;
  access: string | null;
  expires_at: string | null;
  minted_at: string | null;
}

const row = (r: Row): PersonKey => ({
  user: r.user_name,
  mappedUserId: r.mapped_user_id,
  keyId: r.key_id,
  serviceUserId: r.service_user_id,
  sealedToken: r.sealed_token,
  access: r.access,
  expiresAt: r.expires_at,
  mintedAt: r.minted_at,
});

export class PersonKeys {
  constructor(private readonly db: Db) {}

  async all(): Promise<PersonKey[]> {
    return (await this.db.all<Row>("SELECT * FROM person_keys ORDER BY user_name")).map(row);
  }

  /** An operator's mapping of a person to the service's user id (kept when their key is deleted). */
  async map(user: string, serviceUserId: string): Promise<void> {
    const at = nowIso(this.db);
    const r = await this.db.run("UPDATE person_keys SET mapped_user_id = ?, updated_at = ? WHERE user_name = ?", [
      serviceUserId,
      at,
      user,
    ]);
    if (r.changes === 0)
      await this.db.run("INSERT INTO person_keys (user_name, mapped_user_id, updated_at) VALUES (?, ?, ?)", [
        user,
        serviceUserId,
        at,
      ]);
  }

  /** Records a minted (or rotated) key, its token sealed by the caller. */
  async putKey(
    user: string,
    k: { keyId: string; serviceUserId: string; sealedToken: string; access: string; expiresAt: string | null },
  ): Promise<void> {
    const at = nowIso(this.db);
    const values = [k.keyId, k.serviceUserId, k.sealedToken, k.access, k.expiresAt, at, at];
    const r = await this.db.run(
      "UPDATE person_keys SET key_id = ?, service_user_id = ?, sealed_token = ?, access = ?, expires_at = ?, minted_at = ?, updated_at = ? WHERE user_name = ?",
      [...values, user],
    );
    if (r.changes === 0)
      await this.db.run(
        "INSERT INTO person_keys (key_id, service_user_id, sealed_token, access, expires_at, minted_at, updated_at, user_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [...values, user],
      );
  }

  /** Forgets a person's key (deleted at the service); their mapping stays. */
  async clearKey(user: string): Promise<void> {
    await this.db.run(
      "UPDATE person_keys SET key_id = NULL, service_user_id = NULL, sealed_token = NULL, access = NULL, expires_at = NULL, minted_at = NULL, updated_at = ? WHERE user_name = ?",
      [nowIso(this.db), user],
    );
  }
}
