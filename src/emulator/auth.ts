// Who is calling: "Authorization: Basic <token>" names an API key; the key's access level decides
// what the call may do. The token is compared as sent; never logged.
import type { FastifyRequest } from "fastify";
import type { AccessLevel } from "./types.js";
import { ApiError, notAllowed } from "./api-error.js";
import type { Caller, EmulatorContext } from "./context.js";
import type { KeyRow, UserRow } from "./db.js";

export function authenticate(ctx: EmulatorContext, req: FastifyRequest): Caller {
  const header = req.headers.authorization;
  if (!header) throw new ApiError("AuthenticationError", "Authorization header required");
  const m = /^Basic\s+(.+)$/i.exec(header.trim());
  if (!m) throw new ApiError("AuthenticationError", 'Authorization must be "Basic <API key>"');
  const sent = m[1].trim();
  let key = findKey(ctx, sent);
  if (!key) {
    // some HTTP clients encode "token:" the RFC 7617 way; accept that too
    const decoded = Buffer.from(sent, "base64").toString("utf8");
    if (decoded.endsWith(":")) key = findKey(ctx, decoded.slice(0, -1));
  }
  if (!key) throw new ApiError("AuthenticationError", "Invalid API key");
  if (key.expiresAt !== null && key.expiresAt <= ctx.clock.now())
    throw new ApiError("AuthenticationError", "API key expired");
  const user = ctx.db.prepare("SELECT * FROM users WHERE uuid = ?").get(key.userId) as UserRow | undefined;
  if (!user) throw new ApiError("AuthenticationError", "Invalid API key");
  return { key, user };
}

function findKey(ctx: EmulatorContext, token: string): KeyRow | undefined {
  if (!token) return undefined;
  return ctx.db.prepare("SELECT * FROM api_keys WHERE token = ?").get(token) as KeyRow | undefined;
}

export function requireAccess(caller: Caller, ...levels: AccessLevel[]): void {
  if (!levels.includes(caller.key.access)) {
    throw notAllowed(
      `this API key (${caller.key.access}) may not make this call; it needs ${levels.join(" or ")} access`,
    );
  }
}

export function isAdmin(caller: Caller): boolean {
  return caller.key.access === "admin";
}

/**
 * The user a call acts for: the caller, or with `userId` another user of the account (admin only).
 */
export function targetUser(ctx: EmulatorContext, caller: Caller, userId: string | undefined): UserRow {
  if (!userId || userId === caller.user.uuid) return caller.user;
  if (!isAdmin(caller)) throw notAllowed("only an admin key may act for another user");
  const u = ctx.db.prepare("SELECT * FROM users WHERE uuid = ? AND accountId = ?").get(userId, caller.user.accountId) as
    | UserRow
    | undefined;
  if (!u) throw new ApiError("NotFoundError", `user ${userId} not found`);
  return u;
}
