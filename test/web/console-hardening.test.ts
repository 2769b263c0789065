// The console where an attacker meets it, over real HTTP against a whole gateway: a document name
// outside Latin-1 in preview and download, sign-in guesses through a real appending proxy with a
// forged X-Forwarded-For and spread over many addresses, and live-update streams that must end
// with their session (sign-out, a reload that takes the operator role away, expiry).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_PDF } from "../helpers/store.js";
import { PASSWORDS, signIn, consoleGateway } from "./rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";

let rig: TestGateway;
let offset = 0;
beforeAll(async () => {
  // every 127.0.0.x may be a proxy, as a container network would be: the test's clients live there too
  rig = await startGateway(
    consoleGateway({
      delayMs: 60_000,
      config: { web: { trustedProxies: ["127.0.0.0/8"] } },
      clock: { now: () => Date.now() + offset },
    }),
  );
}, 60_000);
afterAll(async () => {
  await rig?.stop();
});

/** A fetch-like POST /login from a chosen loopback address, optionally through `via`. */
async function login(
  from: string,
  user: string,
  password: string,
  opts: { via?: string; xff?: string } = {},
): Promise<{ status: number; error?: string }> {
  const agent = new Agent({ localAddress: from });
  try {
    const r = await request(`${opts.via ?? rig.url("web")}/login`, {
      method: "POST",
      dispatcher: agent,
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        ...(opts.xff ? { "x-forwarded-for": opts.xff } : {}),
      },
      body: new URLSearchParams({ user, password }).toString(),
    });
    const body = (await r.body.json()) as { error?: string };
    return { status: r.statusCode, error: body.error };
  } finally {
    await agent.close();
  }
}

/** A reverse proxy as nginx's `$proxy_add_x_forwarded_for` makes one: it appends the client's address. */
async function appendingProxy(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const xff = [req.headers["x-forwarded-for"], req.socket.remoteAddress].filter(Boolean).join(", ");
    const up = http.request(
      `${target}${req.url}`,
      { method: req.method, headers: { ...req.headers, "x-forwarded-for": xff } },
      (r) => {
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      },
    );
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** An open /api/events stream: the job events it delivered, and whether the server ended it. */
function openStream(
  cookie: string,
  query = "",
): Promise<{ jobs: string[]; ended: Promise<void>; job(id: string): Promise<void>; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${rig.url("web")}/api/events${query}`, { headers: { cookie } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`events: ${res.statusCode}`));
      const jobs: string[] = [];
      const waiters: Array<{ id: string; done(): void }> = [];
      let buf = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        buf += c;
        let i: number;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = /^event: job\ndata: (.*)$/m.exec(block);
          if (!data) continue;
          const id = (JSON.parse(data[1]!) as { id: string }).id;
          jobs.push(id);
          for (const w of waiters.filter((x) => x.id === id)) w.done();
        }
      });
      const ended = new Promise<void>((done) => res.on("close", () => done()));
      resolve({
        jobs,
        ended,
        job: (id) => (jobs.includes(id) ? Promise.resolve() : new Promise<void>((done) => waiters.push({ id, done }))),
        close: () => req.destroy(),
      });
    });
    req.on("error", reject);
  });
}

let n = 0;
async function queueFor(user: string): Promise<string> {
  const dir = path.join(rig.dir, "in");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `doc-${++n}.pdf`);
  writeFileSync(file, TEST_PDF);
  const { job } = await rig.gw.store.enqueue({
    source: "smtp",
    user,
    recipients: [{ number: "+15550104242" }],
    documents: [{ path: file, name: "doc.pdf", contentType: "application/pdf" }],
    cover: { enabled: false },
    scheduledAt: null,
  });
  return job.id;
}

/** Whichever comes first: the stream ends, or it delivers job `id` (a leak), or 5 s pass. */
async function endsBefore(
  stream: Awaited<ReturnType<typeof openStream>>,
  id: string,
): Promise<"ended" | "delivered" | "still open"> {
  let timer: NodeJS.Timeout | undefined;
  const r = await Promise.race([
    stream.ended.then(() => "ended" as const),
    stream.job(id).then(() => "delivered" as const),
    new Promise<"still open">((resolve) => (timer = setTimeout(() => resolve("still open"), 5000))),
  ]);
  clearTimeout(timer);
  return r;
}

describe("document names outside Latin-1", () => {
  it("preview and download answer 200 with an RFC 6266 filename* and an ASCII fallback", async () => {
    const s = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const name = "Счёт №5 — 報告 ✓ café.pdf";
    const fd = new FormData();
    fd.append("to", "5550104242");
    fd.append("files", new Blob([TEST_PDF], { type: "application/pdf" }), name);
    const up = await fetch(`${rig.url("web")}/api/faxes`, {
      method: "POST",
      headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
      body: fd,
    });
    expect(up.status, await up.clone().text()).toBe(200);
    const job = (await up.json()) as { id: string; documents: Array<{ name: string }> };
    expect(job.documents[0]!.name).toBe(name);
    for (const [q, kind] of [
      ["", "inline"],
      ["?download=1", "attachment"],
    ] as const) {
      const r = await fetch(`${rig.url("web")}/api/jobs/${job.id}/documents/0${q}`, { headers: { cookie: s.cookie } });
      expect(r.status, q).toBe(200);
      const cd = r.headers.get("content-disposition")!;
      expect(cd.startsWith(`${kind}; filename="`)).toBe(true);
      const fallback = /filename="([^"]*)"/.exec(cd)![1]!;
      expect(fallback).toMatch(/^[\x20-\x7e]+$/);
      expect(fallback).toContain("cafe.pdf");
      expect(decodeURIComponent(/filename\*=UTF-8''([^;\s]+)/.exec(cd)![1]!)).toBe(name);
      expect(Buffer.from(await r.arrayBuffer()).equals(TEST_PDF)).toBe(true);
    }
  });
});

describe("sign-in throttling", () => {
  it("behind a proxy takes only the hop the proxy appended: a forged X-Forwarded-For gives no new address", async () => {
    const proxy = await appendingProxy(rig.url("web"));
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++)
        statuses.push(
          (await login("127.0.0.2", "mallory", `guess-${i}`, { via: proxy.url, xff: `198.51.100.${i}` })).status,
        );
      expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
      expect(statuses[10]).toBe(429);
      // the proxy's other clients are not locked out by 127.0.0.2's guesses
      expect((await login("127.0.0.3", "alice", PASSWORDS.alice, { via: proxy.url })).status).toBe(200);
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it("locks an account after 20 failures spread over many addresses, and not the other accounts", async () => {
    const results: Array<{ status: number; error?: string }> = [];
    for (let a = 10; a < 21; a++)
      for (let i = 0; i < 2; i++) results.push(await login(`127.0.0.${a}`, "bob", `guess-${a}-${i}`));
    expect(results.slice(0, 20).map((r) => r.status)).toEqual(Array(20).fill(401));
    expect(results[20]).toEqual({
      status: 429,
      error: expect.stringMatching(/too many failed sign-ins for this account/),
    });
    // the right password from a fresh address waits out the window too; another account does not
    expect((await login("127.0.0.30", "bob", PASSWORDS.bob)).status).toBe(429);
    expect((await login("127.0.0.31", "alice", PASSWORDS.alice)).status).toBe(200);
  }, 60_000);
});

describe("live-update streams end with their session", () => {
  it("at sign-out", async () => {
    const s = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const stream = await openStream(s.cookie);
    try {
      // the stream works: alice's own new job arrives
      await stream.job(await queueFor("alice"));
      const out = await fetch(`${rig.url("web")}/logout`, {
        method: "POST",
        headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
      });
      expect(out.status).toBe(200);
      expect(await endsBefore(stream, await queueFor("alice"))).toBe("ended");
    } finally {
      stream.close();
    }
  }, 30_000);

  it("when a reload takes the operator role away", async () => {
    const s = await signIn(rig.url("web"), "ops", PASSWORDS.ops);
    const stream = await openStream(s.cookie, "?all=1");
    try {
      await stream.job(await queueFor("alice"));
      await rig.reloadWith((c) => ({
        ...c,
        users: c.users.map((u) => (u.name === "ops" ? { ...u, role: "user" } : u)),
      }));
      expect(await endsBefore(stream, await queueFor("alice"))).toBe("ended");
      expect((await fetch(`${rig.url("web")}/api/events?all=1`, { headers: { cookie: s.cookie } })).status).toBe(401);
    } finally {
      stream.close();
    }
  }, 30_000);

  it("when the session expires (last: the clock moves on)", async () => {
    const s = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const stream = await openStream(s.cookie);
    try {
      await stream.job(await queueFor("alice"));
      offset = 12.1 * 3_600_000;
      expect(await endsBefore(stream, await queueFor("alice"))).toBe("ended");
    } finally {
      stream.close();
    }
  }, 30_000);
});
