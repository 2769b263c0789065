// API keys (admin only): create (returns the token), update, list with their users, delete.
import { randomBytes, randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { AccessLevel } from "../types.js";
import { invalid, notFound } from "../api-error.js";
import { requireAccess } from "../auth.js";
import { userById, type Caller, type EmulatorContext } from "../context.js";
import type { KeyRow } from "../db.js";
import { checkMax, queryInput, readInput, type RequestInput } from "../request-input.js";
import { LIMITS } from "../send-spec.js";
import { renderKey } from "../shapes.js";

const LEVELS: AccessLevel[] = ["admin", "base", "print_driver"];

/** `access` (variant B) or `accessLevel` (variant A: a JSON object of flags, or a list). */
export function readAccess(input: RequestInput): AccessLevel | undefined {
  const access = input.one("access")?.trim();
  if (access) {
    if (!LEVELS.includes(access as AccessLevel)) throw invalid(`access must be one of ${LEVELS.join(", ")}`);
    return access as AccessLevel;
  }
  const raw = input.one("accessLevel")?.trim();
  if (!raw) return undefined;
  let parsed: unknown = raw;
  if (raw.startsWith("{") || raw.startsWith("[")) {
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw invalid('accessLevel must be a JSON object like {"base":false,"admin":false,"print_driver":true}');
    }
  }
  let chosen: string[];
  if (typeof parsed === "string") chosen = [parsed];
  else if (Array.isArray(parsed)) chosen = parsed.map(String);
  else if (parsed && typeof parsed === "object") {
    const obj = parsed as Record<string, unknown>;
    for (const k of Object.keys(obj))
      if (!LEVELS.includes(k as AccessLevel)) throw invalid(`accessLevel has an unknown level "${k.slice(0, 20)}"`);
    chosen = Object.entries(obj)
      .filter(([, v]) => v === true || v === "true" || v === 1)
      .map(([k]) => k);
  } else throw invalid("accessLevel must be a JSON object of flags");
  for (const c of chosen)
    if (!LEVELS.includes(c as AccessLevel)) throw invalid(`accessLevel has an unknown level "${c.slice(0, 20)}"`);
  if (chosen.length === 0) throw invalid("accessLevel must set one level to true");
  if (chosen.length > 1) throw invalid("accessLevel must set exactly one level to true");
  return chosen[0] as AccessLevel;
}

function readExpiry(input: RequestInput): number | null | undefined {
  if (!input.has("expiresAt")) return undefined;
  const v = input.one("expiresAt")?.trim() ?? "";
  if (v === "" || v === "null") return null;
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw invalid("expiresAt must be an ISO 8601 date-time");
  return t;
}

export function apiKeyRoutes(
  app: FastifyInstance,
  ctx: EmulatorContext,
  callerOf: (req: FastifyRequest) => Caller,
): void {
  const admin = (req: FastifyRequest) => {
    const c = callerOf(req);
    requireAccess(c, "admin");
    return c;
  };
  const render = (k: KeyRow) => renderKey(k, userById(ctx, k.userId), ctx.variant, true);

  app.post("/api-keys", async (req) => {
    const caller = admin(req);
    const input = await readInput(req, ctx.uploadDir, false);
    const row = createKey(ctx, caller, input);
    ctx.logger.info({ keyId: row.uuid, userId: row.userId, access: row.access }, "API key created");
    return render(row);
  });

  app.patch<{ Params: { id: string } }>("/api-keys/:id", async (req) => {
    const caller = admin(req);
    const input = await readInput(req, ctx.uploadDir, false);
    const key = keyIn(ctx, caller, req.params.id);
    const name = checkMax(input, "name", LIMITS.keyName);
    if (name !== undefined && name.trim() === "") throw invalid("name must not be empty");
    const access = readAccess(input);
    const expiresAt = readExpiry(input);
    const next: KeyRow = {
      ...key,
      name: name?.trim() ?? key.name,
      access: access ?? key.access,
      expiresAt: expiresAt === undefined ? key.expiresAt : expiresAt,
      updatedAt: ctx.clock.now(),
    };
    ctx.db
      .prepare(
        "UPDATE api_keys SET name = @name, access = @access, expiresAt = @expiresAt, updatedAt = @updatedAt WHERE uuid = @uuid",
      )
      .run(next);
    return render(next);
  });

  app.get("/api-keys", async (req) => {
    const caller = admin(req);
    const userId = queryInput(req).one("userId");
    const rows = (
      userId
        ? ctx.db
            .prepare("SELECT * FROM api_keys WHERE accountId = ? AND userId = ? ORDER BY createdAt, rowid")
            .all(caller.user.accountId, userId)
        : ctx.db
            .prepare("SELECT * FROM api_keys WHERE accountId = ? ORDER BY createdAt, rowid")
            .all(caller.user.accountId)
    ) as KeyRow[];
    return rows.map(render);
  });

  app.delete<{ Params: { id: string } }>("/api-keys/:id", async (req, reply) => {
    const caller = admin(req);
    const key = keyIn(ctx, caller, req.params.id);
    ctx.db.prepare("DELETE FROM api_keys WHERE uuid = ?").run(key.uuid);
    return reply.code(204).send();
  });
}

/** A new key for the user named by `userId` (default: the caller's), with its token. */
function createKey(ctx: EmulatorContext, caller: Caller, input: RequestInput): KeyRow {
  const name = checkMax(input, "name", LIMITS.keyName)?.trim();
  if (!name) throw invalid("name is required");
  const access = readAccess(input);
  if (!access) throw invalid("access (or accessLevel) is required");
  const userId = input.one("userId")?.trim() || caller.user.uuid;
  const user = userById(ctx, userId);
  if (!user || user.accountId !== caller.user.accountId) throw notFound(`user ${userId} not found`);
  const expiresAt = readExpiry(input) ?? null;
  const now = ctx.clock.now();
  const row: KeyRow = {
    uuid: randomUUID(),
    userId: user.uuid,
    accountId: user.accountId,
    name,
    token: randomBytes(24).toString("base64url"),
    access,
    expiresAt,
    createdAt: now,
    updatedAt: now,
  };
  ctx.db
    .prepare(
      "INSERT INTO api_keys (uuid, userId, accountId, name, token, access, expiresAt, createdAt, updatedAt) VALUES (@uuid, @userId, @accountId, @name, @token, @access, @expiresAt, @createdAt, @updatedAt)",
    )
    .run(row);
  return row;
}

/** A key of the caller's account. */
function keyIn(ctx: EmulatorContext, caller: Caller, id: string): KeyRow {
  const k = ctx.db.prepare("SELECT * FROM api_keys WHERE uuid = ? AND accountId = ?").get(id, caller.user.accountId) as
    | KeyRow
    | undefined;
  if (!k) throw notFound(`API key ${id} not found`);
  return k;
}
