// GET /ping, GET /v1/me, GET /coverpages.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { account, type Caller, type EmulatorContext } from "../context.js";
import type { CoverPageRow } from "../db.js";
import { renderUser } from "../shapes.js";

export function basicRoutes(
  app: FastifyInstance,
  ctx: EmulatorContext,
  callerOf: (req: FastifyRequest) => Caller,
): void {
  // the real service answers a plain-text OK
  app.get("/ping", async (req, reply) => {
    callerOf(req);
    return reply.type("text/plain; charset=utf-8").send("OK");
  });

  app.get("/v1/me", async (req) => renderUser(callerOf(req).user, account(ctx), ctx.variant));

  app.get("/coverpages", async (req) => {
    callerOf(req);
    const rows = ctx.db
      .prepare("SELECT * FROM cover_pages WHERE accountId = ? ORDER BY isDefault DESC, name")
      .all(ctx.accountId) as CoverPageRow[];
    return rows.map((c) => ({
      uuid: c.uuid,
      name: c.name,
      isDefault: c.isDefault === 1,
      createdAt: new Date(c.createdAt).toISOString(),
    }));
  });
}
