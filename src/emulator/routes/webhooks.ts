// Webhooks (admin key): POST/GET/PUT/DELETE /webhooks. Bodies are JSON or form fields: name, url,
// events (flags), auth "user:pass", accountId (the caller's account), numberId, attachmentEnabled.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { invalid, notAllowed } from "../api-error.js";
import { requireAccess } from "../auth.js";
import type { Caller, EmulatorContext } from "../context.js";
import { renderWebhook } from "../webhooks.js";

function bodyOf(req: FastifyRequest, caller: Caller): Record<string, unknown> {
  const body = req.body ?? {};
  if (typeof body !== "object" || Array.isArray(body)) throw invalid("send a JSON object or form fields");
  const b = body as Record<string, unknown>;
  if (b.accountId !== undefined && b.accountId !== caller.user.accountId)
    throw notAllowed("accountId is not the account of this API key");
  const { accountId: _ignored, ...rest } = b;
  return rest;
}

export function webhookRoutes(
  app: FastifyInstance,
  ctx: EmulatorContext,
  callerOf: (req: FastifyRequest) => Caller,
): void {
  const admin = (req: FastifyRequest) => {
    const c = callerOf(req);
    requireAccess(c, "admin");
    return c;
  };

  app.post("/webhooks", async (req) => {
    const c = admin(req);
    return renderWebhook(ctx.webhooks.create(c.user.accountId, bodyOf(req, c)));
  });

  app.get("/webhooks", async (req) => {
    const c = admin(req);
    return ctx.webhooks.list(c.user.accountId).map(renderWebhook);
  });

  app.get<{ Params: { id: string } }>("/webhooks/:id", async (req) => {
    const c = admin(req);
    return renderWebhook(ctx.webhooks.get(c.user.accountId, req.params.id));
  });

  app.put<{ Params: { id: string } }>("/webhooks/:id", async (req) => {
    const c = admin(req);
    return renderWebhook(ctx.webhooks.update(c.user.accountId, req.params.id, bodyOf(req, c)));
  });

  app.delete<{ Params: { id: string } }>("/webhooks/:id", async (req, reply) => {
    const c = admin(req);
    ctx.webhooks.remove(c.user.accountId, req.params.id);
    return reply.code(204).send();
  });
}
