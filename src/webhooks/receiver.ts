// The receiver for the fax service's webhook events (config key `webhooks`). The service POSTs a
// fax record when a fax reaches its final state: as JSON (the whole body, or under a wrapper
// object), or in the vendor's legacy multipart form (a `data` field with the JSON record and an
// `attachment` file, which is not kept). We check its Basic credentials (in constant time), hand
// the record to the dispatcher (outbound) or the inbound notifier (inbound), which treat it as a
// hint and ask the service for the fax itself, and answer 2xx as soon as it is applied. Anything we could not apply gets a 5xx, so the service
// sends it again; polling at a slow pace stays on as the safety net for events that never come.
import { createHash, timingSafeEqual } from "node:crypto";
import { EventEmitter } from "node:events";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import fastifyMultipart from "@fastify/multipart";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { parseHostPort, type WebhooksConfig } from "../config/index.js";
import { describeError } from "../errors.js";
import { toFaxRecord, type FaxRecord } from "../fax/index.js";
import { applyListenerLimits, descriptorBudget, serverOptions, type ListenerLimits } from "../listener-limits.js";
import type { Logger } from "../log/index.js";

export interface WebhookHandlers {
  /**
   * An outbound fax's record; true when it was a fax we follow, 'later' when it may become one in
   * a moment (a send still being recorded): the service is asked to send it again.
   */
  outbound(rec: FaxRecord): boolean | "later" | Promise<boolean | "later">;
  /** A received fax's record and the service user it arrived for (when the record names one). */
  inbound(rec: FaxRecord, serviceUserId: string | null): boolean | Promise<boolean>;
}

/** What the receiver did with one request, for tests and metrics. */
export interface WebhookOutcome {
  messageId: string;
  direction: "inbound" | "outbound";
  status: string;
  event: string | null;
  /** false: the record matched nothing we follow (acknowledged all the same) */
  applied: boolean;
  /** true: not applied yet and answered 503, so the service sends it again */
  retryLater?: boolean;
}

export interface WebhookReceiverOptions {
  config: WebhooksConfig;
  handlers: WebhookHandlers;
  logger: Logger;
  /** PEM certificate and key to serve https (else plain http: put it behind a TLS proxy) */
  tls?: { cert: string; key: string };
  /** connection caps and timeouts (default: a share of this process's descriptors) */
  limits?: ListenerLimits;
}

const digest = (s: string): Buffer => createHash("sha256").update(s).digest();

/** Constant-time check of an Authorization header against user:password. */
export function basicMatches(header: string | undefined, username: string, password: string): boolean {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? "");
  const given = m ? Buffer.from(m[1]!, "base64").toString("utf8") : "";
  // hashing first makes both sides the same length, so the comparison time says nothing
  return timingSafeEqual(digest(given), digest(`${username}:${password}`)) && m !== null;
}

/** Events: 'event' (WebhookOutcome) after a record was handled, 'refused' ({reason, status}) on a 4xx. */
export class WebhookReceiver extends EventEmitter {
  private app: FastifyInstance | null = null;
  private readonly path: string;
  private refusedLogged = 0;
  private refusedSince = 0;

  constructor(private readonly opts: WebhookReceiverOptions) {
    super();
    this.path = new URL(opts.config.url).pathname || "/";
  }

  async listen(): Promise<{ host: string; port: number }> {
    const { host, port } = parseHostPort(this.opts.config.listen, "webhooks.listen");
    // it faces the Internet: idle or slow connections are capped and cut (src/listener-limits.ts)
    const limits = this.opts.limits ?? descriptorBudget({ smtpConnections: 0 }).webhooks;
    const app = Fastify({
      logger: false,
      bodyLimit: 1024 * 1024,
      forceCloseConnections: true,
      ...serverOptions(limits, this.opts.tls),
    }) as unknown as FastifyInstance;
    applyListenerLimits(app, limits, { logger: this.opts.logger });
    // the legacy format's attachment is read through and dropped: the fax is fetched from the service
    // JSON and multipart only: anything else is a 415 that says so
    app.removeContentTypeParser("text/plain");
    await app.register(fastifyMultipart, {
      limits: { fields: 20, fieldSize: 1024 * 1024, files: 4, fileSize: 64 * 1024 * 1024, parts: 30 },
    });
    // a body that is not JSON is refused by name, not taken for our own failure
    app.setErrorHandler((err, _req, reply) => {
      const status = (err as { statusCode?: number }).statusCode ?? 500;
      if (status >= 500) this.opts.logger.error({ err: describeError(err) }, "webhook receiver error");
      const reason =
        status === 413
          ? "the event is over 1 MiB"
          : status === 415
            ? "the event is neither JSON nor multipart/form-data (the two formats the service posts)"
            : status < 500
              ? `the event is not a JSON fax record: ${(err as Error).message}`
              : "internal error";
      if (status < 500) this.emit("refused", { reason, status });
      return reply.code(status).send({ error: reason });
    });
    app.post(this.path, (req, reply) => this.handle(req, reply));
    app.setNotFoundHandler((_req, reply) => reply.code(404).send({ error: "not found" }));
    await app.listen({ host, port });
    this.app = app;
    const addr = app.server.address() as AddressInfo;
    this.opts.logger.info(
      { listen: `${addr.address}:${addr.port}`, path: this.path, tls: !!this.opts.tls },
      "webhook receiver listening",
    );
    return { host: addr.address, port: addr.port };
  }

  async close(): Promise<void> {
    const app = this.app;
    this.app = null;
    await app?.close();
  }

  private refuse(reply: FastifyReply, status: number, reason: string, req: FastifyRequest): FastifyReply {
    // one line for the first refusal and then one a minute with the count: a scanner cannot flood the log
    const now = Date.now();
    this.refusedLogged += 1;
    if (this.refusedLogged === 1 || now - this.refusedSince >= 60_000) {
      this.opts.logger.warn({ remote: req.ip, reason, refused: this.refusedLogged }, "webhook refused");
      this.refusedSince = now;
      this.refusedLogged = 0;
    }
    this.emit("refused", { reason, status });
    if (status === 401) reply.header("www-authenticate", 'Basic realm="faxgate webhooks"');
    return reply.code(status).send({ error: reason });
  }

  private async handle(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const { username, password } = this.opts.config;
    if (!basicMatches(req.headers.authorization, username, password)) {
      return this.refuse(reply, 401, req.headers.authorization ? "wrong credentials" : "no credentials", req);
    }
    let rec: FaxRecord;
    let body: Record<string, unknown> | null;
    try {
      body = req.isMultipart() ? await legacyBody(req) : (req.body as Record<string, unknown> | null);
      rec = toFaxRecord(unwrapRecord(body));
    } catch (err) {
      return this.refuse(reply, 400, `not a fax record: ${describeError(err)}`, req);
    }
    const named = req.headers["x-webhook-event"] ?? body?.event ?? body?.eventName ?? body?.type;
    const event = typeof named === "string" ? named : null;
    const direction = rec.direction === "inbound" || (event ?? "").includes(".inbound.") ? "inbound" : "outbound";
    try {
      const result =
        direction === "inbound"
          ? await this.opts.handlers.inbound(rec, serviceUserOf(body, rec))
          : await this.opts.handlers.outbound(rec);
      const retryLater = result === "later";
      const outcome: WebhookOutcome = {
        messageId: rec.messageId,
        direction,
        status: rec.status,
        event,
        applied: result === true,
        ...(retryLater ? { retryLater } : {}),
      };
      this.opts.logger.info(
        outcome,
        retryLater ? "webhook event for a fax not recorded yet; asked to send it again" : "webhook event",
      );
      this.emit("event", outcome);
      if (retryLater) return reply.code(503).send({ error: "this fax is not recorded here yet; send the event again" });
      return reply.code(200).send({ ok: true });
    } catch (err) {
      // our own trouble: a 5xx makes the service send the event again later
      this.opts.logger.error(
        { messageId: rec.messageId, err: describeError(err) },
        "webhook event could not be applied; the service will send it again",
      );
      return reply.code(503).send({ error: "temporarily unable to apply the event" });
    }
  }
}

/** The legacy multipart body: its `data` field's JSON (the attachment is drained, not kept). */
async function legacyBody(req: FastifyRequest): Promise<Record<string, unknown> | null> {
  let data: unknown = null;
  for await (const part of req.parts()) {
    if (part.type === "file") part.file.resume();
    else if (part.fieldname === "data") data = JSON.parse(String(part.value)) as unknown;
  }
  if (data === null) throw new Error('a multipart event without a "data" field (the JSON fax record)');
  return data as Record<string, unknown>;
}

const WRAPPERS = ["data", "fax", "record", "payload", "object", "body"];

/** The fax record: the body itself, or an object under a wrapper ({"event": ..., "data": {...}}). */
export function unwrapRecord(body: unknown, depth = 0): unknown {
  if (!body || typeof body !== "object" || Array.isArray(body)) return body;
  const o = body as Record<string, unknown>;
  if (typeof o.messageId === "string" || depth >= 2) return o;
  for (const k of [...WRAPPERS, ...Object.keys(o)]) {
    const inner = o[k];
    if (inner && typeof inner === "object" && !Array.isArray(inner)) {
      const found = unwrapRecord(inner, depth + 1) as Record<string, unknown>;
      if (typeof found?.messageId === "string") return found;
    }
  }
  return o;
}

/** The service user a received fax arrived for: named by the record or its wrapper. */
function serviceUserOf(body: Record<string, unknown> | null, rec: FaxRecord): string | null {
  const r = rec as unknown as Record<string, unknown>;
  for (const v of [r.userId, body?.userId]) if (typeof v === "string" && v) return v;
  return null;
}

/** The receiver's TLS files from the config, read once at start. */
export function readReceiverTls(
  tls: { cert: string; key: string } | undefined,
): { cert: string; key: string } | undefined {
  if (!tls) return undefined;
  return { cert: readFileSync(tls.cert, "utf8"), key: readFileSync(tls.key, "utf8") };
}
