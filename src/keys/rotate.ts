// Key rotation, shared by `faxgate keys rotate` and the daemon's own expiry watch:
// create a new key for the same user and access level, prove it works, and only then let the
// caller switch to it and delete the old one. A failure at any step leaves the old key working.
import { FaxgateError } from "../errors.js";
import type { ApiKey, FaxApi } from "../fax/index.js";

export interface RotationPlan {
  userId: string;
  oldKey: ApiKey | null;
  newKey: ApiKey & { token: string };
}

export interface RotateOptions {
  admin: FaxApi;
  /** client with the user's current key */
  current: FaxApi;
  currentToken: string;
  /** makes a client for a token, to prove the new key works */
  clientWithKey: (token: string) => FaxApi;
  userName: string;
  now: Date;
}

/** Finds the key record whose token is `token` among a user's keys (null if the service hides tokens). */
export async function findKey(admin: FaxApi, userId: string, token: string): Promise<ApiKey | null> {
  const keys = await admin.listApiKeys(userId);
  return keys.find((k) => k.token === token) ?? null;
}

export async function createReplacementKey(opts: RotateOptions): Promise<RotationPlan> {
  const me = await opts.current.me();
  const oldKey = await findKey(opts.admin, me.userId, opts.currentToken);
  let expiresAt: string | undefined;
  if (oldKey?.expiresAt && oldKey.createdAt) {
    // Keep the same lifetime the old key was given.
    const life = Date.parse(oldKey.expiresAt) - Date.parse(oldKey.createdAt);
    if (life > 0) expiresAt = new Date(opts.now.getTime() + life).toISOString();
  }
  const stamp = opts.now.toISOString().slice(0, 10);
  const created = await opts.admin.createApiKey({
    name: `faxgate ${opts.userName} ${stamp}`.slice(0, 128),
    userId: me.userId,
    access: oldKey?.access ?? "print_driver",
    expiresAt,
  });
  if (!created.token)
    throw new FaxgateError("API_BAD_RESPONSE", "the service created a key but did not return its token");
  const check = await opts.clientWithKey(created.token).me();
  if (check.userId !== me.userId) {
    await opts.admin.deleteApiKey(created.uuid).catch(() => {});
    throw new FaxgateError("API_BAD_RESPONSE", "the new key belongs to another user; it was deleted again");
  }
  return { userId: me.userId, oldKey, newKey: created as ApiKey & { token: string } };
}
