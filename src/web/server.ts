// The web console (docs/console.md): each user's own faxes and, for `role: admin`, the queue.
// Served by the daemon on `web.listen`. Sign-in is the SMTP AUTH password (users[].password) with
// the same lockout; a server-side session lives behind an httpOnly, SameSite=Strict cookie; every
// state-changing call carries the session's CSRF token in X-CSRF-Token. Another user's job answers
// exactly as a job that does not exist (404), so ids cannot be probed.
import { mkdir, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createWriteStream } from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import fastifyFormbody from "@fastify/formbody";
import fastifyMultipart from "@fastify/multipart";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { systemClock, type Clock } from "../clock.js";
import type { InboundConfig, PartialMode, UserConfig, WebConfig } from "../config/schema.js";
import { groupsOf, registerSharedInbox } from "./shared-inbox.js";
import { registerReceivedPage } from "./received-page.js";
import { faxNumber } from "../format.js";
import { describeError, FaxgateError, isFaxgateError } from "../errors.js";
import type { FaxApi } from "../fax/types.js";
import type { DestinationCheck } from "../intake/recipients/destination-policy.js";
import { acceptForm, newFaxDocuments, newFaxRecipients } from "../intake/new-fax.js";
import type { DocumentConverter } from "../intake/office/convert-queue.js";
import { applyListenerLimits, descriptorBudget, serverOptions, type ListenerLimits } from "../listener-limits.js";
import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { AuthLockout } from "../auth/auth-lockout.js";
import { buildBlockList, inList } from "../auth/client-address.js";
import { verifySignIn } from "../auth/password.js";
import { RateLimiter } from "../auth/rate-limit.js";
import { refuseControlCharacters } from "../store/text-input.js";
import type { Job, LeftOut, NewDocument, NewRecipient } from "../store/types.js";
import { contentDisposition } from "../content-disposition.js";
import { jobJson, needsNumber } from "../job-json.js";
import { waitsForAddress } from "../store/job-state.js";
import { originIsHost } from "../url-check.js";
import { addressingRoutes } from "./addressing.js";
import { confirmationView, confirmingRoutes } from "./confirming.js";
import { jobReport, reportFileName } from "../notify/job-report.js";
import { LiveUpdates } from "./live.js";
import type { OperatorPages } from "./operator.js";
import { QueueView, type ConsoleStore } from "./queue-view.js";
import { cookieValue, sameToken, Sessions, type Session } from "./sessions.js";
import { loadStaticFiles } from "./static-files.js";

export const SESSION_COOKIE = "faxgate_session";
const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; worker-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cache-control": "no-store",
};
const MAX_FILES = 20;
// failed sign-ins to one account within the lockout window, over all addresses: guesses spread
// over many addresses (or forged ones) stop here; an address alone stops at 10
export const MAX_ACCOUNT_AUTH_FAILURES = 20;
// calls of the account's history budget the console leaves to status polling and reconciliation
const HISTORY_RESERVE = 3;

export interface WebConsoleDeps {
  config: WebConfig;
  /** certificate and key (PEM text), read from web.tls */
  tls?: { cert: string; key: string };
  store: ConsoleStore;
  users: () => readonly UserConfig[];
  clientFor: (user: string) => FaxApi;
  destinations: DestinationCheck;
  defaultCountryCode: () => string;
  /** smtp.senderAuth.confirmHours: how long a fax to a new number waits for its owner */
  confirmHours: () => number;
  /** intake.partial: a file that cannot be faxed refuses the fax (default) or is sent without */
  partial?: () => PartialMode;
  office: DocumentConverter;
  dataDir: string;
  logger: Logger;
  clock?: Clock;
  metrics?: Metrics;
  /** what the operator's page shows (queue, refusals, service); absent: no operator page */
  operator?: OperatorPages;
  /** largest upload, bytes (default 50 MB) */
  maxUploadBytes?: number;
  /** pause after a wrong password, times the failures so far (default 1000 ms) */
  authFailureDelayMs?: number;
  /** whether the account's history budget has room now (received faxes are not fetched when not) */
  historyAvailable?: (reserve: number) => boolean;
  /** the shared inbox's groups (inbound.groups); absent: no inbox */
  inbound?: () => InboundConfig;
  /** new faxes per user per minute, as smtp.maxMessagesPerMinute (default 60) */
  faxesPerMinute?: number;
  /** connection caps and timeouts (default: a share of this process's descriptors) */
  limits?: ListenerLimits;
}

type Authed = FastifyRequest & { session: Session };

export class WebConsole {
  private readonly app: FastifyInstance;
  private readonly sessions: Sessions;
  private readonly lockout: AuthLockout;
  private readonly accountLockout: AuthLockout;
  private readonly rate: RateLimiter;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly view: QueueView;
  private readonly live: LiveUpdates;
  private readonly inboundCache = new Map<string, { value: unknown }>();

  constructor(private readonly deps: WebConsoleDeps) {
    this.clock = deps.clock ?? systemClock;
    this.log = deps.logger;
    this.sessions = new Sessions(this.clock, deps.config.sessionHours * 3_600_000);
    this.lockout = new AuthLockout(this.clock);
    this.accountLockout = new AuthLockout(this.clock, MAX_ACCOUNT_AUTH_FAILURES);
    this.rate = new RateLimiter(deps.faxesPerMinute ?? 60, this.clock);
    this.view = new QueueView(deps.store);
    this.live = new LiveUpdates({
      view: this.view,
      intervalMs: deps.config.livePollMs,
      clock: this.clock,
      logger: this.log,
      session: (id) => this.sessions.get(id),
    });
    const limits = deps.limits ?? descriptorBudget({ smtpConnections: 0 }).web;
    this.app = Fastify({
      logger: false,
      ...serverOptions(limits, deps.tls ? { cert: deps.tls.cert, key: deps.tls.key } : undefined),
      bodyLimit: 1_048_576,
      // behind a proxy every sign-in would come from the proxy's address: believe only the named
      // ones, and of their X-Forwarded-For only the last hop, the one the proxy itself appended;
      // anything left of it was written by the client (fastify calls this with hop 0 = the socket)
      trustProxy: proxyTrust(deps.config.trustedProxies),
      // a job id or a contact id never needs more
      routerOptions: { maxParamLength: 200 },
    }) as unknown as FastifyInstance;
    // idle sockets cannot take the process's descriptors; a trusted proxy carries everyone's, so
    // only the listener's own cap applies to it
    const proxies = deps.config.trustedProxies?.length ? buildBlockList(deps.config.trustedProxies) : null;
    applyListenerLimits(this.app, limits, {
      logger: this.log,
      exempt: proxies ? (a) => inList(proxies, a) : undefined,
    });
    this.routes();
  }

  /** Binds to web.listen; answers the address (port 0 picks a free one). */
  async listen(): Promise<{ host: string; port: number }> {
    const m = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d+)$/.exec(this.deps.config.listen)!;
    const host = (m[1] ?? m[2])!;
    await this.app.listen({ host, port: Number(m[3]) });
    const addr = this.app.server.address();
    const port = typeof addr === "object" && addr ? addr.port : Number(m[3]);
    this.log.info({ host, port, tls: Boolean(this.deps.tls) }, "web console listening");
    return { host, port };
  }

  async close(): Promise<void> {
    this.live.stop();
    await this.app.close();
  }

  /** After a reload: sessions of removed users (or of a lost admin role) end. */
  updateUsers(users: readonly UserConfig[]): void {
    this.sessions.keepOnly((s) => {
      const u = users.find((x) => x.name === s.user);
      return Boolean(u?.password) && (u!.role === "admin") === s.admin;
    });
    this.live.recheck();
  }

  private routes(): void {
    const app = this.app;
    const files = loadStaticFiles();
    app.register(fastifyFormbody);
    app.register(fastifyMultipart, {
      limits: { fileSize: this.deps.maxUploadBytes ?? 52_428_800, files: MAX_FILES, fields: 40, fieldSize: 10_000 },
    });

    app.addHook("onSend", async (_req, reply, payload) => {
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) if (!reply.hasHeader(k)) reply.header(k, v);
      return payload;
    });
    app.setErrorHandler((err, req, reply) => this.answerError(req, reply, err));
    app.setNotFoundHandler((_req, reply) => reply.code(404).send({ error: "not found" }));

    // ---- pages (no session needed to load them; their data needs one)
    const page = (url: string, file: string) =>
      app.get(url, async (_req, reply) => {
        const f = files.get(file);
        if (!f) return reply.code(404).send({ error: "not found" });
        return reply.type(f.type).send(f.body);
      });
    page("/", "/index.html");
    for (const url of files.keys()) page(url, url);

    // ---- sign-in
    app.post("/login", async (req, reply) => this.login(req, reply));
    app.post("/logout", async (req, reply) => {
      const s = this.sessionOf(req);
      if (s && this.csrfOk(req, s)) {
        this.sessions.end(s.id);
        this.live.recheck();
        this.log.info({ user: s.user }, "WEB signed out");
      }
      reply.header("set-cookie", this.cookie("", 0));
      return { ok: true };
    });

    // ---- the API: a session on every call, the CSRF token on every state-changing one
    app.register(async (api) => {
      api.addHook("onRequest", async (req, reply) => {
        const s = this.sessionOf(req);
        if (!s) return reply.code(401).send({ error: "sign in first (POST /login)" });
        if (req.method !== "GET" && req.method !== "HEAD" && !this.csrfOk(req, s)) {
          this.log.warn({ user: s.user, method: req.method, url: req.url }, "WEB refused: missing or wrong CSRF token");
          return reply.code(403).send({
            error: "missing or wrong X-CSRF-Token header (the csrfToken from POST /login or GET /api/session)",
          });
        }
        (req as Authed).session = s;
      });

      api.get("/api/session", async (req) => {
        const s = (req as Authed).session;
        const inbox = this.deps.inbound ? groupsOf(this.deps.inbound(), s.user) : [];
        return { user: s.user, admin: s.admin, csrfToken: s.csrfToken, inbox };
      });

      if (this.deps.inbound) {
        registerSharedInbox(api, {
          store: this.deps.store,
          inbound: this.deps.inbound,
          users: this.deps.users,
          logger: this.log,
          submitFax: async (s, to, documents, origin) =>
            this.submit(s, {
              recipients: await this.recipientsOf(s, to),
              documents,
              cover: { enabled: false },
              origin,
            }),
          poke: () => this.live.poke(),
        });
      }

      registerReceivedPage(api, {
        store: this.deps.store,
        inbound: this.deps.inbound,
        users: this.deps.users,
        defaultCountryCode: this.deps.defaultCountryCode,
        logger: this.log,
      });

      api.get("/api/jobs", async (req, reply) => {
        const s = (req as Authed).session;
        const q = req.query as Record<string, string | undefined>;
        const limit = clampInt(q.limit, 1, 200, 25);
        const offset = clampInt(q.offset, 0, 1_000_000, 0);
        refuseControlCharacters("search", q.search);
        const search = q.search?.trim().slice(0, 100) || undefined;
        const everyone = s.admin && q.all === "1";
        const { jobs, total } = await this.view.page({ user: everyone ? undefined : s.user, search, limit, offset });
        reply.header("x-total-count", String(total));
        return jobs.map((j) => publicJob(j, this.clock.now()));
      });

      api.get("/api/jobs/:id", async (req) => {
        const job = await this.ownJob(req);
        return { ...publicJob(job, this.clock.now()), timeline: await this.view.events(job) };
      });

      api.get("/api/jobs/:id/documents/:n", async (req, reply) => {
        const job = await this.ownJob(req);
        const n = Number((req.params as { n: string }).n);
        const doc = Number.isInteger(n) ? job.documents[n] : undefined;
        if (!doc) return reply.code(404).send({ error: "no such document" });
        const body = await this.view.readDocument(doc);
        const q = req.query as Record<string, string | undefined>;
        return reply
          .type(doc.contentType)
          .header("content-disposition", contentDisposition(q.download === "1" ? "attachment" : "inline", doc.name))
          .send(body);
      });

      api.get("/api/jobs/:id/report", async (req, reply) => {
        const s = (req as Authed).session;
        const job = await this.ownJob(req);
        const me = await this.deps
          .clientFor(job.user)
          .me()
          .catch(() => null);
        const pdf = await jobReport({
          store: this.view,
          job,
          user: this.deps.users().find((u) => u.name === job.user),
          me,
          now: new Date(this.clock.now()),
          defaultCountryCode: this.deps.defaultCountryCode(),
        });
        this.log.info({ user: s.user, job: job.id }, "WEB transmission report");
        const q = req.query as Record<string, string | undefined>;
        return reply
          .type("application/pdf")
          .header(
            "content-disposition",
            `${q.download === "1" ? "attachment" : "inline"}; filename="${reportFileName(job)}"`,
          )
          .send(Buffer.from(pdf));
      });

      for (const op of ["cancel", "hold", "release", "retry"] as const) {
        api.post(`/api/jobs/:id/${op}`, async (req) => {
          const s = (req as Authed).session;
          const job = await this.ownJob(req);
          if (op === "retry" && !s.admin)
            throw new FaxgateError("JOB_STATE", "only an operator can retry a job; resend it instead");
          // a print waiting for its number is "held" in the store, but only a number sends it
          if (op !== "cancel" && waitsForAddress(job))
            throw new FaxgateError("JOB_STATE", `job ${job.id} ${needsNumber(job)} (${op} does not apply)`);
          // the timeline names who cancelled: the owner, or an operator by name
          const after =
            op === "cancel"
              ? await this.deps.store.cancel(job.id, job.user === s.user ? s.user : `${s.user}, an operator`)
              : await this.deps.store[op](job.id);
          this.log.info({ user: s.user, job: job.id, action: op, state: after.state }, `WEB ${op}`);
          this.live.poke();
          return publicJob(after, this.clock.now());
        });
      }

      api.post("/api/jobs/:id/resend", async (req) => {
        const s = (req as Authed).session;
        const job = await this.ownJob(req);
        const body = (req.body ?? {}) as Record<string, unknown>;
        const to = toList(body.to);
        const numbers = to.length ? to : job.recipients.map((r) => r.number);
        const documents: NewDocument[] = [];
        for (const d of job.documents)
          documents.push({
            path: d.path,
            name: d.name,
            contentType: d.contentType,
            data: await this.view.readDocument(d),
          });
        const created = await this.submit(s, {
          recipients: await this.recipientsOf(s, numbers),
          documents,
          cover: job.cover,
          origin: { via: "web console", resendOf: job.id },
        });
        return publicJob(created, this.clock.now());
      });

      api.post("/api/faxes", async (req) => this.newFax(req as Authed));

      addressingRoutes(api as unknown as FastifyInstance, {
        store: this.deps.store,
        clientFor: this.deps.clientFor,
        destinations: this.deps.destinations,
        defaultCountryCode: this.deps.defaultCountryCode,
        logger: this.log,
        clock: this.clock,
        ownJob: (req) => this.ownJob(req),
        mayQueue: (user) => this.rate.take(user),
        changed: () => this.live.poke(),
        confirmationView: (job) => confirmationView(job, this.clock, this.deps.confirmHours()),
      });
      confirmingRoutes(api as unknown as FastifyInstance, {
        store: this.deps.store,
        logger: this.log,
        clock: this.clock,
        confirmHours: this.deps.confirmHours,
        ownJob: (req) => this.ownJob(req),
        changed: () => this.live.poke(),
      });

      api.get("/api/inbound", async (req, reply) => {
        const s = (req as Authed).session;
        const q = req.query as Record<string, string | undefined>;
        const limit = clampInt(q.limit, 1, 100, 25);
        const offset = clampInt(q.offset, 0, 100_000, 0);
        // history calls share the account's small budget with status polling: the console asks
        // only while a few calls are left for the dispatcher, else shows its last answer
        const key = `${s.user}:${limit}:${offset}`;
        const cached = this.inboundCache.get(key);
        if (this.deps.historyAvailable && !this.deps.historyAvailable(HISTORY_RESERVE)) {
          if (cached) return cached.value;
          return reply.code(503).send({
            error: "the fax service's history is rate-limited just now; received faxes show again in a minute",
          });
        }
        const page = await this.deps.clientFor(s.user).history({ direction: "inbound", limit, offset });
        const value = {
          total: page.count,
          faxes: page.rows.map((r) => ({
            messageId: r.messageId,
            from: faxNumber(r.faxCallerId, this.deps.defaultCountryCode()) ?? r.faxCsid ?? null,
            to: faxNumber(r.faxNumber, this.deps.defaultCountryCode()),
            status: r.status,
            pages: r.pagesCount ?? null,
            receivedAt: r.createdAt ?? null,
          })),
        };
        this.inboundCache.delete(key);
        this.inboundCache.set(key, { value });
        if (this.inboundCache.size > 1000) this.inboundCache.delete(this.inboundCache.keys().next().value!);
        return value;
      });

      api.get("/api/inbound/:messageId/pdf", async (req, reply) => {
        const s = (req as Authed).session;
        const id = (req.params as { messageId: string }).messageId;
        if (!/^[A-Za-z0-9_-]{1,100}$/.test(id)) return reply.code(404).send({ error: "no such fax" });
        const dir = await mkdtemp(path.join(await this.scratch(), "in-"));
        try {
          const file = path.join(dir, "fax.pdf");
          // the user's own key: the service answers only for their own faxes
          try {
            await this.deps.clientFor(s.user).downloadFax(id, file);
          } catch (err) {
            if (isFaxgateError(err) && (err.code === "API_NOT_FOUND" || err.code === "API_FORBIDDEN"))
              return reply.code(404).send({ error: "no such fax" });
            throw err;
          }
          const body = await readFile(file);
          this.log.info({ user: s.user, messageId: id }, "WEB downloaded an inbound fax");
          const q = req.query as Record<string, string | undefined>;
          return reply
            .type("application/pdf")
            .header(
              "content-disposition",
              contentDisposition(q.download === "1" ? "attachment" : "inline", `fax-${id}.pdf`),
            )
            .send(body);
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      });

      api.get("/api/contacts", async (req) => {
        const s = (req as Authed).session;
        const q = req.query as Record<string, string | undefined>;
        const page = await this.deps
          .clientFor(s.user)
          .listContacts({ limit: 100, query: q.search?.slice(0, 100) || undefined });
        const flat = page.rows.flatMap((c) => [c, ...(c.contacts ?? [])]);
        return flat.map((c) => ({
          id: c.uuid,
          name: c.name,
          faxNumber: faxNumber(c.faxNumber, this.deps.defaultCountryCode()) ?? c.faxNumber,
          email: c.email,
          organization: c.isOrganization,
          public: c.isPublic,
        }));
      });

      api.post("/api/contacts", async (req, reply) => {
        const s = (req as Authed).session;
        const body = (req.body ?? {}) as Record<string, unknown>;
        const name = typeof body.name === "string" ? body.name.trim().slice(0, 200) : "";
        const faxNumber = typeof body.faxNumber === "string" ? body.faxNumber.trim().slice(0, 40) : "";
        if (!name || !faxNumber) return reply.code(400).send({ error: "a contact needs a name and a fax number" });
        const c = await this.deps.clientFor(s.user).createContact({
          name,
          faxNumber,
          email: typeof body.email === "string" && body.email ? body.email : undefined,
        });
        this.log.info({ user: s.user, contact: c.uuid }, "WEB created a contact");
        return { id: c.uuid, name: c.name, faxNumber: c.faxNumber, email: c.email };
      });

      api.get("/api/events", async (req, reply) => this.live.serve(req, reply, (req as Authed).session));

      api.get("/api/admin/overview", async (req, reply) => {
        const s = (req as Authed).session;
        if (!s.admin || !this.deps.operator) return reply.code(404).send({ error: "not found" });
        return this.deps.operator.overview(this.clock.now());
      });
    });
  }

  // ---------------------------------------------------------------- sign-in

  private async login(req: FastifyRequest, reply: FastifyReply) {
    const origin = req.headers.origin;
    if (origin && !originIsHost(origin, req.headers.host))
      return reply.code(403).send({ error: "sign-in from another site refused" });
    const body = (req.body ?? {}) as Record<string, unknown>;
    const name = typeof body.user === "string" ? body.user.slice(0, 64) : "";
    const password = typeof body.password === "string" ? body.password.slice(0, 1024) : "";
    const client = req.ip;
    const attempt = this.lockout.begin(client);
    if (!attempt) {
      this.log.warn(
        { remote: client, user: this.knownName(name) },
        "WEB sign-in refused: too many failures from this address",
      );
      return reply.code(429).send({ error: "too many failed sign-ins from your address; try again in 15 minutes" });
    }
    // every name counts, configured or not: the answer must not tell which accounts exist
    const forAccount = this.accountLockout.begin(name);
    if (!forAccount) {
      attempt.succeeded(); // not a guess: the password was never looked at
      this.log.warn(
        { remote: client, user: this.knownName(name) },
        "WEB sign-in refused: too many failures for this account",
      );
      return reply.code(429).send({ error: "too many failed sign-ins for this account; try again in 15 minutes" });
    }
    const user = this.deps.users().find((u) => u.name === name);
    const ok = await verifySignIn(password, user?.password);
    if (!ok || !user) {
      forAccount.failed();
      const failures = attempt.failed();
      // the admin's hint goes to the log; the person signing in is told only that it did not work
      const noPassword = user !== undefined && !user.password;
      this.log.warn(
        {
          remote: client,
          user: this.knownName(name),
          failures,
          ...(noPassword ? { why: "no password set: faxgate passwd" } : {}),
        },
        "WEB sign-in failed",
      );
      await new Promise((r) => setTimeout(r, (this.deps.authFailureDelayMs ?? 1000) * Math.min(failures, 5)));
      return reply.code(401).send({
        error: "wrong user name or password",
      });
    }
    attempt.succeeded();
    forAccount.succeeded();
    const s = this.sessions.create(user.name, user.role === "admin");
    this.log.info({ remote: client, user: user.name, admin: s.admin }, "WEB signed in");
    reply.header("set-cookie", this.cookie(s.id, Math.floor(this.deps.config.sessionHours * 3600)));
    return { user: s.user, admin: s.admin, csrfToken: s.csrfToken };
  }

  /** A user name for the log only when it is a configured one: a password typed into the name field stays out. */
  private knownName(name: string): string {
    return this.deps.users().some((u) => u.name === name) ? name : "(not a configured user)";
  }

  private cookie(value: string, maxAgeSeconds: number): string {
    return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${this.deps.tls ? "; Secure" : ""}`;
  }

  private sessionOf(req: FastifyRequest): Session | null {
    return this.sessions.get(cookieValue(req.headers.cookie, SESSION_COOKIE));
  }

  private csrfOk(req: FastifyRequest, s: Session): boolean {
    const h = req.headers["x-csrf-token"];
    return sameToken(Array.isArray(h) ? h[0] : h, s.csrfToken);
  }

  // ---------------------------------------------------------------- jobs

  /** The job named in the URL if the user may see it; otherwise the same 404 as for no job. */
  private async ownJob(req: FastifyRequest): Promise<Job> {
    const s = (req as Authed).session;
    const id = (req.params as { id: string }).id;
    const job = /^[A-Za-z0-9_-]{1,100}$/.test(id) ? await this.view.getJob(id) : null;
    if (!job || (job.user !== s.user && !s.admin)) {
      if (job) this.log.warn({ user: s.user, job: id }, "WEB refused: another user's job");
      throw new FaxgateError("JOB_NOT_FOUND", "no such job");
    }
    return job;
  }

  private async newFax(req: Authed) {
    const s = req.session;
    if (!req.isMultipart())
      throw new FaxgateError("USAGE", "send the fax as multipart/form-data (fields to, subject, notes, cover, files)");
    const dir = await mkdtemp(path.join(await this.scratch(), "up-"));
    try {
      const fields: Record<string, string[]> = {};
      const uploads: Array<{ path: string; name: string }> = [];
      for await (const part of req.parts()) {
        if (part.type === "file") {
          if (part.fieldname !== "files") {
            part.file.resume();
            continue;
          }
          const file = path.join(dir, String(uploads.length));
          await pipeline(part.file, createWriteStream(file, { mode: 0o600 }));
          if (part.file.truncated)
            throw new FaxgateError(
              "USAGE",
              `${part.filename}: larger than the console takes (${Math.round((this.deps.maxUploadBytes ?? 52_428_800) / 1_048_576)} MB)`,
            );
          if ((await stat(file)).size === 0) continue; // an empty file input
          uploads.push({ path: file, name: path.basename(part.filename || `document-${uploads.length + 1}`) });
        } else {
          (fields[part.fieldname] ??= []).push(String(part.value));
        }
      }
      const subject = fields.subject?.[0]?.trim() || undefined;
      const notes = fields.notes?.[0]?.trim() || undefined;
      refuseControlCharacters("subject", subject);
      refuseControlCharacters("notes", notes);
      for (const u of uploads) refuseControlCharacters("file name", u.name);
      const coverAsked = ["on", "true", "1", "yes"].includes((fields.cover?.[0] ?? "").toLowerCase());
      // a cover page with only a subject on it is not what anyone means to fax
      if (uploads.length === 0 && !notes)
        throw new FaxgateError("NOTHING_TO_FAX", "choose a file to fax (or write notes for a cover page)");
      // numbers and the user's rate first: a fax refused for either costs no conversion
      const recipients = await this.recipientsOf(s, fields.to ?? []);
      const { documents, leftOut } = await newFaxDocuments(
        uploads,
        () => this.deps.office,
        undefined,
        s.user,
        this.deps.partial?.() ?? "refuse",
      );
      const job = await this.submit(s, {
        recipients,
        documents,
        cover: { enabled: coverAsked || documents.length === 0, subject, notes },
        origin: { via: "web console", ...(subject ? { subject } : {}) },
        leftOut,
      });
      return publicJob(job, this.clock.now());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** The numbers (or contacts) checked, and one fax of the user's rate taken; refused by name otherwise. */
  private async recipientsOf(s: Session, to: string[]): Promise<NewRecipient[]> {
    const recipients = await newFaxRecipients({
      to,
      user: s.user,
      defaultCountryCode: this.deps.defaultCountryCode(),
      destinations: this.deps.destinations,
      contacts: this.deps.clientFor(s.user),
    });
    if (recipients.length === 0) throw new FaxgateError("USAGE", "give at least one fax number or contact");
    if (!this.rate.take(s.user))
      throw new FaxgateError("USAGE", "too many faxes from you in the last minute; try again shortly", {
        httpStatus: 429,
      });
    return recipients;
  }

  /** The accept step shared with mail, print and `faxgate send`. */
  private async submit(
    s: Session,
    input: {
      recipients: NewRecipient[];
      documents: NewDocument[];
      cover: Job["cover"];
      origin: Record<string, string>;
      leftOut?: LeftOut[];
    },
  ): Promise<Job> {
    const { job } = await acceptForm(
      { store: this.deps.store, log: this.log, metrics: this.deps.metrics },
      { source: "web", user: s.user, ...input },
      { user: s.user, via: "web" },
    );
    this.live.poke();
    return job;
  }

  private async scratch(): Promise<string> {
    const dir = path.join(this.deps.dataDir, "web-tmp");
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  private answerError(req: FastifyRequest, reply: FastifyReply, err: unknown) {
    const s = (req as Partial<Authed>).session;
    if (isFaxgateError(err)) {
      const status =
        err.httpStatus && err.httpStatus >= 400 && err.httpStatus < 500
          ? err.httpStatus
          : err.code === "JOB_NOT_FOUND"
            ? 404
            : err.code === "JOB_STATE"
              ? 409
              : err.code === "API_FORBIDDEN"
                ? 403
                : err.code === "CONVERTER_BUSY"
                  ? 503
                  : err.code.startsWith("API_")
                    ? 502
                    : 400;
      if (status !== 404) this.log.info({ user: s?.user, url: req.url, code: err.code, status }, "WEB refused");
      // over a share (the user's API calls, their place in the conversion queue): when to come back
      const retryAfter = (err as { retryAfterSeconds?: unknown }).retryAfterSeconds;
      if (status === 429 && typeof retryAfter === "number") reply.header("retry-after", String(retryAfter));
      return reply.code(status).send({ error: err.message, code: err.code });
    }
    const e = err as { statusCode?: number; message?: string; code?: string };
    if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
      return reply.code(e.statusCode).send({
        error:
          e.code === "FST_REQ_FILE_TOO_LARGE" || e.code === "FST_FILES_LIMIT"
            ? "upload too large or too many files"
            : (e.message ?? "bad request"),
      });
    }
    this.log.error({ user: s?.user, url: req.url, err: describeError(err) }, "WEB request failed");
    return reply.code(500).send({ error: "the gateway could not do that; the log says why" });
  }
}

function clampInt(v: string | undefined, min: number, max: number, dflt: number): number {
  const n = v === undefined ? NaN : Number(v);
  return Number.isInteger(n) ? Math.min(max, Math.max(min, n)) : dflt;
}

function toList(v: unknown): string[] {
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === "string");
  return typeof v === "string" && v.trim() ? [v] : [];
}

/** fastify's trustProxy: the socket's address when it is a listed proxy, and nothing beyond it. */
function proxyTrust(proxies: readonly string[] | undefined): false | ((address: string, hop: number) => boolean) {
  if (!proxies?.length) return false;
  const list = buildBlockList(proxies);
  return (address, hop) => hop === 0 && inList(list, address);
}

/** A job in the JSON of `faxgate jobs --json`. */
export function publicJob(j: Job, nowMs: number) {
  return jobJson(j, new Map(), nowMs);
}
