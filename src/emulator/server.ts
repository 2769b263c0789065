// The HTTPS server: fastify with form, JSON and multipart bodies, faults and authentication in
// front of every service route, and errors in the service's {"error":{name,message}} shape.
import formbody from "@fastify/formbody";
import multipart from "@fastify/multipart";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import { ApiError } from "./api-error.js";
import { authenticate } from "./auth.js";
import type { Caller, EmulatorContext } from "./context.js";
import { apiKeyRoutes } from "./routes/api-keys.js";
import { basicRoutes } from "./routes/basic.js";
import { contactRoutes } from "./routes/contacts.js";
import { emulatorAdminRoutes } from "./routes/emulator-admin.js";
import { faxRoutes } from "./routes/faxes.js";
import { historyRoutes } from "./routes/history.js";
import { webhookRoutes } from "./routes/webhooks.js";

/** Default size bound of one uploaded file (bigger gets 413). */
export const MAX_FILE_BYTES = 100 * 1024 * 1024;

export async function buildServer(
  ctx: EmulatorContext,
  tls: { key: string; cert: string },
  maxFileBytes = MAX_FILE_BYTES,
): Promise<FastifyInstance> {
  const app = Fastify({
    https: { key: tls.key, cert: tls.cert },
    // the emulator logs its own events through ctx.logger; per-request lines are noise
    logger: false,
    bodyLimit: 2 * 1024 * 1024,
    forceCloseConnections: true,
  }) as unknown as FastifyInstance; // the HTTPS server type adds nothing the routes use
  await app.register(formbody);
  await app.register(multipart, {
    limits: { fileSize: maxFileBytes, files: 50, fields: 500, fieldSize: 1024 * 1024 },
    throwFileSizeLimit: true,
  });

  const callers = new WeakMap<FastifyRequest, Caller>();
  const callerOf = (req: FastifyRequest): Caller => {
    const c = callers.get(req);
    if (!c) throw new ApiError("AuthenticationError", "Authorization header required");
    return c;
  };

  guardRequests(app, ctx, callers);
  answerErrors(app, ctx);

  basicRoutes(app, ctx, callerOf);
  apiKeyRoutes(app, ctx, callerOf);
  contactRoutes(app, ctx, callerOf);
  faxRoutes(app, ctx, callerOf);
  historyRoutes(app, ctx, callerOf);
  emulatorAdminRoutes(app, ctx, callerOf);
  webhookRoutes(app, ctx, callerOf);
  return app;
}

/** Before every route: the faults (latency, 503, 429), the caller's key, the account's rate. */
function guardRequests(app: FastifyInstance, ctx: EmulatorContext, callers: WeakMap<FastifyRequest, Caller>): void {
  app.addHook("onRequest", async (req, reply) => {
    if (!req.url.startsWith("/_emulator/")) {
      const latency = ctx.faults.latencyMs();
      if (latency > 0) await new Promise((r) => setTimeout(r, latency));
      const fault = ctx.faults.beforeRequest();
      if (fault === "error") {
        return reply
          .code(503)
          .send(
            new ApiError("ServiceUnavailableError", "the service is temporarily unavailable (emulated fault)").body(),
          );
      }
      if (fault === "rateLimit") {
        return reply
          .code(429)
          .header("retry-after", String(ctx.faults.retryAfter()))
          .send(new ApiError("RateLimitError", "too many requests (emulated fault)").body());
      }
    }
    const caller = authenticate(ctx, req);
    callers.set(req, caller);
    // the account's rate, as the service counts it (behaviour.ratePerSecond; counted even when off)
    if (!req.url.startsWith("/_emulator/") && !req.url.startsWith("/ping")) {
      const { ratePerSecond } = ctx.behaviour;
      const waitMs = ctx.accountRate.take(caller.user.accountId, ratePerSecond, ctx.clock.now());
      if (waitMs !== null)
        throw new ApiError("RateLimitError", `at most ${ratePerSecond} calls a second`, Math.ceil(waitMs / 1000));
    }
  });
}

/** Errors in the service's {"error":{name,message}} shape; an unknown path is a NotFoundError. */
function answerErrors(app: FastifyInstance, ctx: EmulatorContext): void {
  app.setErrorHandler((err, req, reply) => {
    if (err instanceof ApiError) {
      if (err.retryAfter !== undefined) reply.header("retry-after", String(err.retryAfter));
      return reply.code(err.status).send(err.body());
    }
    const status = (err as { statusCode?: number }).statusCode ?? 500;
    if (status === 413 || /TOO_LARGE|LIMIT/.test((err as { code?: string }).code ?? "")) {
      return reply
        .code(413)
        .send(new ApiError("PayloadTooLargeError", "the request body is over the size limit").body());
    }
    if (status >= 400 && status < 500) {
      return reply.code(status).send({ error: { name: "InvalidInputError", message: (err as Error).message } });
    }
    ctx.logger.error({ err: err as Error, url: req.url.split("?")[0] }, "emulator internal error");
    return reply.code(500).send(new ApiError("InternalError", "internal error").body());
  });

  app.setNotFoundHandler((req, reply) => {
    reply
      .code(404)
      .send(new ApiError("NotFoundError", `no such endpoint: ${req.method} ${req.url.split("?")[0]}`).body());
  });
}
