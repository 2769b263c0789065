// The console's sign-in sessions, through the maintained plugins: @fastify/cookie reads and writes
// the cookie, @fastify/session keeps the session server-side (in a SessionStore: the cookie holds
// only a random 256-bit id), @fastify/csrf-protection gives each session a secret and checks the
// X-CSRF-Token header of every state-changing call against it. Ours are the rules, by the
// console's clock: a session ends web.sessionLifetime after sign-in, after web.idleTimeout without a
// request, at sign-out, and when a reload removes its user or changes their role.
import { randomBytes } from "node:crypto";
import fastifyCookie from "@fastify/cookie";
import fastifyCsrf from "@fastify/csrf-protection";
import fastifySession from "@fastify/session";
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  Session as SessionData,
} from "fastify";
import type { Clock } from "../clock.js";
import type { Logger } from "../log/index.js";
import type { SessionRecord, SessionStore } from "./session-store.js";

export const SESSION_COOKIE = "faxgate_session";
const ID_SHAPE = /^[A-Za-z0-9_-]{43}$/;
// with web.idleTimeout, a session's last use is written at most this often
const TOUCH_EVERY_MS = 60_000;

declare module "fastify" {
  interface Session {
    user?: string;
    admin?: boolean;
    csrfToken?: string;
    signedInAt?: number;
    /** @fastify/csrf-protection's secret (its default sessionKey) */
    _csrf?: string;
  }
}

/** A signed-in session as the routes use it. */
export interface Session {
  id: string;
  user: string;
  admin: boolean;
  csrfToken: string;
}

/** The session of a request that passed `requireSignIn`. */
export function sessionOf(req: FastifyRequest): Session {
  const s = req.session;
  if (!s?.user) throw new Error("route without requireSignIn");
  return { id: s.sessionId, user: s.user, admin: Boolean(s.admin), csrfToken: s.csrfToken ?? "" };
}

/** The session's lifetime rules over a SessionStore. */
export class SessionRules {
  constructor(
    private readonly store: SessionStore,
    private readonly clock: Clock,
    private readonly lifetimeMs: number,
    private readonly idleMs: number | null,
  ) {}

  /** The session as it stands, or null once it ended (it is removed then). `use`: a request used it. */
  async current(id: string, use = false): Promise<SessionRecord | null> {
    const r = await this.store.get(id);
    if (!r) return null;
    const now = this.clock.now();
    if (this.ended(r, now)) {
      await this.store.destroy(id);
      return null;
    }
    if (use && this.idleMs !== null && now - r.seenAt >= Math.min(TOUCH_EVERY_MS, this.idleMs / 10))
      await this.store.set(id, { ...r, seenAt: now });
    return r;
  }

  /** Ends the sessions `valid` refuses (a reload that removed users or roles) and the expired ones. */
  async keepOnly(valid: (r: SessionRecord) => boolean): Promise<void> {
    const now = this.clock.now();
    for (const { id, record } of await this.store.list())
      if (this.ended(record, now) || !valid(record)) await this.store.destroy(id);
  }

  private ended(r: SessionRecord, now: number): boolean {
    return now >= r.signedInAt + this.lifetimeMs || (this.idleMs !== null && now >= r.seenAt + this.idleMs);
  }

  /** @fastify/session's (express-session's) store, over ours: only signed-in sessions are kept. */
  pluginStore() {
    type Done = (err?: unknown) => void;
    const settle = (p: Promise<unknown>, done: Done) => p.then(() => done(), done);
    return {
      get: (id: string, done: (err: unknown, data?: SessionData | null) => void) =>
        this.current(id, true).then(
          (r) =>
            done(
              null,
              r &&
                ({
                  user: r.user,
                  admin: r.admin,
                  csrfToken: r.csrfToken,
                  _csrf: r.csrfSecret,
                  signedInAt: r.signedInAt,
                } as SessionData),
            ),
          done,
        ),
      set: (id: string, s: SessionData, done: Done) => {
        // a session regenerated at sign-in is stored once its user is set, not before
        if (!s.user || !s._csrf || !s.csrfToken || s.signedInAt === undefined) return done();
        const record: SessionRecord = {
          user: s.user,
          admin: Boolean(s.admin),
          csrfSecret: s._csrf,
          csrfToken: s.csrfToken,
          signedInAt: s.signedInAt,
          seenAt: this.clock.now(),
        };
        settle(this.store.set(id, record), done);
      },
      destroy: (id: string, done: Done) => settle(this.store.destroy(id), done),
    };
  }
}

export interface SessionOptions {
  rules: SessionRules;
  lifetimeMs: number;
  /** the console serves https: the cookie is marked Secure */
  secure: boolean;
}

/**
 * Cookies, sessions and CSRF for the whole console (on the root instance: the three are
 * fastify-plugin'ed, so every route group sees them).
 */
export function useSessions(app: FastifyInstance, opts: SessionOptions): void {
  const flags = { path: "/", httpOnly: true, sameSite: "strict" as const, secure: opts.secure };
  // every cookie the console sets, the session's own and its clearing, carries these flags;
  // Max-Age too, which @fastify/session leaves out (it writes Expires only)
  app.register(fastifyCookie, { parseOptions: { ...flags, maxAge: Math.floor(opts.lifetimeMs / 1000) } });
  app.register(fastifySession, {
    cookieName: SESSION_COOKIE,
    // the cookie carries the 256-bit random id as it is, as it always did: a signature would add
    // nothing to an unguessable id, and a signing key a fleet of gateways would have to share.
    // Anything not shaped like an id is refused before the store is asked.
    secret: {
      sign: (id: string) => id,
      unsign: (v: string) => (ID_SHAPE.test(v) ? { valid: true, renew: false, value: v } : INVALID),
    },
    idGenerator: () => randomBytes(32).toString("base64url"),
    cookie: { ...flags, maxAge: opts.lifetimeMs },
    // a cookie only for a signed-in session, set once at sign-in (the lifetime is from sign-in)
    saveUninitialized: false,
    rolling: false,
    store: opts.rules.pluginStore(),
  });
  app.register(fastifyCsrf, {
    sessionPlugin: "@fastify/session",
    getToken: csrfHeader,
    csrfOpts: { secretLength: 32 },
  });
}

const INVALID = { valid: false, renew: false, value: null };

function csrfHeader(req: FastifyRequest): string | undefined {
  const h = req.headers["x-csrf-token"];
  return (Array.isArray(h) ? h[0] : h) || undefined;
}

/** 401 for a request without a signed-in session. */
export async function requireSignIn(req: FastifyRequest, reply: FastifyReply) {
  if (!req.session?.user) return reply.code(401).send({ error: "sign in first (POST /login)" });
}

/**
 * Every state-changing call carries the session's token in X-CSRF-Token: none is refused here,
 * a wrong one by @fastify/csrf-protection (answered by `csrfRefusal`). Run after requireSignIn.
 */
export function requireCsrf(
  app: FastifyInstance,
  log: Logger,
): (req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void {
  return (req, reply, done) => {
    if (req.method === "GET" || req.method === "HEAD") return done();
    if (csrfHeader(req)) return app.csrfProtection(req, reply, done);
    log.warn({ user: req.session?.user, method: req.method, url: req.url }, "WEB refused: no CSRF token");
    reply.code(403).send({
      error:
        "no X-CSRF-Token header: a call that changes something carries the csrfToken from POST /login or GET /api/session",
      code: "CSRF_MISSING",
    });
  };
}

/** The answer to @fastify/csrf-protection's refusals (a wrong token, or a session without a secret). */
export function csrfRefusal(code: string | undefined): { error: string; code: string } | null {
  if (code === "FST_CSRF_INVALID_TOKEN")
    return {
      error: "wrong X-CSRF-Token header: it is not this session's csrfToken (from POST /login or GET /api/session)",
      code: "CSRF_WRONG",
    };
  if (code === "FST_CSRF_MISSING_SECRET")
    return { error: "this session has no CSRF secret; sign in again (POST /login)", code: "CSRF_NO_SECRET" };
  return null;
}
