// Proves a key works: GET /v1/me answers with the key's user. `/ping` says nothing about the key
// (its body is not even documented), so readiness, `doctor` and the dispatcher's key hold ask this.
import { describeError, isFaxgateError } from "../errors.js";
import { FaxApiError } from "./api-error.js";
import type { FaxApi } from "./types.js";

export type KeyCheck =
  | { ok: true; userId: string; email: string }
  /** `refused`: the service said 401/403 (the key is wrong or revoked), not merely unreachable. */
  | { ok: false; refused: boolean; detail: string };

export function isKeyRefusal(err: unknown): boolean {
  return err instanceof FaxApiError && (err.code === "API_AUTH" || err.code === "API_FORBIDDEN");
}

/** The service does not show this object to this key: a 404, or a 403 refusing this one request. */
export function isNotShown(err: unknown): boolean {
  return isFaxgateError(err) && (err.code === "API_NOT_FOUND" || err.code === "API_FORBIDDEN");
}

/** A 401: the key itself is unknown or revoked (a 403 may refuse only one request). */
export function isUnauthorized(err: unknown): boolean {
  return err instanceof FaxApiError && err.code === "API_AUTH";
}

export async function checkKey(client: Pick<FaxApi, "me">): Promise<KeyCheck> {
  try {
    const me = await client.me();
    return { ok: true, userId: me.userId, email: me.email };
  } catch (err) {
    return { ok: false, refused: isKeyRefusal(err), detail: describeError(err) };
  }
}
