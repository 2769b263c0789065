// The console's sessions and CSRF over real HTTP against a whole gateway: a state-changing call
// without its token or with a wrong one is refused naming which, and changes nothing; a session
// ends after web.idleTimeout without a request and after web.sessionLifetime in any case; sign-out
// ends it for good; and signing in never keeps an id the browser brought.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_PDF } from "../helpers/store.js";
import type { WireJson } from "../helpers/wire-json.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { consoleGateway, PASSWORDS, signIn } from "./rig.js";

let rig: TestGateway;
let base = "";
let offset = 0;
beforeAll(async () => {
  rig = await startGateway(
    consoleGateway({
      delayMs: 60_000,
      clock: { now: () => Date.now() + offset },
      config: { web: { idleTimeout: "30m" } },
    }),
  );
  base = rig.url("web");
}, 60_000);
afterAll(async () => {
  await rig?.stop();
});

const json = async (r: Response): Promise<WireJson> => r.json();
const me = (cookie: string) => fetch(`${base}/api/session`, { headers: { cookie } });

async function queueFax(s: { cookie: string; csrf: string }): Promise<string> {
  const fd = new FormData();
  fd.append("to", "+15550107777");
  fd.append("files", new Blob([TEST_PDF], { type: "application/pdf" }), "page.pdf");
  const r = await fetch(`${base}/api/faxes`, {
    method: "POST",
    headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
    body: fd,
  });
  expect(r.status, await r.clone().text()).toBe(200);
  return (await json(r)).id as string;
}

describe("CSRF", () => {
  it("refuses a POST without the token, or with a wrong one, naming which, and changes nothing", async () => {
    offset = 0;
    const s = await signIn(base, "alice", PASSWORDS.alice);
    const other = await signIn(base, "bob", PASSWORDS.bob);
    const id = await queueFax(s);
    // resend: a call that changes something (a new job) whatever state the first job is in by now
    const resend = (headers: Record<string, string>) =>
      fetch(`${base}/api/jobs/${id}/resend`, { method: "POST", headers: { cookie: s.cookie, ...headers } });
    const total = async () =>
      (await fetch(`${base}/api/jobs`, { headers: { cookie: s.cookie } })).headers.get("x-total-count");
    const before = await total();

    const none = await resend({});
    expect(none.status).toBe(403);
    expect(await json(none)).toMatchObject({ code: "CSRF_MISSING", error: expect.stringMatching(/no X-CSRF-Token/) });
    const empty = await resend({ "x-csrf-token": "" });
    expect((await json(empty)).code).toBe("CSRF_MISSING");

    for (const wrong of ["x".repeat(s.csrf.length), other.csrf, `${s.csrf}x`]) {
      const r = await resend({ "x-csrf-token": wrong });
      expect(r.status, wrong).toBe(403);
      expect(await json(r)).toMatchObject({ code: "CSRF_WRONG", error: expect.stringMatching(/wrong X-CSRF-Token/) });
    }
    expect(await total()).toBe(before);
    expect(rig.logs.join("\n")).toMatch(/WEB refused: no CSRF token/);
    expect(rig.logs.join("\n")).toMatch(/WEB refused: wrong CSRF token/);
    const right = await resend({ "x-csrf-token": s.csrf });
    expect(right.status, await right.clone().text()).toBe(200);
    expect(Number(await total())).toBe(Number(before) + 1);
  }, 60_000);

  it("does not sign out without the token: the session stays", async () => {
    offset = 0;
    const s = await signIn(base, "alice", PASSWORDS.alice);
    const r = await fetch(`${base}/logout`, { method: "POST", headers: { cookie: s.cookie } });
    expect(r.status).toBe(403);
    expect((await json(r)).code).toBe("CSRF_MISSING");
    expect((await me(s.cookie)).status).toBe(200);
  }, 60_000);
});

describe("sessions", () => {
  it("end after web.idleTimeout without a request, and a request keeps them", async () => {
    offset = 0;
    const s = await signIn(base, "alice", PASSWORDS.alice);
    const idle = await signIn(base, "alice", PASSWORDS.alice);
    offset = 29 * 60_000;
    expect((await me(s.cookie)).status).toBe(200);
    offset = 58 * 60_000;
    expect((await me(s.cookie)).status).toBe(200);
    // 58 minutes without a request: past the 30
    const gone = await me(idle.cookie);
    expect(gone.status).toBe(401);
    // the browser is told to forget the cookie of a session that ended
    expect(gone.headers.get("set-cookie")).toMatch(/^faxgate_session=; .*Max-Age=0/);
    offset = 89 * 60_000;
    expect((await me(s.cookie)).status).toBe(401);
  }, 60_000);

  it("end after web.sessionLifetime however busy", async () => {
    offset = 0;
    const s = await signIn(base, "alice", PASSWORDS.alice);
    // a request every 20 minutes, within the idle time, for 12 hours
    for (let minutes = 20; minutes < 12 * 60; minutes += 20) {
      offset = minutes * 60_000;
      expect((await me(s.cookie)).status, `${minutes} min`).toBe(200);
    }
    offset = (12 * 60 + 1) * 60_000;
    expect((await me(s.cookie)).status).toBe(401);
  }, 60_000);

  it("end at sign-out: the cookie is cleared and the old one and its token are worth nothing", async () => {
    offset = 0;
    const s = await signIn(base, "alice", PASSWORDS.alice);
    const out = await fetch(`${base}/logout`, {
      method: "POST",
      headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
    });
    expect(out.status).toBe(200);
    const cleared = out.headers.get("set-cookie") ?? "";
    expect(cleared).toMatch(/^faxgate_session=; .*Max-Age=0/);
    expect(cleared).toMatch(/; HttpOnly/);
    expect(cleared).toMatch(/; SameSite=Strict/);
    expect((await me(s.cookie)).status).toBe(401);
    const after = await fetch(`${base}/api/jobs/x/cancel`, {
      method: "POST",
      headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
    });
    expect(after.status).toBe(401);
    expect(rig.logs.join("\n")).toMatch(/WEB signed out/);
  }, 60_000);

  it("sign-in gives a new id and ends the one the browser brought", async () => {
    offset = 0;
    const s = await signIn(base, "alice", PASSWORDS.alice);
    const again = await fetch(`${base}/login`, {
      method: "POST",
      headers: { cookie: s.cookie },
      body: new URLSearchParams({ user: "bob", password: PASSWORDS.bob }),
    });
    expect(again.status).toBe(200);
    const cookie = (again.headers.get("set-cookie") ?? "").split(";")[0]!;
    expect(cookie).toMatch(/^faxgate_session=[A-Za-z0-9_-]{43}$/);
    expect(cookie).not.toBe(s.cookie);
    expect((await me(s.cookie)).status).toBe(401);
    expect(await json(await me(cookie))).toMatchObject({ user: "bob" });
  }, 60_000);
});
