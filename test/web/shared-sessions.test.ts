// Console sessions shared by a fleet (issue 55): two gateways on one PostgreSQL, each with its own
// console. A person signs in on A (a real HTTP client keeping the cookie) and works through B: the
// session, its CSRF token and a live stream all hold there; sign-out on B ends the session on A
// too, and A's open stream is told so. The table keeps only the id's hash. Skips without
// PostgreSQL.
import http from "node:http";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { TEST_PDF } from "../helpers/store.js";
import { consoleGateway, PASSWORDS, signIn } from "./rig.js";
import { usePgCluster } from "../helpers/store-backends.js";

const postgres = usePgCluster("shared console sessions");

let url = "";
let a: TestGateway;
let b: TestGateway;
beforeAll(async () => {
  if (postgres.missing) return;
  url = await postgres.database();
  a = await startGateway(consoleGateway({ config: { database: url } }));
  b = await startGateway(consoleGateway({ config: { database: url } }));
}, 120_000);
afterAll(async () => {
  await a?.stop();
  await b?.stop();
});

/** An open /api/events stream: the ids of the jobs it told of, and when the server ended it. */
function openStream(base: string, cookie: string): Promise<{ jobs: string[]; ended: Promise<string>; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/api/events`, { headers: { cookie } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`events: ${res.statusCode}`));
      const jobs: string[] = [];
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        text += c;
        for (const m of c.matchAll(/^event: job\ndata: (.*)$/gm)) jobs.push((JSON.parse(m[1]!) as { id: string }).id);
      });
      const ended = new Promise<string>((done) => res.on("close", () => done(text)));
      resolve({ jobs, ended, close: () => req.destroy() });
    });
    req.on("error", reject);
  });
}

async function newFax(base: string, s: { cookie: string; csrf: string }): Promise<Response> {
  const fd = new FormData();
  fd.append("to", "+15550107777");
  fd.append("files", new Blob([TEST_PDF], { type: "application/pdf" }), "page.pdf");
  return fetch(`${base}/api/faxes`, {
    method: "POST",
    headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
    body: fd,
  });
}

describe.skipIf(postgres.missing)("console sessions across two gateways on one PostgreSQL", () => {
  it("signed in on A, works through B; signed out on B, refused on A and A's stream ends", async () => {
    const onA = a.url("web");
    const onB = b.url("web");
    const s = await signIn(onA, "alice", PASSWORDS.alice);

    // B knows the session A made, with its CSRF token
    const me = await fetch(`${onB}/api/session`, { headers: { cookie: s.cookie } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ user: "alice", csrfToken: s.csrf });

    // a live stream on A; a fax sent through B appears in it, and in A's list
    const streamA = await openStream(onA, s.cookie);
    const streamB = await openStream(onB, s.cookie);
    const sent = await newFax(onB, s);
    expect(sent.status, await sent.clone().text()).toBe(200);
    const id = ((await sent.json()) as { id: string }).id;
    await expect.poll(() => streamA.jobs.includes(id), { timeout: 10_000 }).toBe(true);
    await expect.poll(() => streamB.jobs.includes(id), { timeout: 10_000 }).toBe(true);
    const seenOnA = await fetch(`${onA}/api/jobs/${id}`, { headers: { cookie: s.cookie } });
    expect(seenOnA.status).toBe(200);

    // the table holds the id's hash, never the id: a reader of the database cannot sign in
    const sessionId = decodeURIComponent(s.cookie.split("=")[1]!);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      const rows = (await db.query("SELECT * FROM console_sessions")).rows as Array<Record<string, unknown>>;
      expect(rows.length).toBeGreaterThan(0);
      expect(JSON.stringify(rows)).not.toContain(sessionId);
    } finally {
      await db.end();
    }

    // sign-out on B ends it everywhere: A refuses the cookie and closes its stream with `end`
    const out = await fetch(`${onB}/logout`, { method: "POST", headers: { cookie: s.cookie, "x-csrf-token": s.csrf } });
    expect(out.status).toBe(200);
    expect((await fetch(`${onA}/api/session`, { headers: { cookie: s.cookie } })).status).toBe(401);
    expect((await newFax(onA, s)).status).toBe(401);
    expect(await streamA.ended).toMatch(/event: end\ndata: \{"reason":"session ended"\}/);
    expect(await streamB.ended).toMatch(/event: end/);
  }, 60_000);

  it("a session survives its gateway's restart (kept in the store, not in the process)", async () => {
    const s = await signIn(a.url("web"), "bob", PASSWORDS.bob);
    await a.stop();
    a = await startGateway(consoleGateway({ config: { database: url } }));
    const me = await fetch(`${a.url("web")}/api/session`, { headers: { cookie: s.cookie } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ user: "bob" });
  }, 60_000);
});
