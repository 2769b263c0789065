// Second factors for console sign-in (docs/sign-in.md): passkeys and TOTP codes, kept per person
// in the store (SignInFactors). What a clinic expects: the password (or the organisation's
// provider) first, then a passkey or a code. A person with a factor enrolled always gives one; a
// person whose role `web.factors.require` names and who has none enrols one before the session
// starts (the first sign-in leads to enrolment). A provider sign-in whose ID token already proved a
// second factor (amr) needs no second one here.
//
// Between the first proof and the second, the sign-in under way is kept in the store
// (FactorPending), keyed by the hash of a random id in a short-lived cookie, so that any gateway of
// a fleet takes the second step; only the second step's routes take it, and it ends once. The
// ceremonies in flight (a WebAuthn challenge, a TOTP secret being confirmed, sealed) are kept with
// it, or, for a signed-in person adding a factor, under their session. Wrong codes count against
// the account fleet-wide (5 in 15 minutes, then 429), as wrong passwords do.
import { randomBytes, randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import {
  AuthLockout,
  authenticated,
  authenticationOptions,
  newTotp,
  registered,
  registrationOptions,
  relyingParty,
  totpStep,
} from "../auth/index.js";
import type { UserConfig, WebConfig } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import type { SignInFactor, FactorPendingKey, FactorPendingRecord } from "../store/index.js";
import type { ConsoleContext } from "./context.js";
import type { FactorSettings } from "./factor-settings.js";
import { sessionOf } from "./sessions.js";

export const FACTOR_COOKIE = "faxgate_factor";
const PENDING_MS = 10 * 60_000;
// wrong codes (TOTP) to one account within 15 minutes before 429
export const MAX_CODE_FAILURES = 5;

type Kind = SignInFactor["kind"];

/** The kinds of factor a person of `role` may sign in with: their requirement's, or any. */
function allowedKinds(config: WebConfig["factors"], role: UserConfig["role"]): { kinds: Kind[]; required: boolean } {
  const need = config.require[role ?? "user"];
  if (!need) return { kinds: ["passkey", "totp"], required: false };
  return { kinds: need === "passkey-or-totp" ? ["passkey", "totp"] : [need], required: true };
}

const gone = (what: string) =>
  new FaxgateError("USAGE", `${what}: it ended (finished, expired or superseded); begin again`, { httpStatus: 409 });

export class FactorSignIn {
  readonly codeLock: AuthLockout;

  constructor(
    private readonly ctx: ConsoleContext,
    readonly settings: FactorSettings,
  ) {
    this.codeLock = new AuthLockout(ctx.clock, ctx.deps.counters, "console-code", MAX_CODE_FAILURES);
  }

  /**
   * After the first proof: null when the person needs no second factor (the caller starts the
   * session), else what the second step offers; its cookie is set on `reply`.
   */
  async secondStep(
    reply: FastifyReply,
    user: UserConfig,
    via: string,
    providerMfa: boolean,
    idToken: string | null = null,
  ): Promise<{ methods: Kind[]; enrol: boolean } | null> {
    if (providerMfa) return null;
    const { kinds, required } = allowedKinds(this.settings.config, user.role);
    const usable = kinds.filter((k) => k !== "totp" || this.settings.sealer);
    const have = (await this.settings.store.of(user.name)).map((f) => f.kind).filter((k) => usable.includes(k));
    if (have.length === 0 && !required) return null;
    const id = randomBytes(32).toString("base64url");
    const until = this.ctx.clock.now() + PENDING_MS;
    await this.settings.pending.begin({ kind: "sign-in", id }, user.name, via, until, idToken);
    reply.setCookie(FACTOR_COOKIE, id, {
      path: "/login/factor",
      httpOnly: true,
      sameSite: "lax",
      secure: this.settings.publicUrl().startsWith("https:"),
      maxAge: PENDING_MS / 1000,
    });
    if (have.length > 0) return { methods: [...new Set(have)], enrol: false };
    return { methods: usable, enrol: true };
  }

  /** The sign-in under way of this request's cookie (on whichever gateway it began), or a 401 naming why. */
  async pendingOf(req: FastifyRequest): Promise<{ at: FactorPendingKey; p: FactorPendingRecord; user: UserConfig }> {
    const id = req.cookies[FACTOR_COOKIE];
    const at: FactorPendingKey = { kind: "sign-in", id: id ?? "" };
    const p = id ? await this.settings.pending.get(at) : null;
    const user = p ? this.ctx.deps.users().find((u) => u.name === p.user) : undefined;
    if (!id || !p || !user)
      throw new FaxgateError(
        "USAGE",
        "no sign-in waiting for a second factor (finished already, expired, or never begun): sign in again",
        { httpStatus: 401 },
      );
    return { at, p, user };
  }

  /** Ends the sign-in under way once its factor is proved: refused when another request ended it first. */
  async finishPending(at: FactorPendingKey): Promise<void> {
    if (!(await this.settings.pending.end(at)))
      throw new FaxgateError("USAGE", "this sign-in was finished already (or expired): sign in again", {
        httpStatus: 401,
      });
  }

  /** Where a signed-in person's enrolment ceremonies are kept: under their session, in the store. */
  async ceremonyOf(session: { id: string; user: string }): Promise<FactorPendingKey> {
    const at: FactorPendingKey = { kind: "enrol", id: session.id };
    await this.settings.pending.begin(at, session.user, null, this.ctx.clock.now() + PENDING_MS);
    return at;
  }

  private rp() {
    return relyingParty(this.settings.publicUrl());
  }

  private async passkeys(user: string) {
    return (await this.settings.store.of(user))
      .filter((f) => f.kind === "passkey" && f.credentialId && f.publicKey)
      .map((f) => ({
        id: f.id,
        credentialId: f.credentialId!,
        publicKey: f.publicKey!,
        counter: f.counter,
        transports: f.transports,
      }));
  }

  // --- enrolment (at a first sign-in, or signed in) ---

  async beginTotp(user: string, at: FactorPendingKey): Promise<{ secret: string; uri: string }> {
    const sealer = this.settings.sealer;
    if (!sealer)
      throw new FaxgateError("USAGE", "authenticator codes are not set up on this gateway (web.factors.totpKey)");
    const t = newTotp("faxgate", user);
    // kept sealed, as an enrolled one is: the table alone gives no one the codes
    if (!(await this.settings.pending.set(at, "sealed_secret", sealer.seal(t.secret)))) throw gone("the enrolment");
    return t;
  }

  /** The TOTP being enrolled, proved by a code from the app: kept (sealed). */
  async confirmTotp(
    req: FastifyRequest,
    user: string,
    at: FactorPendingKey,
    code: string,
    name: string,
  ): Promise<void> {
    const sealed = (await this.settings.pending.get(at))?.sealedSecret;
    const sealer = this.settings.sealer;
    if (!sealed || !sealer) throw new FaxgateError("USAGE", "begin the authenticator enrolment first");
    const step = await this.checkCode(req, user, () => totpStep(sealer.open(sealed), code, this.ctx.clock.now(), 0));
    // one confirmation of a secret, fleet-wide: a second request with it enrols nothing more
    if (!(await this.settings.pending.take(at, "sealed_secret", sealed))) throw gone("this authenticator enrolment");
    await this.settings.store.add({
      id: randomUUID(),
      user,
      kind: "totp",
      name,
      credentialId: null,
      publicKey: null,
      transports: [],
      sealedSecret: sealed,
      lastStep: step,
      createdAt: new Date(this.ctx.clock.now()).toISOString(),
    });
    await this.record(req, user, "factor-enrolled", { kind: "totp" });
  }

  async passkeyOptionsToCreate(user: string, at: FactorPendingKey) {
    const options = await registrationOptions(this.rp(), user, await this.passkeys(user));
    if (!(await this.settings.pending.set(at, "challenge", options.challenge))) throw gone("the passkey enrolment");
    return options;
  }

  async addPasskey(
    req: FastifyRequest,
    user: string,
    at: FactorPendingKey,
    response: unknown,
    name: string,
  ): Promise<void> {
    const challenge = await this.takeChallenge(at);
    const made = challenge ? await registered(this.rp(), challenge, response) : null;
    if (!made) throw new FaxgateError("USAGE", "the passkey could not be checked; try again", { httpStatus: 400 });
    await this.settings.store.add({
      id: randomUUID(),
      user,
      kind: "passkey",
      name,
      credentialId: made.credentialId,
      publicKey: made.publicKey,
      counter: made.counter,
      transports: made.transports,
      sealedSecret: null,
      createdAt: new Date(this.ctx.clock.now()).toISOString(),
    });
    await this.record(req, user, "factor-enrolled", { kind: "passkey" });
  }

  /** The challenge handed out for `at`, taken once (a second answer to it, on any gateway, finds none). */
  private async takeChallenge(at: FactorPendingKey): Promise<string | null> {
    const challenge = (await this.settings.pending.get(at))?.challenge;
    return challenge && (await this.settings.pending.take(at, "challenge", challenge)) ? challenge : null;
  }

  // --- the second step of a sign-in ---

  async passkeyOptionsToSign(user: string, at: FactorPendingKey) {
    const options = await authenticationOptions(this.rp(), await this.passkeys(user));
    if (!(await this.settings.pending.set(at, "challenge", options.challenge))) throw gone("the sign-in");
    return options;
  }

  /** True when one of the person's passkeys signed this sign-in's challenge. */
  async provePasskey(user: string, at: FactorPendingKey, response: unknown): Promise<boolean> {
    const challenge = await this.takeChallenge(at);
    const keys = await this.passkeys(user);
    const r = challenge ? await authenticated(this.rp(), challenge, response, keys) : null;
    if (!r) return false;
    const used = keys.find((k) => k.credentialId === r.credentialId)!;
    await this.settings.store.usedPasskey(used.id, r.counter, new Date(this.ctx.clock.now()).toISOString());
    return true;
  }

  /** A code from one of the person's authenticators, not used before; refused (and counted) otherwise. */
  async proveTotp(req: FastifyRequest, user: string, code: string): Promise<void> {
    const sealer = this.settings.sealer;
    const totps = sealer ? (await this.settings.store.of(user)).filter((f) => f.kind === "totp" && f.sealedSecret) : [];
    await this.checkCode(req, user, async () => {
      for (const f of totps) {
        const step = await totpStep(sealer!.open(f.sealedSecret!), code, this.ctx.clock.now(), f.lastStep);
        // the step taken in the store: of two gateways given the same code, one wins
        if (
          step !== null &&
          (await this.settings.store.takeStep(f.id, step, new Date(this.ctx.clock.now()).toISOString()))
        )
          return step;
      }
      return null;
    });
  }

  /** Runs a code check under the account's lockout: a wrong code is counted, too many answer 429. */
  private async checkCode(req: FastifyRequest, user: string, check: () => Promise<number | null>): Promise<number> {
    const attempt = await this.codeLock.begin(user);
    if (!attempt)
      throw new FaxgateError("USAGE", "too many wrong codes for this account; try again in 15 minutes", {
        httpStatus: 429,
        retryAfterSeconds: 900,
      });
    const step = await check();
    if (step === null) {
      const failures = attempt.failed();
      this.ctx.log.warn({ remote: req.ip, user, failures }, "WEB second factor refused: wrong or used code");
      await this.ctx.deps.ledger.record({
        action: "sign-in-failed",
        actor: { kind: "person" },
        object: { kind: "person", id: user },
        door: "console",
        client: req.ip,
        detail: { factor: "totp", reason: "wrong-or-used-code", failures },
      });
      throw new FaxgateError("USAGE", "wrong code, or one used already: wait for the next one", { httpStatus: 401 });
    }
    await attempt.succeeded();
    return step;
  }

  async record(
    req: FastifyRequest,
    user: string,
    action: "factor-enrolled",
    detail: Record<string, string>,
  ): Promise<void> {
    await this.ctx.deps.ledger.record({
      action,
      actor: { kind: "person", id: user },
      object: { kind: "person", id: user },
      door: "console",
      client: req.ip,
      detail,
    });
  }
}

const nameOf = (body: unknown, fallback: string): string => {
  const n = (body as { name?: unknown })?.name;
  return typeof n === "string" && n.trim() ? n.trim().slice(0, 60) : fallback;
};
const codeOf = (body: unknown): string => {
  const c = (body as { code?: unknown })?.code;
  return typeof c === "string" ? c.replace(/\s/g, "").slice(0, 10) : "";
};
const responseOf = (body: unknown): unknown => (body as { response?: unknown })?.response;

/** A passkey that did not sign in: logged, a ledger row, and the refusal to answer with. */
async function passkeyRefused(ctx: ConsoleContext, req: FastifyRequest, user: UserConfig): Promise<FaxgateError> {
  ctx.log.warn({ remote: req.ip, user: user.name }, "WEB second factor refused: passkey did not check out");
  await ctx.deps.ledger.record({
    action: "sign-in-failed",
    actor: { kind: "person" },
    object: { kind: "person", id: user.name },
    door: "console",
    client: req.ip,
    detail: { factor: "passkey", reason: "passkey-refused" },
  });
  return new FaxgateError("USAGE", "the passkey did not sign in; try again", { httpStatus: 401 });
}

/**
 * The second step of a sign-in under way (its cookie): prove with a factor enrolled, or enrol one
 * when the role requires it. Success starts the session exactly as a password-only sign-in does.
 */
export function factorStepRoutes(
  app: FastifyInstance,
  ctx: ConsoleContext,
  factors: FactorSignIn,
  start: (
    req: FastifyRequest,
    reply: FastifyReply,
    user: UserConfig,
    detail: Record<string, string | boolean>,
  ) => Promise<unknown>,
): void {
  const done = async (
    req: FastifyRequest,
    reply: FastifyReply,
    at: FactorPendingKey,
    user: UserConfig,
    via: string,
    factor: string,
    idToken: string | null,
  ) => {
    await factors.finishPending(at);
    reply.clearCookie(FACTOR_COOKIE, { path: "/login/factor" });
    await start(req, reply, user, { via, factor });
    await ctx.deps.oidc?.idTokens.keep(req.session.sessionId, idToken, ctx.clock.now() + ctx.lifetimeMs);
    return { user: user.name, admin: req.session.admin, csrfToken: req.session.csrfToken };
  };
  const viaOf = (p: FactorPendingRecord) => p.via ?? "password";
  app.get("/login/factor", async (req) => {
    const { p, user } = await factors.pendingOf(req);
    const have = (await factors.settings.store.of(user.name)).map((f) => f.kind);
    return { user: p.user, enrolled: [...new Set(have)], totp: Boolean(factors.settings.sealer) };
  });
  app.post("/login/factor/totp", async (req, reply) => {
    const { at, p, user } = await factors.pendingOf(req);
    await factors.proveTotp(req, user.name, codeOf(req.body));
    return done(req, reply, at, user, viaOf(p), "totp", p.sealedIdToken);
  });
  app.post("/login/factor/passkey/options", async (req) => {
    const { at, p } = await factors.pendingOf(req);
    return factors.passkeyOptionsToSign(p.user, at);
  });
  app.post("/login/factor/passkey", async (req, reply) => {
    const { at, p, user } = await factors.pendingOf(req);
    if (!(await factors.provePasskey(user.name, at, responseOf(req.body)))) throw await passkeyRefused(ctx, req, user);
    return done(req, reply, at, user, viaOf(p), "passkey", p.sealedIdToken);
  });
  // enrolment within the sign-in: only for a person without a factor (else they prove one)
  const enrolling = async (req: FastifyRequest) => {
    const r = await factors.pendingOf(req);
    if ((await factors.settings.store.of(r.user.name)).length > 0)
      throw new FaxgateError("USAGE", "a factor is enrolled already: sign in with it", { httpStatus: 409 });
    return r;
  };
  app.post("/login/factor/enrol/totp", async (req) => {
    const { at, p } = await enrolling(req);
    return factors.beginTotp(p.user, at);
  });
  app.post("/login/factor/enrol/totp/confirm", async (req, reply) => {
    const { at, p, user } = await enrolling(req);
    await factors.confirmTotp(req, user.name, at, codeOf(req.body), nameOf(req.body, "Authenticator app"));
    return done(req, reply, at, user, viaOf(p), "totp", p.sealedIdToken);
  });
  app.post("/login/factor/enrol/passkey/options", async (req) => {
    const { at, p } = await enrolling(req);
    return factors.passkeyOptionsToCreate(p.user, at);
  });
  app.post("/login/factor/enrol/passkey", async (req, reply) => {
    const { at, p, user } = await enrolling(req);
    await factors.addPasskey(req, user.name, at, responseOf(req.body), nameOf(req.body, "Passkey"));
    return done(req, reply, at, user, viaOf(p), "passkey", p.sealedIdToken);
  });
}

/** A signed-in person's own factors: list, add (several, named), remove. Under the API's session and CSRF checks. */
export const factorRoutes: FastifyPluginAsync<{ factors: FactorSignIn }> = async (api, { factors }) => {
  api.get("/api/factors", async (req) => {
    const s = sessionOf(req);
    const list = await factors.settings.store.of(s.user);
    return {
      factors: list.map((f) => ({ id: f.id, kind: f.kind, name: f.name, createdAt: f.createdAt, usedAt: f.usedAt })),
      totp: Boolean(factors.settings.sealer),
    };
  });
  api.post("/api/factors/totp", async (req) => {
    const s = sessionOf(req);
    return factors.beginTotp(s.user, await factors.ceremonyOf(s));
  });
  api.post("/api/factors/totp/confirm", async (req) => {
    const s = sessionOf(req);
    await factors.confirmTotp(
      req,
      s.user,
      await factors.ceremonyOf(s),
      codeOf(req.body),
      nameOf(req.body, "Authenticator app"),
    );
    return { ok: true };
  });
  api.post("/api/factors/passkey/options", async (req) => {
    const s = sessionOf(req);
    return factors.passkeyOptionsToCreate(s.user, await factors.ceremonyOf(s));
  });
  api.post("/api/factors/passkey", async (req) => {
    const s = sessionOf(req);
    await factors.addPasskey(
      req,
      s.user,
      await factors.ceremonyOf(s),
      responseOf(req.body),
      nameOf(req.body, "Passkey"),
    );
    return { ok: true };
  });
};

/** POST /api/admin/factors/:user/reset: an operator removes every factor of a person (audited). */
export const factorResetRoutes: FastifyPluginAsync<{ factors: FactorSignIn; ctx: ConsoleContext }> = async (
  api,
  { factors, ctx },
) => {
  api.post("/api/admin/factors/:user/reset", async (req) => {
    const s = sessionOf(req);
    if (!s.admin) throw new FaxgateError("JOB_NOT_FOUND", "not found");
    const name = (req.params as { user: string }).user;
    if (!ctx.deps.users().some((u) => u.name === name))
      throw new FaxgateError("USAGE", "no such person", { httpStatus: 404 });
    const removed = await factors.settings.store.reset(name);
    ctx.log.info({ user: s.user, person: name, removed }, "WEB factors reset");
    await ctx.deps.ledger.record({
      action: "factor-reset",
      actor: { kind: "operator", id: s.user },
      object: { kind: "person", id: name },
      door: "console",
      client: req.ip,
      detail: { removed },
    });
    return { removed };
  });
};
