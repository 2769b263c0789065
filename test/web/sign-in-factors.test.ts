// Issue 50 item 5, over the console's HTTP API of a real gateway: TOTP as a second factor after
// the password. A role that web.factors.require names enrols at its first sign-in (no session
// before); the secret is kept sealed; a code is taken once; wrong codes lock the account out; an
// operator resets a person's factors (and `faxgate factors reset` does the same), each audited.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { generate } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PASSWORDS, consoleGateway, signIn } from "./rig.js";
import { runCli } from "../helpers/cli.js";
import { TEST_KEYS } from "../helpers/emulator.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { testLedger } from "../helpers/ledger.js";

const TOTP_KEY = "factor-key-for-tests-0123456789abcdef";
let rig: TestGateway;
let offset = 0;
const clock = { now: () => Date.now() + offset };

/** POST /login; answers the status, the body and the cookies set ("name=value" each). */
async function login(user: string, password: string) {
  const r = await fetch(`${rig.url("web")}/login`, { method: "POST", body: new URLSearchParams({ user, password }) });
  const cookies = r.headers.getSetCookie().map((c) => c.split(";")[0]!);
  return { status: r.status, body: (await r.json()) as Record<string, unknown>, cookies };
}

async function post(path: string, cookie: string, body: unknown = {}, csrf?: string) {
  const r = await fetch(`${rig.url("web")}${path}`, {
    method: "POST",
    headers: { cookie, "content-type": "application/json", ...(csrf ? { "x-csrf-token": csrf } : {}) },
    body: JSON.stringify(body),
  });
  const cookies = r.headers.getSetCookie().map((c) => c.split(";")[0]!);
  return { status: r.status, body: (await r.json()) as Record<string, unknown>, cookies };
}

const codeAt = (secret: string, ms: number) => generate({ secret, epoch: Math.floor(ms / 1000) });
const factorCookie = (cookies: string[]) => cookies.find((c) => c.startsWith("faxgate_factor="))!;
const sessionCookie = (cookies: string[]) => cookies.find((c) => c.startsWith("faxgate_session="));
const rows = async (action: string) => (await testLedger(rig.gw.store).rows()).filter((r) => r.action === action);

describe("second factors: TOTP after the password", () => {
  let secret = "";

  beforeAll(async () => {
    rig = await startGateway(
      consoleGateway({
        clock,
        config: { web: { factors: { require: { admin: "passkey-or-totp" }, totpKey: TOTP_KEY } } },
      }),
    );
  }, 120_000);
  afterAll(() => rig?.stop());

  it("a person whose role needs no factor and has none signs in with the password alone", async () => {
    const r = await login("alice", PASSWORDS.alice);
    expect(r.status).toBe(200);
    expect(r.body.csrfToken).toEqual(expect.any(String));
    expect(sessionCookie(r.cookies)).toBeDefined();
  });

  it("an operator without a factor enrols one at the first sign-in, and has no session before", async () => {
    const first = await login("ops", PASSWORDS.ops);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ secondFactor: { methods: ["passkey", "totp"], enrol: true } });
    expect(sessionCookie(first.cookies)).toBeUndefined();
    const pending = factorCookie(first.cookies);
    // the waiting sign-in is no session
    expect((await fetch(`${rig.url("web")}/api/session`, { headers: { cookie: pending } })).status).toBe(401);

    const begun = await post("/login/factor/enrol/totp", pending);
    expect(begun.status).toBe(200);
    secret = begun.body.secret as string;
    expect(begun.body.uri).toMatch(/^otpauth:\/\/totp\/faxgate:ops\?secret=/);

    const wrong = await post("/login/factor/enrol/totp/confirm", pending, { code: "000000" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toContain("wrong code");

    const ok = await post("/login/factor/enrol/totp/confirm", pending, { code: await codeAt(secret, clock.now()) });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ user: "ops", admin: true });
    expect(sessionCookie(ok.cookies)).toBeDefined();

    // kept sealed: the database alone does not give the codes
    const stored = await rig.gw.store.sql.all<{ sealed_secret: string }>("SELECT sealed_secret FROM sign_in_factors");
    expect(stored).toHaveLength(1);
    expect(stored[0]!.sealed_secret).not.toContain(secret);
    const enrolled = await rows("factor-enrolled");
    expect(enrolled.at(-1)).toMatchObject({ object: { kind: "person", id: "ops" }, detail: { kind: "totp" } });
  });

  it("the next sign-in asks for a code; the code just used is refused, the next one is taken", async () => {
    const r = await login("ops", PASSWORDS.ops);
    expect(r.body).toEqual({ secondFactor: { methods: ["totp"], enrol: false } });
    const pending = factorCookie(r.cookies);
    const again = await post("/login/factor/totp", pending, { code: await codeAt(secret, clock.now()) });
    expect(again.status).toBe(401);
    expect(again.body.error).toContain("used already");
    offset += 30_000;
    const next = await post("/login/factor/totp", pending, { code: await codeAt(secret, clock.now()) });
    expect(next.status).toBe(200);
    expect(sessionCookie(next.cookies)).toBeDefined();
    const row = (await rows("signed-in")).at(-1)!;
    expect(row.detail).toEqual({ via: "password", factor: "totp" });
    // the waiting sign-in is spent
    expect((await post("/login/factor/totp", pending, { code: "123456" })).status).toBe(401);
  });

  it("wrong codes count toward a lockout of the account", async () => {
    // the wrong and used codes above are out of the 15 minutes
    offset += 16 * 60_000;
    const r = await login("ops", PASSWORDS.ops);
    const pending = factorCookie(r.cookies);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post("/login/factor/totp", pending, { code: "999999" })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    // even the right code waits out the lockout
    offset += 30_000;
    expect((await post("/login/factor/totp", pending, { code: await codeAt(secret, clock.now()) })).status).toBe(429);
    const failed = (await rows("sign-in-failed")).filter((x) => x.detail.factor === "totp");
    expect(failed.length).toBeGreaterThanOrEqual(5);
    offset += 16 * 60_000;
  });

  it("a signed-in person adds an authenticator; an operator resets it, audited; then the password alone signs in", async () => {
    const alice = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const begun = await post("/api/factors/totp", alice.cookie, {}, alice.csrf);
    expect(begun.status).toBe(200);
    const aliceSecret = begun.body.secret as string;
    const confirmed = await post(
      "/api/factors/totp/confirm",
      alice.cookie,
      { code: await codeAt(aliceSecret, clock.now()), name: "Phone" },
      alice.csrf,
    );
    expect(confirmed.status).toBe(200);
    const listed = await fetch(`${rig.url("web")}/api/factors`, { headers: { cookie: alice.cookie } });
    expect(((await listed.json()) as { factors: Array<{ name: string }> }).factors.map((f) => f.name)).toEqual([
      "Phone",
    ]);
    expect((await login("alice", PASSWORDS.alice)).body).toEqual({ secondFactor: { methods: ["totp"], enrol: false } });

    // not an operator: the same 404 as a page not there
    expect((await post("/api/admin/factors/alice/reset", alice.cookie, {}, alice.csrf)).status).toBe(404);

    offset += 30_000;
    const opsStart = await login("ops", PASSWORDS.ops);
    const opsDone = await post("/login/factor/totp", factorCookie(opsStart.cookies), {
      code: await codeAt(secret, clock.now()),
    });
    const ops = { cookie: sessionCookie(opsDone.cookies)!, csrf: opsDone.body.csrfToken as string };
    const reset = await post("/api/admin/factors/alice/reset", ops.cookie, {}, ops.csrf);
    expect(reset.status).toBe(200);
    expect(reset.body).toEqual({ removed: 1 });
    const row = (await rows("factor-reset")).at(-1)!;
    expect(row).toMatchObject({
      actor: { kind: "operator", id: "ops" },
      object: { kind: "person", id: "alice" },
      door: "console",
      detail: { removed: 1 },
    });
    const after = await login("alice", PASSWORDS.alice);
    expect(after.body.csrfToken).toEqual(expect.any(String));
  });

  it("`faxgate factors reset` removes a person's factors from the command line, audited", async () => {
    const config = path.join(rig.dir, "cli.yaml");
    writeFileSync(
      config,
      [
        `api: {baseUrl: "${rig.emu.baseUrl}", caFile: "${rig.emu.caFile}"}`,
        `data: ${path.join(rig.dir, "data")}`,
        "users:",
        `  - {name: ops, email: admin@example.com, apiKey: ${TEST_KEYS.admin}, role: admin}`,
        "",
      ].join("\n"),
    );
    const list = await runCli(["factors", "list", "ops", "--config", config]);
    expect(list.stdout).toMatch(/^totp +Authenticator app/m);
    const r = await runCli(["factors", "reset", "ops", "--by", "night-operator", "--config", config]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("removed 1 factor of ops");
    const row = (await rows("factor-reset")).at(-1)!;
    expect(row).toMatchObject({
      actor: { kind: "operator", id: "night-operator" },
      object: { kind: "person", id: "ops" },
      door: "cli",
    });
    const again = await login("ops", PASSWORDS.ops);
    expect(again.body).toEqual({ secondFactor: { methods: ["passkey", "totp"], enrol: true } });
  });
});
