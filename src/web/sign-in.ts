// Sign-in and sign-out (POST /login, POST /logout, GET /api/session). Sign-in is the SMTP AUTH
// password (users[].password) with the same lockout: per client address, and per account over
// all addresses. A sign-in from a page of another site (its Origin) is refused. A new session
// (a new id: never one the browser brought) gets its CSRF token here.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { UserConfig } from "../config/index.js";
import { AuthLockout, verifySignIn } from "../auth/index.js";
import { originIsHost } from "../url-check.js";
import type { ConsoleContext } from "./context.js";
import { factorStepRoutes, type FactorSignIn } from "./factors.js";
import { groupsOf } from "./shared-inbox.js";
import { requireCsrf, requireSignIn, SESSION_COOKIE, sessionOf } from "./sessions.js";

// failed sign-ins to one account within the lockout window, over all addresses: guesses spread
// over many addresses (or forged ones) stop here; an address alone stops at 10
export const MAX_ACCOUNT_AUTH_FAILURES = 20;

export const signInRoutes: FastifyPluginAsync<{ ctx: ConsoleContext; factors?: FactorSignIn }> = async (
  app,
  { ctx, factors },
) => {
  const locks = {
    address: new AuthLockout(ctx.clock, ctx.deps.counters, "console-address"),
    account: new AuthLockout(ctx.clock, ctx.deps.counters, "console-account", MAX_ACCOUNT_AUTH_FAILURES),
  };

  app.post("/login", async (req, reply) => login(ctx, locks, req, reply, factors));
  if (factors)
    factorStepRoutes(app, ctx, factors, (req, reply, user, detail) => startSession(ctx, req, reply, user, detail));

  // signed out already: nothing to end, the cookie is cleared all the same
  const csrf = requireCsrf(app, ctx.log);
  app.post(
    "/logout",
    { onRequest: (req, reply, done) => (req.session?.user ? csrf(req, reply, done) : done()) },
    async (req, reply) => {
      const user = req.session?.user;
      let signOutUrl: string | undefined;
      if (user) {
        const idToken = await ctx.deps.oidc?.idTokens.take(req.session.sessionId);
        await req.session.destroy();
        await ctx.live.recheck();
        ctx.log.info({ user }, "WEB signed out");
        // begun at the provider: signed out there too where it offers that (RP-initiated logout)
        if (idToken && ctx.deps.oidc) {
          const back = `${ctx.deps.oidc.publicUrl().replace(/\/+$/, "")}/login.html`;
          const url = await ctx.deps.oidc.rp.endSessionUrl(back, idToken).catch(() => null);
          signOutUrl = url?.href;
        }
      }
      reply.clearCookie(SESSION_COOKIE);
      return signOutUrl ? { ok: true, signOutUrl } : { ok: true };
    },
  );

  // what the sign-in page offers: a password, and the provider's button when web.oidc is set
  app.get("/api/sign-in-options", async () => ({ password: true, oidc: Boolean(ctx.deps.oidc) }));

  app.get("/api/session", { onRequest: requireSignIn }, async (req) => {
    const s = sessionOf(req);
    const inbox = ctx.deps.inbound ? groupsOf(ctx.deps.inbound(), s.user) : [];
    return { user: s.user, admin: s.admin, csrfToken: s.csrfToken, inbox };
  });
};

async function login(
  ctx: ConsoleContext,
  locks: { address: AuthLockout; account: AuthLockout },
  req: FastifyRequest,
  reply: FastifyReply,
  factors: FactorSignIn | undefined,
) {
  const origin = req.headers.origin;
  if (origin && !originIsHost(origin, req.headers.host))
    return reply.code(403).send({ error: "sign-in from another site refused" });
  const body = (req.body ?? {}) as Record<string, unknown>;
  const name = typeof body.user === "string" ? body.user.slice(0, 64) : "";
  const password = typeof body.password === "string" ? body.password.slice(0, 1024) : "";
  // a user name for the log only when it is a configured one: a password typed into the name field stays out
  const logName = ctx.deps.users().some((u) => u.name === name) ? name : "(not a configured user)";
  const client = req.ip;
  const attempt = await locks.address.begin(client);
  if (!attempt) {
    ctx.log.warn({ remote: client, user: logName }, "WEB sign-in refused: too many failures from this address");
    return reply.code(429).send({ error: "too many failed sign-ins from your address; try again in 15 minutes" });
  }
  // every name counts, configured or not: the answer must not tell which accounts exist
  const forAccount = await locks.account.begin(name);
  if (!forAccount) {
    await attempt.succeeded(); // not a guess: the password was never looked at
    ctx.log.warn({ remote: client, user: logName }, "WEB sign-in refused: too many failures for this account");
    return reply.code(429).send({ error: "too many failed sign-ins for this account; try again in 15 minutes" });
  }
  const user = ctx.deps.users().find((u) => u.name === name);
  const ok = await verifySignIn(password, user?.password);
  if (!ok || !user) {
    forAccount.failed();
    const failures = attempt.failed();
    // the admin's hint goes to the log; the person signing in is told only that it did not work
    const why = user !== undefined && !user.password ? { why: "no password set: faxgate passwd" } : {};
    ctx.log.warn({ remote: client, user: logName, failures, ...why }, "WEB sign-in failed");
    // who tried is not known: the account tried is the object (a name typed that is no user's is not kept)
    await ctx.deps.ledger.record({
      action: "sign-in-failed",
      actor: { kind: "person" },
      object: { kind: "person", id: logName },
      door: "console",
      client,
      detail: { failures },
    });
    await new Promise((r) => setTimeout(r, ctx.deps.config.authFailureDelay * Math.min(failures, 5)));
    return reply.code(401).send({ error: "wrong user name or password" });
  }
  await attempt.succeeded();
  await forAccount.succeeded();
  // a factor enrolled, or one the role requires: the session waits for the second step
  const second = factors ? await factors.secondStep(reply, user, "password", false) : null;
  if (second) {
    ctx.log.info({ remote: client, user: user.name, enrol: second.enrol }, "WEB sign-in waits for a second factor");
    return { secondFactor: second };
  }
  await startSession(ctx, req, reply, user, { via: "password" });
  return { user: user.name, admin: req.session.admin, csrfToken: req.session.csrfToken };
}

/**
 * A person proved (by password, or by the OpenID provider) gets a new session: never an id the
 * browser brought, its CSRF token made here; logged and recorded in the ledger.
 */
export async function startSession(
  ctx: ConsoleContext,
  req: FastifyRequest,
  reply: FastifyReply,
  user: UserConfig,
  detail: Record<string, string | boolean>,
): Promise<void> {
  // expired sessions go now and then
  await ctx.sessions.keepOnly(() => true);
  await req.session.regenerate();
  req.session.user = user.name;
  req.session.admin = user.role === "admin";
  req.session.signedInAt = ctx.clock.now();
  req.session.csrfToken = reply.generateCsrf();
  ctx.log.info({ remote: req.ip, user: user.name, admin: req.session.admin, ...detail }, "WEB signed in");
  await ctx.deps.ledger.record({
    action: "signed-in",
    actor: { kind: req.session.admin ? "operator" : "person", id: user.name },
    object: { kind: "person", id: user.name },
    door: "console",
    client: req.ip,
    detail,
  });
}
