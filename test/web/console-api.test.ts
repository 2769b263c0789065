// The console's JSON API over real HTTP against a whole gateway and the emulator: sign-in and its
// lockout, cookie flags, CSRF refusal, another user's job answering as no job at all, the new-fax
// upload through the common accept step, and no secret in any answer or page.
import { readFileSync } from "node:fs";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_KEYS } from "../helpers/emulator.js";
import { RawSmtp } from "../helpers/raw-smtp.js";
import { TEST_PDF } from "../helpers/store.js";
import type { WireJson } from "../helpers/wire-json.js";
import { PASSWORDS, signIn, consoleGateway } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

const json = async (r: Response): Promise<WireJson> => r.json();

let rig: TestGateway;
beforeAll(async () => {
  rig = await startGateway(consoleGateway({ delayMs: 60_000 }));
}, 60_000);
afterAll(async () => {
  await rig?.stop();
});

function pdfForm(
  fields: Record<string, string | string[]>,
  files: Array<{ name: string; data: Buffer; type?: string }> = [{ name: "page.pdf", data: TEST_PDF }],
): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) for (const x of [v].flat()) fd.append(k, x);
  for (const f of files) fd.append("files", new Blob([f.data], { type: f.type ?? "application/pdf" }), f.name);
  return fd;
}

async function newFax(
  s: { cookie: string; csrf: string },
  fields: Record<string, string | string[]>,
  files?: Array<{ name: string; data: Buffer; type?: string }>,
) {
  return fetch(`${rig.url("web")}/api/faxes`, {
    method: "POST",
    headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
    body: pdfForm(fields, files),
  });
}

describe("web console API", () => {
  it("signs in with the SMTP password and sets a strict, httpOnly session cookie", async () => {
    const s = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    expect(s.setCookie).toMatch(/^faxgate_session=[A-Za-z0-9_-]{40,};/);
    expect(s.setCookie).toMatch(/; HttpOnly/);
    expect(s.setCookie).toMatch(/; SameSite=Strict/);
    expect(s.setCookie).not.toMatch(/Secure/); // plain http on loopback
    expect(s.csrf).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    const me = await fetch(`${rig.url("web")}/api/session`, { headers: { cookie: s.cookie } });
    expect(await json(me)).toEqual({ user: "alice", admin: false, csrfToken: s.csrf, inbox: [] });
    const anon = await fetch(`${rig.url("web")}/api/jobs`);
    expect(anon.status).toBe(401);
  });

  it("refuses a wrong password, an unknown user and a user without a password, with one answer", async () => {
    for (const [user, password] of [
      ["alice", "wrong"],
      ["nobody", "x"],
      ["nopass", ""],
      [PASSWORDS.bob, PASSWORDS.bob],
    ]) {
      const r = await fetch(`${rig.url("web")}/login`, {
        method: "POST",
        body: new URLSearchParams({ user: user!, password: password! }),
      });
      expect(r.status, user).toBe(401);
      expect(r.headers.get("set-cookie")).toBeNull();
      expect((await json(r)).error).toMatch(/wrong user name or password/);
    }
    // a password typed into the name field is not logged
    expect(rig.logs.join("\n")).not.toContain(PASSWORDS.bob);
  });

  it("sends security headers on pages and answers", async () => {
    for (const url of ["/", "/login.html", "/api/jobs"]) {
      const r = await fetch(`${rig.url("web")}${url}`);
      const csp = r.headers.get("content-security-policy") ?? "";
      expect(csp, url).toMatch(/script-src 'self'(;|$)/);
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
      expect(csp).toMatch(/frame-ancestors 'none'/);
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect(r.headers.get("referrer-policy")).toBe("no-referrer");
    }
    const page = await (await fetch(`${rig.url("web")}/`)).text();
    expect(page).not.toMatch(/<script>|<script [^>]*>[^<]/); // no inline script
  });

  it("queues an upload through the common accept step and lists it as `faxgate jobs --json` does", async () => {
    const s = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const r = await newFax(s, { to: ["+1 555 010 4242", "(555) 010-4343"], subject: "Quarterly figures", cover: "on" });
    expect(r.status, await r.clone().text()).toBe(200);
    const job = await json(r);
    expect(job.user).toBe("alice");
    expect(job.recipients.map((x: { number: string }) => x.number)).toEqual(["+15550104242", "+15550104343"]);
    expect(job.cover).toMatchObject({ enabled: true, subject: "Quarterly figures" });
    expect(job.documents).toEqual([{ name: "page.pdf", contentType: "application/pdf", bytes: TEST_PDF.length }]);
    const stored = await rig.gw.store.getJob(job.id);
    expect(stored!.meta.origin).toMatchObject({ via: "web console" });
    const list = await fetch(`${rig.url("web")}/api/jobs?search=quarterly`, { headers: { cookie: s.cookie } });
    expect(list.headers.get("x-total-count")).toBe("1");
    const rows = await json(list);
    expect(rows.map((j: { id: string }) => j.id)).toEqual([job.id]);
    expect(Object.keys(rows[0]).sort()).toEqual(Object.keys(job).sort());
    const one = await json(await fetch(`${rig.url("web")}/api/jobs/${job.id}`, { headers: { cookie: s.cookie } }));
    expect(one.timeline[0]).toMatchObject({ jobId: job.id, to: "queued" });
    const doc = await fetch(`${rig.url("web")}/api/jobs/${job.id}/documents/0?download=1`, {
      headers: { cookie: s.cookie },
    });
    expect(doc.headers.get("content-type")).toBe("application/pdf");
    expect(doc.headers.get("content-disposition")).toBe("attachment; filename=\"page.pdf\"; filename*=UTF-8''page.pdf");
    expect(Buffer.from(await doc.arrayBuffer()).equals(TEST_PDF)).toBe(true);
  });

  it("refuses a bad number, a refused destination and a file that cannot be faxed, naming the reason, and queues nothing", async () => {
    const s = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const before = (await rig.gw.store.listJobs({ user: "alice" })).length;
    const bad = await newFax(s, { to: "12" });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error).toMatch(/^12: /);
    const premium = await newFax(s, { to: "+1 900 555 0199" });
    expect(premium.status).toBe(400);
    expect((await json(premium)).error).toMatch(/destination not allowed: .*premium/);
    const exe = await newFax(s, { to: "5550104242" }, [
      { name: "tool.exe", data: Buffer.from("MZ\x90\x00binary\x00\x01\x02"), type: "application/octet-stream" },
    ]);
    expect(exe.status).toBe(400);
    expect((await json(exe)).error).toMatch(/^tool\.exe: /);
    expect((await rig.gw.store.listJobs({ user: "alice" })).length).toBe(before);
  });

  it("refuses a state-changing call without the CSRF token, and changes nothing", async () => {
    const s = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const job = await json(await newFax(s, { to: "5550104242", subject: "to cancel" }));
    for (const headers of [
      { cookie: s.cookie },
      { cookie: s.cookie, "x-csrf-token": "x".repeat(s.csrf.length) },
    ] as Array<Record<string, string>>) {
      const r = await fetch(`${rig.url("web")}/api/jobs/${job.id}/cancel`, { method: "POST", headers });
      expect(r.status).toBe(403);
      expect((await json(r)).error).toMatch(/X-CSRF-Token/);
    }
    const upload = await fetch(`${rig.url("web")}/api/faxes`, {
      method: "POST",
      headers: { cookie: s.cookie },
      body: pdfForm({ to: "5550104242" }),
    });
    expect(upload.status).toBe(403);
    expect((await rig.gw.store.getJob(job.id))!.state).not.toBe("cancelled");
    // the token of another session does not fit this one
    const other = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const cross = await fetch(`${rig.url("web")}/api/jobs/${job.id}/cancel`, {
      method: "POST",
      headers: { cookie: s.cookie, "x-csrf-token": other.csrf },
    });
    expect(cross.status).toBe(403);
    const ok = await fetch(`${rig.url("web")}/api/jobs/${job.id}/cancel`, {
      method: "POST",
      headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
    });
    expect(ok.status).toBe(200);
    expect((await json(ok)).state).toBe("cancelled");
    expect(rig.logs.some((l) => l.includes('"WEB cancel"') && l.includes('"user":"alice"') && l.includes(job.id))).toBe(
      true,
    );
  });

  it("answers another user's job exactly as a job that does not exist", async () => {
    const alice = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const bob = await signIn(rig.url("web"), "bob", PASSWORDS.bob);
    const job = await json(await newFax(alice, { to: "5550104242", subject: "alice only" }));
    const missing = job.id.replace(/.$/, (c: string) => (c === "a" ? "b" : "a"));
    const answers: Array<{ id: string; url: string; status: number; body: string }> = [];
    for (const id of [job.id, missing]) {
      for (const [method, url] of [
        ["GET", `/api/jobs/${id}`],
        ["GET", `/api/jobs/${id}/documents/0`],
        ["POST", `/api/jobs/${id}/cancel`],
        ["POST", `/api/jobs/${id}/resend`],
      ]) {
        const r = await fetch(`${rig.url("web")}${url}`, {
          method,
          headers: { cookie: bob.cookie, "x-csrf-token": bob.csrf },
        });
        answers.push({
          id: id === job.id ? "alice" : "missing",
          url: url!.replace(id, ":id"),
          status: r.status,
          body: await r.text(),
        });
      }
    }
    for (const a of answers) expect(a.status, `${a.id} ${a.url}`).toBe(404);
    const bodies = (who: string) => answers.filter((a) => a.id === who).map((a) => a.body);
    expect(bodies("alice")).toEqual(bodies("missing"));
    const list = await json(
      await fetch(`${rig.url("web")}/api/jobs?search=alice%20only`, { headers: { cookie: bob.cookie } }),
    );
    expect(list).toEqual([]);
    expect((await rig.gw.store.getJob(job.id))!.state).toBe("queued");
    // an operator may see and act on it
    const ops = await signIn(rig.url("web"), "ops", PASSWORDS.ops);
    expect((await fetch(`${rig.url("web")}/api/jobs/${job.id}`, { headers: { cookie: ops.cookie } })).status).toBe(200);
  });

  it("shows operators the gateway's recent refusals with their reasons, and users their contacts", async () => {
    const { client } = await RawSmtp.connect(rig.smtpPort);
    try {
      await client.cmd("EHLO tester.example");
      expect(await client.cmd("MAIL FROM:<alice@example.com>")).toMatch(/^250/);
      expect(await client.cmd("RCPT TO:<19005550199@fax.example.com>")).toMatch(/^553 5\.1\.3/);
    } finally {
      client.close();
    }
    const ops = await signIn(rig.url("web"), "ops", PASSWORDS.ops);
    const overview = await json(
      await fetch(`${rig.url("web")}/api/admin/overview`, { headers: { cookie: ops.cookie } }),
    );
    expect(overview.refusals[0]).toMatchObject({
      source: "smtp",
      reason: expect.stringMatching(/^553 5\.1\.3 .*premium/),
    });
    const alice = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const contacts = await json(await fetch(`${rig.url("web")}/api/contacts`, { headers: { cookie: alice.cookie } }));
    expect(contacts.map((c: { name: string }) => c.name)).toContain("Acme Billing");
    // alice's print_driver key may only read contacts: the console says so and changes nothing
    const add = await fetch(`${rig.url("web")}/api/contacts`, {
      method: "POST",
      headers: { cookie: alice.cookie, "x-csrf-token": alice.csrf, "content-type": "application/json" },
      body: JSON.stringify({ name: "New Lab", faxNumber: "5550109999" }),
    });
    expect(add.status).toBe(403);
    const after = await json(await fetch(`${rig.url("web")}/api/contacts`, { headers: { cookie: alice.cookie } }));
    expect(after.map((c: { name: string }) => c.name)).not.toContain("New Lab");
  });

  it("locks an address out after 10 failed sign-ins, even for the right password", async () => {
    // X-Forwarded-For is not believed without web.trustedProxies: changing it does not help
    let n = 0;
    const attempt = (password: string) =>
      fetch(`${rig.url("web")}/login`, {
        method: "POST",
        headers: { "x-forwarded-for": `203.0.113.${++n}` },
        body: new URLSearchParams({ user: "bob", password }),
      });
    let statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await attempt(`guess-${i}`)).status);
    // earlier tests failed 3 times from this address too: the lock comes at 10 in all
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(10 - 3);
    expect(statuses.at(-1)).toBe(429);
    const right = await attempt(PASSWORDS.bob);
    expect(right.status).toBe(429);
    expect(right.headers.get("set-cookie")).toBeNull();
    statuses = [];
  });

  it("never puts a key, a password or a hash in an answer or a page", async () => {
    // a fresh gateway: the one above has locked this address out
    const other = await startGateway(
      consoleGateway({ delayMs: 60_000, config: { api: { adminKey: TEST_KEYS.admin } } }),
    );
    // the key watch's check (it runs some seconds after start): the operator's page shows its result
    await other.gw.keyWatch?.runOnce();
    try {
      const secrets = [
        TEST_KEYS.alice,
        TEST_KEYS.bob,
        TEST_KEYS.admin,
        TEST_KEYS.aliceBase,
        PASSWORDS.alice,
        PASSWORDS.ops,
        "scrypt$",
      ];
      const texts: string[] = [];
      const ops = await signIn(other.url("web"), "ops", PASSWORDS.ops);
      const alice = await signIn(other.url("web"), "alice", PASSWORDS.alice);
      const job = await json(
        await fetch(`${other.url("web")}/api/faxes`, {
          method: "POST",
          headers: { cookie: alice.cookie, "x-csrf-token": alice.csrf },
          body: pdfForm({ to: "5550104242" }),
        }),
      );
      for (const [s, url] of [
        [alice, "/api/jobs"],
        [alice, `/api/jobs/${job.id}`],
        [alice, "/api/contacts"],
        [alice, "/api/inbound"],
        [alice, "/api/session"],
        [ops, "/api/admin/overview"],
        [ops, "/api/jobs?all=1"],
        [alice, "/"],
        [alice, "/app.js"],
      ] as const) {
        const r = await fetch(`${other.url("web")}${url}`, { headers: { cookie: s.cookie } });
        expect(r.status, url).toBe(200);
        texts.push(await r.text());
      }
      for (const t of texts) for (const secret of secrets) expect(t).not.toContain(secret);
      const overview = JSON.parse(texts[5]!);
      expect(overview.queue.jobs.queued + overview.queue.jobs.active).toBe(1);
      expect(overview.volume24h.find((v: { user: string }) => v.user === "alice").jobs).toBe(1);
      expect(overview.keyExpiry.map((k: { user: string }) => k.user).sort()).toEqual(["alice", "bob", "nopass", "ops"]);
      // the admin page is an operator's: a plain user gets the same 404 as for a page that is not there
      expect(
        (await fetch(`${other.url("web")}/api/admin/overview`, { headers: { cookie: alice.cookie } })).status,
      ).toBe(404);
    } finally {
      await other.stop();
    }
  });
});

describe("web console over TLS", () => {
  it("serves https and marks the session cookie Secure", async () => {
    const tls = await startGateway(consoleGateway({ tls: true, delayMs: 60_000 }));
    const agent = new Agent({ connect: { ca: readFileSync(tls.config.web!.tls!.cert, "utf8") } });
    try {
      const r = await request(`${tls.url("web")}/login`, {
        method: "POST",
        dispatcher: agent,
        body: new URLSearchParams({ user: "alice", password: PASSWORDS.alice }).toString(),
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      expect(r.statusCode).toBe(200);
      const cookie = String(r.headers["set-cookie"]);
      expect(cookie).toMatch(/; HttpOnly/);
      expect(cookie).toMatch(/; SameSite=Strict/);
      expect(cookie).toMatch(/; Secure/);
      await r.body.dump();
    } finally {
      await agent.close();
      await tls.stop();
    }
  });
});

describe("web console behind a proxy", () => {
  it("counts sign-in failures per client named by a trusted proxy, and believes no one else", async () => {
    const proxied = await startGateway(
      consoleGateway({ delayMs: 60_000, config: { web: { trustedProxies: ["127.0.0.1"] } } }),
    );
    try {
      const attempt = (from: string, password: string) =>
        fetch(`${proxied.url("web")}/login`, {
          method: "POST",
          headers: { "x-forwarded-for": from },
          body: new URLSearchParams({ user: "bob", password }),
        });
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await attempt("198.51.100.1", `guess-${i}`)).status);
      expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
      expect(statuses[10]).toBe(429);
      expect((await attempt("198.51.100.1", PASSWORDS.bob)).status).toBe(429);
      // another client behind the same proxy is not locked out by the first one's guesses
      expect((await attempt("198.51.100.2", PASSWORDS.bob)).status).toBe(200);
    } finally {
      await proxied.stop();
    }
  }, 60_000);
});

describe("received faxes and the history budget", () => {
  it("leaves the account's history calls to status polling: its last list, or 503, never a wait", async () => {
    // 4 calls a minute, 3 left to the dispatcher: the console may make one
    const tight = await startGateway(consoleGateway({ delayMs: 60_000, config: { api: { historyPerMinute: 4 } } }));
    try {
      const s = await signIn(tight.url("web"), "alice", PASSWORDS.alice);
      const get = (q: string) => fetch(`${tight.url("web")}/api/inbound${q}`, { headers: { cookie: s.cookie } });
      const first = await get("?limit=10");
      expect(first.status).toBe(200);
      const body = await first.text();
      // neither answer waits for the budget: that would take until the next minute, past the
      // test's own bound, instead of answering from the last list and 503
      const again = await get("?limit=10");
      expect(again.status).toBe(200);
      expect(await again.text()).toBe(body);
      const other = await get("?limit=10&offset=10");
      expect(other.status).toBe(503);
      expect((await json(other)).error).toMatch(/rate-limited/);
    } finally {
      await tight.stop();
    }
  }, 60_000);
});

describe("web console sessions", () => {
  it("end after web.sessionLifetime, and at sign-out", async () => {
    let offset = 0;
    const clock = { now: () => Date.now() + offset };
    const timed = await startGateway(consoleGateway({ delayMs: 60_000, clock }));
    try {
      const s = await signIn(timed.url("web"), "alice", PASSWORDS.alice);
      const me = () => fetch(`${timed.url("web")}/api/session`, { headers: { cookie: s.cookie } });
      expect(s.setCookie).toMatch(/Max-Age=43200/);
      offset = 11.9 * 3_600_000;
      expect((await me()).status).toBe(200);
      offset = 12.1 * 3_600_000;
      expect((await me()).status).toBe(401);
      const t = await signIn(timed.url("web"), "alice", PASSWORDS.alice);
      const out = await fetch(`${timed.url("web")}/logout`, {
        method: "POST",
        headers: { cookie: t.cookie, "x-csrf-token": t.csrf },
      });
      expect(out.headers.get("set-cookie")).toMatch(/^faxgate_session=; .*Max-Age=0/);
      expect((await fetch(`${timed.url("web")}/api/session`, { headers: { cookie: t.cookie } })).status).toBe(401);
    } finally {
      await timed.stop();
    }
  }, 60_000);
});
