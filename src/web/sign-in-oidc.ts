// Console sign-in through the OpenID Connect provider (web.oidc, docs/sign-in.md):
// GET /oidc/start sends the browser to the provider, GET /oidc/callback takes it back, proves the
// person with the ID token (auth/oidc.ts, auth/oidc-claims.ts) and starts their session. A refusal
// is a page that says why, a log line and a ledger row with the reason.
//
// What the callback needs (state, nonce, PKCE verifier) is kept in the store (a fleet without
// sticky sessions calls back on any gateway), once, keyed by a random id in a short-lived cookie
// that is SameSite=Lax: the callback is a navigation from the provider's site,
// which a Strict cookie (the session's) would not come with. The cookie binds the sign-in to the
// browser that began it, so a code sent to another browser is refused.
import { randomBytes } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { judgeClaims, type OidcRelyingParty } from "../auth/index.js";
import type { ConsoleContext } from "./context.js";
import type { FactorSignIn } from "./factors.js";
import type { OidcSignIn } from "./sign-in-oidc-sessions.js";
import { startSession } from "./sign-in.js";

const PENDING_COOKIE = "faxgate_oidc";
const PENDING_MS = 10 * 60_000;

export const oidcRoutes: FastifyPluginAsync<{
  ctx: ConsoleContext;
  oidc: OidcSignIn;
  factors?: FactorSignIn;
}> = async (app, { ctx, oidc, factors }) => {
  const secure = () => oidc.publicUrl().startsWith("https:");

  app.get("/oidc/start", async (req, reply) => {
    const next = localPath((req.query as { next?: unknown }).next);
    let started: Awaited<ReturnType<OidcRelyingParty["start"]>>;
    try {
      started = await oidc.rp.start();
    } catch (err) {
      ctx.log.error({ err: String(err) }, "WEB sign-in provider unreachable (web.oidc.issuer)");
      return refusalPage(reply, 502, "The sign-in provider could not be reached. Try again shortly; the log says why.");
    }
    const id = randomBytes(32).toString("base64url");
    await oidc.pending.put(id, { ...started.pending, next }, ctx.clock.now() + PENDING_MS);
    reply.setCookie(PENDING_COOKIE, id, {
      path: "/oidc",
      httpOnly: true,
      sameSite: "lax",
      secure: secure(),
      maxAge: PENDING_MS / 1000,
    });
    return reply.redirect(started.url.href, 302);
  });

  app.get("/oidc/callback", async (req, reply) => {
    const id = req.cookies[PENDING_COOKIE];
    const p = id ? await oidc.pending.take(id) : null;
    reply.clearCookie(PENDING_COOKIE, { path: "/oidc", httpOnly: true, sameSite: "lax", secure: secure() });
    const query = req.url.includes("?") ? req.url.slice(req.url.indexOf("?")) : "";
    const fail = async (reason: string, message: string, status = 403, who = "(unknown)") => {
      ctx.log.warn({ remote: req.ip, via: "oidc", reason }, "WEB sign-in failed");
      await ctx.deps.ledger.record({
        action: "sign-in-failed",
        actor: { kind: "person" },
        object: { kind: "person", id: who },
        door: "console",
        client: req.ip,
        detail: { via: "oidc", reason },
      });
      return refusalPage(reply, status, message);
    };
    if (!p)
      return fail(
        "no-sign-in-under-way",
        "This sign-in was begun too long ago or in another browser. Sign in again.",
        400,
      );
    const providerError = new URLSearchParams(query).get("error");
    if (providerError)
      return fail(`provider-${providerError.slice(0, 40)}`, "The sign-in provider did not sign you in. Sign in again.");
    let proved: { claims: Record<string, unknown>; idToken: string };
    try {
      proved = await oidc.rp.finish(new URL(`${callbackUrl(oidc.publicUrl())}${query}`), p);
    } catch (err) {
      ctx.log.warn({ err: String(err) }, "WEB sign-in: the provider's answer did not check out");
      return fail("token-refused", "The sign-in provider's answer did not check out. Sign in again.");
    }
    const users = ctx.deps.users();
    const verdict = judgeClaims(proved.claims, oidc.rules, users);
    if (!verdict.ok) {
      // the account tried, when it is one of ours (a name no user has is not kept)
      const named = proved.claims[oidc.rules.personClaim];
      const known = users.find((u) => typeof named === "string" && u.email.toLowerCase() === named.toLowerCase());
      return fail(verdict.reason, verdict.message, 403, known?.name ?? "(not a configured user)");
    }
    // no second factor proved at the provider, and one enrolled or required here: the sign-in page asks for it
    // the ID token (sealed) goes with the sign-in, to whichever gateway finishes it, for sign-out
    const idToken = oidc.idTokens.seal(proved.idToken);
    const second = factors ? await factors.secondStep(reply, verdict.person, "oidc", verdict.mfa, idToken) : null;
    if (second) return reply.redirect(`/login.html?factor=1&next=${encodeURIComponent(p.next)}`, 302);
    await startSession(ctx, req, reply, verdict.person, { via: "oidc", mfa: verdict.mfa });
    await oidc.idTokens.keep(req.session.sessionId, idToken, ctx.clock.now() + ctx.lifetimeMs);
    return reply.redirect(p.next, 302);
  });
};

/** The console's callback address, as registered at the provider. */
export function callbackUrl(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/oidc/callback`;
}

/** A path on this console to return to after sign-in; anything else (another site, odd forms) is "/". */
function localPath(v: unknown): string {
  if (typeof v !== "string" || !/^\/[A-Za-z0-9._~\-/?=&%#]*$/.test(v) || v.startsWith("//")) return "/";
  return v;
}

/** The page a refused sign-in sees: what happened, in words, and the way back. */
function refusalPage(reply: FastifyReply, status: number, message: string): FastifyReply {
  const text = message.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return reply
    .code(status)
    .type("text/html; charset=utf-8")
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in refused · faxgate</title>` +
        `<link rel="stylesheet" href="/style.css"></head><body><header class="top"><span class="brand">faxgate</span></header>` +
        `<main id="main" class="narrow"><h1>Sign-in refused</h1><p id="why" role="alert">${text}</p>` +
        `<p><a href="/login.html">Back to sign-in</a></p></main></body></html>`,
    );
}
