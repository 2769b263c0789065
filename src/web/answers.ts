// How the console answers, whatever the route: security headers on every answer, and every
// refusal as `{"error", "code"}` with a 4xx status that names the reason (docs/console.md).
// Registered on the root instance, so every route group inherits it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { describeError, isFaxgateError } from "../errors.js";
import { BUSY_RETRY_SECONDS } from "../intake/index.js";
import type { Logger } from "../log/index.js";
import { csrfRefusal } from "./sessions.js";

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; worker-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cache-control": "no-store",
};

export function useAnswers(app: FastifyInstance, log: Logger): void {
  app.addHook("onSend", async (_req, reply, payload) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) if (!reply.hasHeader(k)) reply.header(k, v);
    return payload;
  });
  app.setErrorHandler((err, req, reply) => answerError(log, req, reply, err));
  app.setNotFoundHandler((_req, reply) => reply.code(404).send({ error: "not found" }));
}

/** The HTTP status of one of our errors. */
function statusOf(err: { code: string; httpStatus?: number }): number {
  if (err.httpStatus && err.httpStatus >= 400 && err.httpStatus < 500) return err.httpStatus;
  if (err.code === "JOB_NOT_FOUND") return 404;
  if (err.code === "JOB_STATE") return 409;
  if (err.code === "API_FORBIDDEN") return 403;
  if (err.code === "CONVERTER_BUSY" || err.code === "QUEUE_FULL") return 503;
  if (err.code.startsWith("API_")) return 502;
  return 400;
}

function answerError(log: Logger, req: FastifyRequest, reply: FastifyReply, err: unknown) {
  const user = req.session?.user;
  if (isFaxgateError(err)) {
    const status = statusOf(err);
    if (status !== 404) log.info({ user, url: req.url, code: err.code, status }, "WEB refused");
    // over a share (the user's API calls, their place in the conversion queue) or busy as a whole
    // (the queue or the converters full): when to come back
    if (status === 429 || status === 503)
      reply.header("retry-after", String(err.retryAfterSeconds ?? BUSY_RETRY_SECONDS));
    return reply.code(status).send({ error: err.message, code: err.code });
  }
  const e = err as { statusCode?: number; message?: string; code?: string };
  const csrf = csrfRefusal(e.code);
  if (csrf) {
    log.warn({ user, method: req.method, url: req.url, code: csrf.code }, "WEB refused: wrong CSRF token");
    return reply.code(403).send(csrf);
  }
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    return reply.code(e.statusCode).send({
      error:
        e.code === "FST_REQ_FILE_TOO_LARGE" || e.code === "FST_FILES_LIMIT"
          ? "upload too large or too many files"
          : (e.message ?? "bad request"),
    });
  }
  log.error({ user, url: req.url, err: describeError(err) }, "WEB request failed");
  return reply.code(500).send({ error: "the gateway could not do that; the log says why" });
}
