// Issue 50: a fleet behind a balancer without sticky sessions. Two gateways share one PostgreSQL;
// a sign-in through the OpenID provider begins on gateway A and its callback reaches gateway B
// (what a round-robin balancer does to the browser's second request). B finds the sign-in A kept
// in the store, signs the person in, and A knows the session too. The same callback again, on
// either gateway, is refused: a sign-in under way is used once. Sign-out on A then signs out at
// the provider with the ID token B kept. A person without a second factor at the provider but
// with one here is called back on B and gives the code on A. One begun longer ago than it lives
// is gone. Skips where PostgreSQL is not installed.
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generate } from "otplib";
import { newTotp, TotpSealer } from "../../src/auth/totp.js";
import { putOidcPending, SignInFactors, takeOidcPending } from "../../src/store/index.js";
import { testLedger } from "../helpers/ledger.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { freePort } from "../helpers/net.js";
import { browserHop, oidcSection, startOidcProvider, type TestProvider } from "../helpers/oidc.js";
import { Agent } from "undici";
import { readFileSync } from "node:fs";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("OIDC sign-in across a fleet");
const TOTP_KEY = "factor-key-for-oidc-fleet-tests-0123456789";

/** A browser's cookie jar for one host (cookies do not depend on the port). */
type Jar = Map<string, string>;

type Hop = Awaited<ReturnType<typeof browserHop>>;
/** One browser request (test/helpers/oidc.ts), no redirect followed. */
const go = (url: URL, jar: Jar, dispatcher: Agent, post?: string): Promise<Hop> =>
  browserHop(url, jar, dispatcher, post);

describe.skipIf(postgres.missing)("OIDC sign-in across a fleet", () => {
  let provider: TestProvider;
  let a: TestGateway;
  let b: TestGateway;
  let dispatcher: Agent;
  let originA: string;
  let originB: string;

  beforeAll(async () => {
    const database = await postgres.database();
    const [portA, portB] = [await freePort(), await freePort()];
    originA = `http://127.0.0.1:${portA}`;
    originB = `http://127.0.0.1:${portB}`;
    provider = await startOidcProvider({
      accounts: { alice: { email: "alice@example.com", groups: ["fax-users"] } },
      redirectUri: `${originA}/oidc/callback`,
      postLogoutRedirectUri: `${originA}/login.html`,
    });
    const gateway = (name: string, port: number) =>
      startGateway({
        name,
        config: {
          database,
          web: {
            listen: `127.0.0.1:${port}`,
            // the fleet's one public address (the balancer's); here A's, which the provider knows
            publicUrl: originA,
            oidc: oidcSection(provider, { groups: ["fax-users"] }),
            factors: { totpKey: TOTP_KEY },
          },
        },
      });
    a = await gateway("oidc-fleet-a", portA);
    b = await gateway("oidc-fleet-b", portB);
    dispatcher = new Agent({ connect: { ca: readFileSync(provider.caFile, "utf8") } });
  }, 180_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await provider?.stop();
    await dispatcher?.close();
  });

  /** From the console's redirect to the provider, through its login form, to the callback address. */
  async function throughProvider(start: Hop, providerJar: Jar, form: string): Promise<URL> {
    let hop = start;
    let url = new URL(hop.location!);
    for (let i = 0; i < 10; i++) {
      hop = await go(url, providerJar, dispatcher);
      const action = /action="([^"]+)"/.exec(hop.text);
      if (hop.status === 200 && action) hop = await go(new URL(action[1]!, url), providerJar, dispatcher, form);
      expect(hop.location, hop.text.slice(0, 200)).toBeTruthy();
      url = new URL(hop.location!, url);
      if (url.origin === originA && url.pathname === "/oidc/callback") return url;
    }
    throw new Error("the provider never sent the browser back");
  }

  /** Signs out with `session` on `origin`: the provider's sign-out address it answers, if any. */
  async function signOut(origin: string, session: string): Promise<URL | null> {
    const cookie = `faxgate_session=${session}`;
    const me = await request(`${origin}/api/session`, { headers: { cookie } });
    const { csrfToken } = (await me.body.json()) as { csrfToken: string };
    const r = await request(`${origin}/logout`, { method: "POST", headers: { cookie, "x-csrf-token": csrfToken } });
    const body = (await r.body.json()) as { ok: boolean; signOutUrl?: string };
    expect(r.statusCode, JSON.stringify(body)).toBe(200);
    return body.signOutUrl ? new URL(body.signOutUrl) : null;
  }

  /** The ID tokens kept, as stored: none may hold `token` in clear. */
  const keptTokens = async () => JSON.stringify(await a.gw.store.sql.all("SELECT * FROM oidc_id_tokens"));

  it("begun on A, called back on B: signed in, and the callback works once", async () => {
    const jar: Jar = new Map();
    const providerJar: Jar = new Map();
    // A: the start; its cookie names the sign-in under way
    let hop = await go(new URL(`${originA}/oidc/start`), jar, dispatcher);
    expect(hop.status).toBe(302);
    expect(jar.has("faxgate_oidc")).toBe(true);
    // the provider: its login page, the account with a second factor, back to the console
    const callback = await throughProvider(hop, providerJar, "account=alice&mfa=on");
    // the balancer sends the callback to B
    const onB = new URL(`${callback.pathname}${callback.search}`, originB);
    const oidcCookie = jar.get("faxgate_oidc")!;
    hop = await go(onB, jar, dispatcher);
    expect(hop.status, hop.text.slice(0, 300)).toBe(302);
    expect(hop.location).toBe("/");
    const session = jar.get("faxgate_session");
    expect(session).toBeTruthy();
    // both gateways know the session (the store's)
    for (const origin of [originA, originB]) {
      const r = await request(`${origin}/api/session`, { headers: { cookie: `faxgate_session=${session}` } });
      expect(r.statusCode).toBe(200);
      expect(((await r.body.json()) as { user: string }).user).toBe("alice");
    }
    // the same callback again, with the same cookie, on A: used once, refused
    const again = await go(
      new URL(`${callback.pathname}${callback.search}`, originA),
      new Map([["faxgate_oidc", oidcCookie]]),
      dispatcher,
    );
    expect(again.status).toBe(400);
    expect(again.text).toContain("another browser");
    // signed out on A: A finds the ID token B kept (sealed) and sends the browser to the provider with it
    expect(await keptTokens()).toContain("v1.");
    const out = await signOut(originA, session!);
    const hint = out?.searchParams.get("id_token_hint");
    expect(hint, String(out)).toBeTruthy();
    expect(hint!.split(".")).toHaveLength(3);
    expect(await keptTokens()).toBe("[]");
  }, 120_000);

  it("without a second factor at the provider: called back on B, the code given on A", async () => {
    // alice has an authenticator app enrolled here (as the console's enrolment keeps it)
    const totp = newTotp("faxgate", "alice");
    await new SignInFactors(a.gw.store.sql).add({
      id: "alice-app",
      user: "alice",
      kind: "totp",
      name: "Phone",
      credentialId: null,
      publicKey: null,
      transports: [],
      sealedSecret: new TotpSealer(TOTP_KEY).seal(totp.secret),
      createdAt: new Date().toISOString(),
    });
    const jar: Jar = new Map();
    const started = await go(new URL(`${originA}/oidc/start`), jar, dispatcher);
    const callback = await throughProvider(started, new Map(), "account=alice");
    const hop = await go(new URL(`${callback.pathname}${callback.search}`, originB), jar, dispatcher);
    expect(hop.status, hop.text.slice(0, 300)).toBe(302);
    expect(hop.location).toMatch(/^\/login\.html\?factor=1/);
    expect(jar.has("faxgate_session")).toBe(false);
    const pending = jar.get("faxgate_factor");
    expect(pending).toBeTruthy();
    const code = await generate({ secret: totp.secret, epoch: Math.floor(Date.now() / 1000) });
    const r = await request(`${originA}/login/factor/totp`, {
      method: "POST",
      headers: { cookie: `faxgate_factor=${pending}`, "content-type": "application/json" },
      body: JSON.stringify({ code }),
    });
    const body = (await r.body.json()) as { user?: string; error?: string };
    expect(r.statusCode, JSON.stringify(body)).toBe(200);
    expect(body.user).toBe("alice");
    // how she proved herself first travelled with the sign-in through the store
    const row = (await testLedger(a.gw.store).rows()).filter((x) => x.action === "signed-in").at(-1);
    expect(row?.detail).toEqual({ via: "oidc", factor: "totp" });
    // the ID token came along (sealed, through the store): sign-out on B still signs out at the provider
    const session = r.headers["set-cookie"]!.toString().match(/faxgate_session=([^;]+)/)![1]!;
    const kept = await keptTokens();
    const out = await signOut(originB, session);
    const hint = out?.searchParams.get("id_token_hint");
    expect(hint, String(out)).toBeTruthy();
    expect(kept).not.toContain(hint!);
  }, 120_000);

  it("a sign-in under way expires", async () => {
    const db = a.gw.store.sql;
    const p = { state: "s", nonce: "n", codeVerifier: "v", next: "/" };
    const now = Date.now();
    await putOidcPending(db, "id-old", p, now + 1000, now);
    expect(await takeOidcPending(db, "id-old", now + 1001)).toBeNull();
    await putOidcPending(db, "id-new", p, now + 1000, now);
    expect(await takeOidcPending(db, "id-new", now + 10)).toEqual(p);
    expect(await takeOidcPending(db, "id-new", now + 10)).toBeNull();
    // the id is kept only as its hash
    const rows = await db.all<{ id_hash: string }>("SELECT id_hash FROM oidc_pending");
    expect(JSON.stringify(rows)).not.toContain("id-");
  });
});
