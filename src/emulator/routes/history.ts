// GET /v1/fax/history: every documented filter, newest first. `offset` counts pages of `limit`
// records or records (the offsetMode switch); calls are limited per account and minute
// (historyPerMinute, 429 until the window resets, Retry-After only with historyRetryAfter).
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError, invalid, notAllowed } from "../api-error.js";
import { isAdmin, targetUser } from "../auth.js";
import type { Caller, EmulatorContext } from "../context.js";
import type { FaxRow } from "../db.js";
import { contactsOf, tagsOf } from "../fax-store.js";
import { STATUS_SQL } from "../lifecycle.js";
import { queryInput, type RequestInput } from "../request-input.js";
import { LIMITS } from "../send-spec.js";
import { renderFax } from "../shapes.js";
import { FAX_STATUSES } from "../types.js";

const DAY = 86_400_000;

function intParam(input: RequestInput, name: string, fallback: number, min: number, max: number): number {
  const v = input.one(name);
  if (v === undefined || v === "") return fallback;
  if (!/^\d+$/.test(v.trim())) throw invalid(`${name} must be a whole number`);
  const n = Number(v);
  if (n < min || n > max) throw invalid(`${name} must be between ${min} and ${max}`);
  return n;
}

function dateParam(input: RequestInput, name: string): number | null {
  const v = input.one(name)?.trim();
  if (!v) return null;
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(Date.parse(v))) throw invalid(`${name} must be a date, YYYY-MM-DD`);
  return Date.parse(v.length === 10 ? `${v}T00:00:00.000Z` : v);
}

export function historyRoutes(
  app: FastifyInstance,
  ctx: EmulatorContext,
  callerOf: (req: FastifyRequest) => Caller,
): void {
  app.get("/v1/fax/history", async (req) => {
    const caller = callerOf(req);
    chargeHistoryCall(ctx, caller);
    const q = queryInput(req);
    const { where, params } = historyFilter(ctx, caller, q);
    const limit = intParam(q, "limit", 50, 1, LIMITS.historyLimit);
    const offset = intParam(q, "offset", 0, 0, Number.MAX_SAFE_INTEGER);
    const include = new Set([...q.list("include"), ...q.list("includes")]);
    for (const i of include)
      if (i !== "tags" && i !== "contacts")
        throw invalid(`include takes tags and/or contacts, not "${i.slice(0, 20)}"`);

    const sqlWhere = where.join(" AND ");
    const count = (ctx.db.prepare(`SELECT COUNT(*) AS n FROM faxes WHERE ${sqlWhere}`).get(params) as { n: number }).n;
    const skip = ctx.behaviour.offsetMode === "pages" ? offset * limit : offset;
    const rows = (
      skip > Number.MAX_SAFE_INTEGER
        ? []
        : ctx.db
            .prepare(
              `SELECT * FROM faxes WHERE ${sqlWhere} ORDER BY createdAt DESC, messageNumber DESC LIMIT @limit OFFSET @skip`,
            )
            .all({ ...params, limit, skip })
    ) as FaxRow[];
    const now = ctx.clock.now();
    const out = rows.map((r) =>
      renderFax(r, now, {
        cfMode: ctx.behaviour.cfMode,
        tags: include.has("tags") ? tagsOf(ctx, r) : undefined,
        contacts: include.has("contacts") ? contactsOf(ctx, r) : undefined,
      }),
    );
    return ctx.variant === "a"
      ? { count, rows: out, limit, offset }
      : { count: String(count), rows: out, query: { limit, offset } };
  });
}

/** The account's history budget: a call past it is refused (429, Retry-After when the behaviour sends one). */
function chargeHistoryCall(ctx: EmulatorContext, caller: Caller): void {
  const { historyPerMinute, historyRetryAfter } = ctx.behaviour;
  const waitMs = ctx.historyBudget.take(caller.user.accountId, historyPerMinute, ctx.clock.now());
  if (waitMs === null) return;
  ctx.accountRate.historyRefused(caller.user.accountId);
  throw new ApiError(
    "RateLimitError",
    `fax history is limited to ${historyPerMinute} calls a minute`,
    historyRetryAfter ? Math.max(1, Math.ceil(waitMs / 1000)) : undefined,
  );
}

/** The WHERE clauses and their parameters for the history's filters (whose faxes, direction, status, dates, text, tags). */
function historyFilter(
  ctx: EmulatorContext,
  caller: Caller,
  q: RequestInput,
): { where: string[]; params: Record<string, unknown> } {
  const where: string[] = ["deletedAt IS NULL", "accountId = @accountId"];
  const params: Record<string, unknown> = { accountId: caller.user.accountId, now: ctx.clock.now() };
  const add = (clause: string, values: Record<string, unknown>) => {
    where.push(clause);
    Object.assign(params, values);
  };

  const accountId = q.one("accountId");
  if (accountId && accountId !== caller.user.accountId)
    throw notAllowed("accountId is not the account of this API key");
  const userId = q.one("userId");
  if (userId || !isAdmin(caller)) add("userId = @userId", { userId: targetUser(ctx, caller, userId).uuid });

  const direction = q.one("direction") ?? "all";
  if (!["all", "inbound", "outbound"].includes(direction)) throw invalid("direction must be all, inbound or outbound");
  if (direction !== "all") add("direction = @direction", { direction });
  const status = q.one("status") ?? "all";
  if (!["all", ...FAX_STATUSES].includes(status)) throw invalid(`status must be all, ${FAX_STATUSES.join(", ")}`);
  if (status !== "all") add(`(${STATUS_SQL}) = @status`, { status });
  const from = dateParam(q, "fromDate");
  if (from !== null) add("createdAt >= @from", { from });
  const to = dateParam(q, "toDate");
  // a bare date is the whole of that day
  if (to !== null) add("createdAt < @to", { to: (q.one("toDate") ?? "").trim().length === 10 ? to + DAY : to + 1 });
  const text = q.one("query")?.trim();
  if (text) {
    add(
      `(faxCsid LIKE @q ESCAPE '\\' OR faxCallerId LIKE @q ESCAPE '\\' OR faxNumber LIKE @q ESCAPE '\\' OR messageId LIKE @q ESCAPE '\\'
        OR CAST(messageNumber AS TEXT) LIKE @q ESCAPE '\\' OR subject LIKE @q ESCAPE '\\' OR recipientName LIKE @q ESCAPE '\\'${ctx.behaviour.cfMode === "kept" ? ` OR cfText LIKE @q ESCAPE '\\'` : ""})`,
      { q: `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%` },
    );
  }
  const tags = q.list("tags");
  if (tags.length) {
    add(
      `(${tags.map((_, i) => `tags LIKE @tag${i}`).join(" OR ")})`,
      Object.fromEntries(tags.map((t, i) => [`tag${i}`, `%"${t.replace(/[%_"]/g, "")}"%`])),
    );
  }
  if (q.has("isArchived") && q.one("isArchived") !== "")
    add("isArchived = @archived", { archived: q.bool("isArchived", false) ? 1 : 0 });
  return { where, params };
}
