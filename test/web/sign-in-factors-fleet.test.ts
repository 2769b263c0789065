// Issue 50: second factors in a fleet behind a balancer without sticky sessions. Two gateways
// share one PostgreSQL; the password goes to gateway A and the code (or the passkey's answer) to
// gateway B, as a round-robin balancer sends a browser's requests. B finds the sign-in A kept in
// the store and signs the person in; that sign-in is then spent on every gateway, and one begun
// longer ago than ten minutes is gone. Enrolment ceremonies (a TOTP secret being confirmed, a
// passkey's challenge) begun on A finish on B. Wrong codes count against the account on both.
// The passkey part drives Chromium's virtual authenticator through a small balancer in this file
// that sends each ceremony's options to A and its answer to B. Skips where PostgreSQL is absent.
import { existsSync } from "node:fs";
import http from "node:http";
import { generate } from "otplib";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FactorPending, MAX_PER_PERSON } from "../../src/store/sql/factor-pending.js";
import { PASSWORDS, consoleGateway, pageWithPasskeyDevice, signIn } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { freePort } from "../helpers/net.js";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("second factors across a fleet");
const CHROMIUM = process.env.FAXGATE_CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
const TOTP_KEY = "factor-key-for-fleet-tests-0123456789";

let offset = 0;
const clock = { now: () => Date.now() + offset };
const codeAt = (secret: string) => generate({ secret, epoch: Math.floor(clock.now() / 1000) });

interface Answer {
  status: number;
  body: Record<string, unknown>;
  cookies: string[];
}

async function send(
  base: string,
  path: string,
  init: { cookie?: string; body?: unknown; form?: URLSearchParams; csrf?: string },
) {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: {
      ...(init.cookie ? { cookie: init.cookie } : {}),
      ...(init.form ? {} : { "content-type": "application/json" }),
      ...(init.csrf ? { "x-csrf-token": init.csrf } : {}),
    },
    body: init.form ?? JSON.stringify(init.body ?? {}),
  });
  const cookies = r.headers.getSetCookie().map((c) => c.split(";")[0]!);
  return { status: r.status, body: (await r.json()) as Record<string, unknown>, cookies } satisfies Answer;
}

const login = (base: string, user: keyof typeof PASSWORDS) =>
  send(base, "/login", { form: new URLSearchParams({ user, password: PASSWORDS[user] }) });
const factorCookie = (a: Answer) => a.cookies.find((c) => c.startsWith("faxgate_factor="))!;
const sessionCookie = (a: Answer) => a.cookies.find((c) => c.startsWith("faxgate_session="));

async function sessionUser(base: string, cookie: string): Promise<string | null> {
  const r = await fetch(`${base}/api/session`, { headers: { cookie } });
  return r.ok ? ((await r.json()) as { user: string }).user : null;
}

/**
 * A balancer without sticky sessions, as far as the ceremonies go: every ".../options" request to
 * A, every answer to one to B, anything else in turn. `hits` says where each ceremony step went.
 */
function balancer(a: string, b: string) {
  const hits: Array<{ path: string; to: "A" | "B" }> = [];
  let turn = 0;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    const ceremony = /^\/(login\/factor|api\/factors)\//.test(path);
    const to = path.endsWith("/options") ? "A" : ceremony ? "B" : turn++ % 2 === 0 ? "A" : "B";
    if (ceremony) hits.push({ path, to });
    const target = new URL(to === "A" ? a : b);
    const out = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  return { server, hits };
}

describe.skipIf(postgres.missing)("second factors across a fleet", () => {
  let a: TestGateway;
  let b: TestGateway;
  let A = "";
  let B = "";
  let front: ReturnType<typeof balancer>;
  let frontUrl = "";
  let opsSecret = "";
  const cookiesSeen: string[] = [];

  beforeAll(async () => {
    const database = await postgres.database();
    // the fleet's one public address is the balancer's; a passkey is bound to its host name
    const frontPort = await freePort();
    frontUrl = `http://localhost:${frontPort}`;
    const gateway = async (name: string) =>
      startGateway({
        ...consoleGateway({
          clock,
          config: {
            database,
            web: {
              listen: `127.0.0.1:${await freePort()}`,
              publicUrl: frontUrl,
              factors: { require: { admin: "passkey-or-totp" }, totpKey: TOTP_KEY },
            },
          },
        }),
        name,
      });
    a = await gateway("factors-fleet-a");
    b = await gateway("factors-fleet-b");
    A = a.url("web");
    B = b.url("web");
    front = balancer(A, B);
    await new Promise<void>((ok) => front.server.listen(frontPort, "127.0.0.1", ok));
  }, 180_000);
  afterAll(async () => {
    front?.server.closeAllConnections();
    await new Promise((ok) => front?.server.close(ok));
    await a?.stop();
    await b?.stop();
  });

  it("an enrolment at the first sign-in, begun on A, is confirmed on B; its secret is kept sealed", async () => {
    const first = await login(A, "ops");
    expect(first.body).toEqual({ secondFactor: { methods: ["passkey", "totp"], enrol: true } });
    const pending = factorCookie(first);
    cookiesSeen.push(pending.split("=")[1]!);
    const begun = await send(A, "/login/factor/enrol/totp", { cookie: pending });
    expect(begun.status).toBe(200);
    opsSecret = begun.body.secret as string;
    // the store has neither the secret nor the cookie's id in clear
    const rows = JSON.stringify(await a.gw.store.sql.all("SELECT * FROM factor_pending"));
    expect(rows).toContain("sign-in");
    expect(rows).not.toContain(opsSecret);
    expect(rows).not.toContain(cookiesSeen[0]);

    const ok = await send(B, "/login/factor/enrol/totp/confirm", {
      cookie: pending,
      body: { code: await codeAt(opsSecret) },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ user: "ops", admin: true });
    expect(await sessionUser(A, sessionCookie(ok)!)).toBe("ops");
    // the enrolment's sign-in is spent: the same cookie again, on A, is refused and says why
    const again = await send(A, "/login/factor/enrol/totp/confirm", { cookie: pending, body: { code: "123456" } });
    expect(again.status).toBe(401);
    expect(again.body.error).toContain("no sign-in waiting for a second factor");
  });

  it("password on A, code on B: signed in; the same cookie with a new code is refused after", async () => {
    offset += 30_000;
    const first = await login(A, "ops");
    expect(first.body).toEqual({ secondFactor: { methods: ["totp"], enrol: false } });
    const pending = factorCookie(first);
    cookiesSeen.push(pending.split("=")[1]!);
    const done = await send(B, "/login/factor/totp", { cookie: pending, body: { code: await codeAt(opsSecret) } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const session = sessionCookie(done)!;
    expect(await sessionUser(A, session)).toBe("ops");
    expect(await sessionUser(B, session)).toBe("ops");
    // a replay with a code that is itself good (the next step's): only the spent sign-in refuses it
    offset += 30_000;
    const replay = await send(A, "/login/factor/totp", { cookie: pending, body: { code: await codeAt(opsSecret) } });
    expect(replay.status).toBe(401);
    expect(replay.body.error).toMatch(/no sign-in waiting for a second factor \(finished already/);
    expect(sessionCookie(replay)).toBeUndefined();
  });

  it("a sign-in waiting for its factor expires after ten minutes, on every gateway", async () => {
    offset += 30_000;
    const pending = factorCookie(await login(A, "ops"));
    offset += 10 * 60_000 + 1000;
    const late = await send(B, "/login/factor/totp", { cookie: pending, body: { code: await codeAt(opsSecret) } });
    expect(late.status).toBe(401);
    expect(late.body.error).toContain("expired");
  });

  it("a flood of first steps keeps only the person's newest few, on PostgreSQL too", async () => {
    const pending = new FactorPending(b.gw.store.sql, clock.now);
    for (let i = 0; i < 20; i++)
      await pending.begin({ kind: "sign-in", id: `flood-${i}` }, "nopass", "password", clock.now() + 600_000);
    const n = await a.gw.store.sql.get<{ n: number }>(
      "SELECT count(*) AS n FROM factor_pending WHERE user_name = 'nopass'",
    );
    expect(Number(n!.n)).toBe(MAX_PER_PERSON);
    expect(await pending.get({ kind: "sign-in", id: "flood-19" })).not.toBeNull();
  });

  it("a signed-in person's authenticator, begun on A, is confirmed on B", async () => {
    const alice = await signIn(A, "alice", PASSWORDS.alice);
    const begun = await send(A, "/api/factors/totp", { cookie: alice.cookie, csrf: alice.csrf });
    expect(begun.status).toBe(200);
    const secret = begun.body.secret as string;
    const rows = JSON.stringify(await a.gw.store.sql.all("SELECT * FROM factor_pending WHERE kind = 'enrol'"));
    expect(rows).toContain("v1.");
    expect(rows).not.toContain(secret);
    const confirmed = await send(B, "/api/factors/totp/confirm", {
      cookie: alice.cookie,
      csrf: alice.csrf,
      body: { code: await codeAt(secret), name: "Phone" },
    });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    // the secret is taken once: confirming it again (with the next step's code) enrols nothing more
    offset += 30_000;
    const twice = await send(A, "/api/factors/totp/confirm", {
      cookie: alice.cookie,
      csrf: alice.csrf,
      body: { code: await codeAt(secret), name: "Phone again" },
    });
    expect(twice.status).toBe(400);
    expect(twice.body.error).toContain("begin the authenticator enrolment first");
    const kept = await a.gw.store.sql.all<{ name: string }>(
      "SELECT name FROM sign_in_factors WHERE user_name = 'alice'",
    );
    expect(kept.map((r) => r.name)).toEqual(["Phone"]);
  });

  it("wrong codes count against the account on every gateway", async () => {
    offset += 16 * 60_000;
    const pending = factorCookie(await login(A, "ops"));
    const statuses: number[] = [];
    for (const base of [A, B, A, B, A, B])
      statuses.push((await send(base, "/login/factor/totp", { cookie: pending, body: { code: "999999" } })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    offset += 16 * 60_000;
  });

  it.skipIf(!hasChromium)(
    "a passkey's ceremonies begun on A finish on B, in Chromium through the balancer",
    async () => {
      let browser: Browser | null = null;
      try {
        browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
        const { page } = await pageWithPasskeyDevice(browser);
        const whoAmI = () =>
          page.evaluate(async () => {
            const r = await fetch("/api/session", { credentials: "same-origin" });
            return r.ok ? ((await r.json()) as { user: string }).user : null;
          });
        const password = async () => {
          await page.goto(`${frontUrl}/login.html`);
          await page.getByLabel("User name").fill("bob");
          await page.getByLabel("Password").fill(PASSWORDS.bob);
          await page.getByRole("button", { name: "Sign in" }).click();
        };
        // bob needs no factor: signed in by the password, he adds a passkey
        await password();
        await page.waitForURL((u) => u.pathname === "/");
        await page.goto(`${frontUrl}/factors.html`);
        await page.getByRole("button", { name: "Add a passkey" }).click();
        await page.locator("#factors tbody tr").first().waitFor();
        // signed out, the password now leads to the passkey
        await page.getByRole("button", { name: "Sign out" }).click();
        await page.waitForURL((u) => u.pathname === "/login.html");
        expect(await whoAmI()).toBeNull();
        await password();
        await page.getByRole("button", { name: "Use a passkey" }).click();
        await page.waitForURL((u) => u.pathname === "/");
        expect(await whoAmI()).toBe("bob");
        expect(front.hits).toEqual([
          { path: "/api/factors/passkey/options", to: "A" },
          { path: "/api/factors/passkey", to: "B" },
          { path: "/login/factor/passkey/options", to: "A" },
          { path: "/login/factor/passkey", to: "B" },
        ]);
      } finally {
        await browser?.close();
      }
    },
    90_000,
  );

  it("no cookie id or TOTP secret reached either gateway's log", () => {
    const logs = [...a.logs, ...b.logs].join("\n");
    expect(logs).toContain("WEB sign-in waits for a second factor");
    for (const secret of [opsSecret, ...cookiesSeen]) expect(logs).not.toContain(secret);
  });
});
