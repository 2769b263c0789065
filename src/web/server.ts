// The web console (docs/console.md): each user's own faxes and, for `role: admin`, the queue.
// Served by the daemon on `web.listen`. This file only composes: the answers and headers every
// route shares, cookies/sessions/CSRF (sessions.ts), the pages, sign-in, and the signed-in API's
// route groups, each a fastify plugin in its own file. Inside the API every call needs a session
// and every state-changing one its CSRF token.
import fastifyFormbody from "@fastify/formbody";
import fastifyMultipart from "@fastify/multipart";
import Fastify, { type FastifyInstance } from "fastify";
import { parseHostPort, type UserConfig } from "../config/index.js";
import { buildBlockList, inList } from "../auth/index.js";
import { applyListenerLimits, descriptorBudget, serverOptions } from "../listener-limits.js";
import { addressingRoutes } from "./addressing.js";
import { useAnswers } from "./answers.js";
import { confirmationView, confirmingRoutes } from "./confirming.js";
import { ConsoleContext, type WebConsoleDeps } from "./context.js";
import { evidenceRoutes } from "./evidence.js";
import { FactorSignIn, factorResetRoutes, factorRoutes } from "./factors.js";
import { jobRoutes } from "./jobs.js";
import { directoryPageRoutes } from "./directory-page.js";
import { ledgerRoutes } from "./ledger.js";
import { liveRoutes } from "./live.js";
import { operatorRoutes } from "./operator.js";
import { receivedRoutes } from "./received.js";
import { MAX_FILES, sendRoutes } from "./send.js";
import { mailedLinkRoutes } from "./mailed-link.js";
import { requireCsrf, requireSignIn, useSessions } from "./sessions.js";
import { signInRoutes } from "./sign-in.js";
import { oidcRoutes } from "./sign-in-oidc.js";
import { loadStaticFiles, staticPages } from "./static-files.js";

export type { WebConsoleDeps } from "./context.js";
export { publicJob } from "./jobs.js";
export { SESSION_COOKIE } from "./sessions.js";
export { MAX_ACCOUNT_AUTH_FAILURES } from "./sign-in.js";

export class WebConsole {
  private readonly app: FastifyInstance;
  private readonly ctx: ConsoleContext;

  constructor(private readonly deps: WebConsoleDeps) {
    this.ctx = new ConsoleContext(deps);
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
      logger: this.ctx.log,
      exempt: proxies ? (a) => inList(proxies, a) : undefined,
    });
    this.compose();
  }

  /** Binds to web.listen; answers the address (port 0 picks a free one). */
  async listen(): Promise<{ host: string; port: number }> {
    const wanted = parseHostPort(this.deps.config.listen, "web.listen");
    const host = wanted.host;
    await this.app.listen(wanted);
    const addr = this.app.server.address();
    const port = typeof addr === "object" && addr ? addr.port : wanted.port;
    this.ctx.log.info({ host, port, tls: Boolean(this.deps.tls) }, "web console listening");
    return { host, port };
  }

  async close(): Promise<void> {
    this.ctx.live.stop();
    await this.app.close();
  }

  /** After a reload: sessions of removed users (or of a lost admin role) end, and their streams. */
  async updateUsers(users: readonly UserConfig[]): Promise<void> {
    await this.ctx.sessions.keepOnly((s) => {
      const u = users.find((x) => x.name === s.user);
      // without a password a person still signs in through the provider (web.oidc)
      return Boolean(u?.password || (u && this.deps.oidc)) && (u!.role === "admin") === s.admin;
    });
    await this.ctx.live.recheck();
  }

  private compose(): void {
    const { app, ctx, deps } = this;
    app.register(fastifyFormbody);
    app.register(fastifyMultipart, {
      limits: { fileSize: deps.maxUploadBytes, files: MAX_FILES, fields: 40, fieldSize: 10_000 },
    });
    useAnswers(app, ctx.log);
    useSessions(app, { rules: ctx.sessions, lifetimeMs: ctx.lifetimeMs, secure: Boolean(deps.tls) });
    app.register(staticPages, { files: loadStaticFiles() });
    const factors = deps.factors ? new FactorSignIn(ctx, deps.factors) : undefined;
    app.register(signInRoutes, { ctx, factors });
    if (deps.oidc) app.register(oidcRoutes, { ctx, oidc: deps.oidc, factors });
    for (const extra of deps.extraRoutes ?? []) app.register(extra.routes, { prefix: extra.prefix });
    // a mailed link works signed out: it records the click and leads to the page that asks for sign-in
    app.register(mailedLinkRoutes, {
      store: deps.store,
      ledger: deps.ledger,
      lifetime: deps.mailedLinkLifetime,
      clock: ctx.clock,
    });
    app.register(async (api) => {
      api.addHook("onRequest", requireSignIn);
      api.addHook("onRequest", requireCsrf(api, ctx.log));
      await api.register(jobRoutes, { ctx });
      if (deps.evidence) await api.register(evidenceRoutes, { ctx, evidence: deps.evidence });
      await api.register(sendRoutes, { ctx });
      await api.register(receivedRoutes, { ctx });
      const waiting = {
        store: deps.store,
        logger: ctx.log,
        clock: ctx.clock,
        changed: () => ctx.live.poke(),
        ledger: deps.ledger,
      };
      const ownJob = ctx.ownJob.bind(ctx);
      await api.register(addressingRoutes, {
        ...waiting,
        ownJob,
        clientFor: deps.clientFor,
        destinations: deps.destinations,
        defaultCountryCode: deps.defaultCountryCode,
        mayQueue: (user) => ctx.rate.take(user),
        confirmationView: (job) => confirmationView(job, ctx.clock, deps.confirmWaitMs()),
      });
      await api.register(confirmingRoutes, { ...waiting, ownJob, confirmWaitMs: deps.confirmWaitMs });
      await api.register(operatorRoutes, { pages: deps.operator, clock: ctx.clock });
      await api.register(ledgerRoutes, { pages: deps.ledgerPages });
      await api.register(directoryPageRoutes, { view: deps.directory });
      await api.register(liveRoutes, { live: ctx.live });
      if (factors) {
        await api.register(factorRoutes, { factors });
        await api.register(factorResetRoutes, { factors, ctx });
      }
    });
  }
}

/** fastify's trustProxy: the socket's address when it is a listed proxy, and nothing beyond it. */
function proxyTrust(proxies: readonly string[] | undefined): false | ((address: string, hop: number) => boolean) {
  if (!proxies?.length) return false;
  const list = buildBlockList(proxies);
  return (address, hop) => hop === 0 && inList(list, address);
}
