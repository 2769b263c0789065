// Hostile SMTP clients against a real daemon: early talkers, pipelining (legitimate and abusive),
// command bursts, connection floods and AUTH guessing. The daemon answers each with a clear code or
// cuts the session, never lets one client starve the others, and gives back every descriptor.
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashPassword } from "../../src/auth/password.js";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { waitUntil } from "../helpers/wait.js";
import { RawSmtp } from "../helpers/raw-smtp.js";
import { TEST_USERS } from "../helpers/gateway.js";
import { disposeRig, makeRig, SHORT, startDaemon, type Daemon, type Rig } from "./harness.js";

const MAX_CONNECTIONS = 20;
const SOCKET_TIMEOUT_MS = 3000;
const FLOOD = SHORT ? 300 : 1000;
const BURST = 10_000;
const NON_READER = 1_000_000;
// smtp.maxJunkCommands' default
const JUNK_LIMIT = 100;
// The same phrase as the passwd test, so the secret check after the suite looks for it too.
const PASSWORD = "correct horse battery staple";

let rig: Rig;
let daemon: Daemon;
const figures: string[] = [];

beforeAll(async () => {
  const hash = await hashPassword(PASSWORD);
  rig = await makeRig({
    config: {
      // 127.0.0.1 is the trusted relay, greeted at once; strangers come from 127.0.0.2 and wait smtp.greetingDelay
      smtp: {
        maxConnections: MAX_CONNECTIONS,
        socketTimeout: `${SOCKET_TIMEOUT_MS}ms`,
        trustedNetworks: ["127.0.0.1/32"],
      },
      users: TEST_USERS.map((u) => (u.name === "alice" ? { ...u, password: hash } : u)),
    },
  });
  daemon = await startDaemon(rig);
});
afterAll(async () => {
  if (figures.length) process.stdout.write(`\nsmtp abuse figures:\n  ${figures.join("\n  ")}\n`);
  await disposeRig(rig, daemon);
});

const pid = (): number => daemon.child.pid!;
const fdCount = (): number => readdirSync(`/proc/${pid()}/fd`).length;
const rssMb = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid()}/status`, "utf8"))![1]) / 1024;
const rcpt = (i: number): string => `1555${String(4_000_000 + i).padStart(7, "0")}@fax.example.com`;

async function jobIds(): Promise<string[]> {
  const store = SqliteStore.open({ dataDir: rig.dataDir });
  try {
    return (await store.listJobs()).map((j) => j.id);
  } finally {
    store.close();
  }
}

async function jobRecipients(id: string): Promise<string[]> {
  const store = SqliteStore.open({ dataDir: rig.dataDir });
  try {
    return (await store.getJob(id))?.recipients.map((r) => r.number) ?? [];
  } finally {
    store.close();
  }
}

/** A raw socket that records everything the server says, and whether and when it closed. */
class Tap {
  text = "";
  closed = false;
  readonly socket: net.Socket;
  readonly ready: Promise<void>;
  constructor(port: number, localAddress?: string) {
    this.socket = net.connect({ port, host: "127.0.0.1", localAddress });
    this.socket.setEncoding("latin1");
    this.socket.on("data", (d: string) => (this.text += d));
    this.socket.on("error", () => undefined);
    this.socket.on("close", () => (this.closed = true));
    this.ready = new Promise((resolve, reject) => {
      this.socket.once("connect", resolve);
      this.socket.once("error", reject);
    });
  }
  lines(): string[] {
    return this.text.split("\r\n").filter(Boolean);
  }
  /** Final reply lines ("250 x", not "250-x"). */
  replies(): string[] {
    return this.lines().filter((l) => /^\d{3}( |$)/.test(l));
  }
  async until(pred: (t: Tap) => boolean, what: string, timeoutMs = 60_000): Promise<void> {
    await waitUntil(() => pred(this) || this.closed, what, timeoutMs, 20);
  }
}

/** One complete delivery over a fresh session; null when the session was refused with 421. */
async function deliver(to: string[], subject: string): Promise<string | null> {
  const { client, banner } = await RawSmtp.connect(rig.smtpPort);
  try {
    if (!banner.startsWith("220")) return null;
    expect(await client.cmd("EHLO legit.example")).toMatch(/^250/);
    expect(await client.cmd("MAIL FROM:<alice@example.com>")).toMatch(/^250/);
    for (const t of to) expect(await client.cmd(`RCPT TO:<${t}>`)).toMatch(/^250/);
    expect(await client.cmd("DATA")).toMatch(/^354/);
    client.write(
      `From: alice@example.com\r\nSubject: ${subject}\r\nMessage-ID: <${subject}.${Date.now()}@t>\r\n\r\nhello\r\n.\r\n`,
    );
    const r = await client.reply(60_000);
    await client.cmd("QUIT");
    return r;
  } finally {
    client.close();
  }
}

const MESSAGE = (id: string) =>
  `From: alice@example.com\r\nTo: fax\r\nSubject: ${id}\r\nMessage-ID: <${id}.${Date.now()}@t>\r\n\r\npipelined body\r\n..a dot-stuffed line\r\n`;

describe("early talkers", () => {
  it("a client that speaks before the 220 greeting is refused with 421 and cut, and makes no job", async () => {
    const before = (await jobIds()).length;
    // from outside smtp.trustedNetworks: such clients wait smtp.greetingDelay for the greeting
    const t = new Tap(rig.smtpPort, "127.0.0.2");
    await t.ready;
    // a spam bot firing its whole transaction at once, without waiting for the greeting
    t.socket.write(
      `EHLO early.example\r\nMAIL FROM:<alice@example.com>\r\nRCPT TO:<${rcpt(1)}>\r\nDATA\r\n${MESSAGE("early")}.\r\nQUIT\r\n`,
    );
    await t.until((x) => x.closed, "the early talker to be cut");
    figures.push(`early talker: server said ${JSON.stringify(t.text.trim())}`);
    expect(t.replies()[0]).toMatch(/^421 /);
    expect(t.text).not.toMatch(/^220 /m);
    expect(t.text).not.toMatch(/^250 /m);
    expect(t.closed).toBe(true);
    expect((await jobIds()).length).toBe(before);
  });
});

describe("pipelining", () => {
  it("is advertised, and a transaction pipelined in RFC 2920 groups gives exactly one job", async () => {
    const before = new Set(await jobIds());
    const t = new Tap(rig.smtpPort);
    await t.until((x) => /^220 /m.test(x.text), "greeting");
    t.socket.write("EHLO pipe.example\r\n");
    await t.until((x) => /^250 /m.test(x.text), "EHLO reply");
    expect(t.text).toMatch(/^250-PIPELINING/m);
    // one write up to DATA, then the body and QUIT in one more write after 354
    t.socket.write(
      `MAIL FROM:<alice@example.com>\r\nRCPT TO:<${rcpt(11)}>\r\nRCPT TO:<${rcpt(12)}>\r\nRCPT TO:<${rcpt(13)}>\r\nDATA\r\n`,
    );
    await t.until((x) => /^354 /m.test(x.text), "354");
    t.socket.write(`${MESSAGE("grouped")}.\r\nQUIT\r\n`);
    await t.until((x) => /^221 /m.test(x.text), "QUIT reply");
    const codes = t.replies().map((l) => l.slice(0, 3));
    expect(codes).toEqual(["220", "250", "250", "250", "250", "250", "354", "250", "221"]);
    const after = (await jobIds()).filter((id) => !before.has(id));
    expect(after).toHaveLength(1);
    expect(t.text).toContain(`queued as ${after[0]}`);
    expect((await jobRecipients(after[0]!)).sort()).toEqual([
      `+${rcpt(11).split("@")[0]}`,
      `+${rcpt(12).split("@")[0]}`,
      `+${rcpt(13).split("@")[0]}`,
    ]);
    t.socket.destroy();
  });

  it("a whole transaction in one write, body before 354, garbage after the dot: one job, every command answered in order", async () => {
    const before = new Set(await jobIds());
    const t = new Tap(rig.smtpPort);
    await t.until((x) => /^220 /m.test(x.text), "greeting");
    t.socket.write(
      `EHLO pipe.example\r\nMAIL FROM:<alice@example.com>\r\nRCPT TO:<${rcpt(21)}>\r\nRCPT TO:<${rcpt(22)}>\r\nDATA\r\n` +
        `${MESSAGE("oneshot")}.\r\nGARBAGE after the dot\r\n\u0001\u0002\u00ff binary junk\r\nNOOP\r\nQUIT\r\n`,
    );
    await t.until((x) => x.closed || /^221 /m.test(x.text), "QUIT reply");
    const codes = t.replies().map((l) => l.slice(0, 3));
    figures.push(`one-write transaction: replies ${codes.join(" ")}`);
    // 220, EHLO, MAIL, 2x RCPT, 354, 250 queued, two 500s for the garbage, NOOP, QUIT
    expect(codes).toEqual(["220", "250", "250", "250", "250", "354", "250", "500", "500", "250", "221"]);
    const after = (await jobIds()).filter((id) => !before.has(id));
    expect(after).toHaveLength(1);
    expect(await jobRecipients(after[0]!)).toHaveLength(2);
    t.socket.destroy();
  });

  it("SMTP smuggling: a dot line ended with a bare LF or CR does not end the message", async () => {
    const before = new Set(await jobIds());
    const t = new Tap(rig.smtpPort);
    await t.until((x) => /^220 /m.test(x.text), "greeting");
    // what an upstream relay might pass through unchanged: a second transaction hidden in the body
    const smuggled = (end: string) =>
      `${end}MAIL FROM:<bob@example.com>\r\nRCPT TO:<${rcpt(29)}>\r\nDATA\r\nsmuggled\r\n`;
    t.socket.write(
      `EHLO smuggle.example\r\nMAIL FROM:<alice@example.com>\r\nRCPT TO:<${rcpt(28)}>\r\nDATA\r\n${MESSAGE("smuggle")}` +
        `${smuggled("\n.\n")}${smuggled("\n.\r\n")}${smuggled("\r\n.\n")}${smuggled("\r.\r")}${smuggled("\r\n.\r")}.\r\nQUIT\r\n`,
    );
    await t.until((x) => /^221 /m.test(x.text), "QUIT reply");
    const codes = t.replies().map((l) => l.slice(0, 3));
    figures.push(`smuggling attempt: replies ${codes.join(" ")}`);
    expect(codes).toEqual(["220", "250", "250", "250", "354", "250", "221"]);
    const after = (await jobIds()).filter((id) => !before.has(id));
    expect(after).toHaveLength(1);
    expect(await jobRecipients(after[0]!)).toEqual([`+${rcpt(28).split("@")[0]}`]);
    t.socket.destroy();
  });

  it("two messages pipelined back to back in one session give two jobs", async () => {
    const before = new Set(await jobIds());
    const t = new Tap(rig.smtpPort);
    await t.until((x) => /^220 /m.test(x.text), "greeting");
    const tx = (i: number) =>
      `MAIL FROM:<alice@example.com>\r\nRCPT TO:<${rcpt(30 + i)}>\r\nDATA\r\n${MESSAGE(`twice${i}`)}.\r\n`;
    t.socket.write(`EHLO pipe.example\r\n${tx(1)}${tx(2)}QUIT\r\n`);
    await t.until((x) => /^221 /m.test(x.text), "QUIT reply");
    expect(t.replies().filter((l) => /^250 .*queued as/.test(l))).toHaveLength(2);
    expect((await jobIds()).filter((id) => !before.has(id))).toHaveLength(2);
    t.socket.destroy();
  });
});

describe("command bursts", () => {
  it(`${BURST} NOOP/RSET in one write: the first ${JUNK_LIMIT} answered, then cut with 421; memory bounded, others served meanwhile`, async () => {
    const rss0 = rssMb();
    let rssPeak = rss0;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb())), 50);
    try {
      const t = new Tap(rig.smtpPort);
      await t.until((x) => /^220 /m.test(x.text), "greeting");
      const cmds = Array.from({ length: BURST }, (_, i) => (i % 2 ? "RSET" : "NOOP")).join("\r\n");
      t.socket.write(`EHLO burst.example\r\n${cmds}\r\n`);
      // another client meanwhile
      const other = await deliver([rcpt(40)], "during-burst");
      expect(other).toMatch(/^250 /);
      await t.until((x) => x.closed, "the session to be cut", 120_000);
      const replies = t.replies();
      // greeting, EHLO, the allowance of junk commands, then the cut (smtp.maxJunkCommands, as Postfix's smtpd_junk_command_limit)
      expect(replies).toHaveLength(JUNK_LIMIT + 3);
      expect(replies.slice(2, -1).every((l) => l.startsWith("250"))).toBe(true);
      expect(replies[replies.length - 1]).toMatch(/^421 4\.7\.0 Too many NOOP, RSET/);
      t.socket.destroy();
    } finally {
      clearInterval(sampler);
    }
    figures.push(
      `${BURST} NOOP/RSET burst: ${JUNK_LIMIT} answered, then cut with 421; daemon RSS ${rss0.toFixed(0)} MB -> peak ${rssPeak.toFixed(0)} MB`,
    );
    expect(rssPeak - rss0).toBeLessThan(150);
  });

  it(`${BURST} commands with bad verbs in one write: cut with 421 at the tenth unknown command`, async () => {
    const t = new Tap(rig.smtpPort);
    await t.until((x) => /^220 /m.test(x.text), "greeting");
    const cmds = Array.from({ length: BURST }, (_, i) => ["NOOP", "RSET", `XYZZY${i}`, "NOOP"][i % 4]).join("\r\n");
    t.socket.write(`EHLO burst.example\r\n${cmds}\r\n`);
    await t.until((x) => x.closed, "the session to be cut");
    const replies = t.replies();
    const last = replies[replies.length - 1]!;
    figures.push(`bad-verb burst: ${replies.length} replies before the cut, last ${JSON.stringify(last)}`);
    expect(last).toMatch(/^421 .*unrecognized/);
    expect(replies.filter((l) => l.startsWith("500"))).toHaveLength(9);
    expect(replies.length).toBeLessThan(100);
  });

  it(`a client that writes ${NON_READER} NOOPs and never reads is cut at the junk limit, never buffered without limit`, async () => {
    const rss0 = rssMb();
    const t = new Tap(rig.smtpPort);
    await t.until((x) => /^220 /m.test(x.text), "greeting");
    t.socket.pause(); // never read: the replies back up into the server
    // 6 bytes of command for 14 of reply: unchecked, the server would queue them all in memory
    const chunk = "NOOP\r\n".repeat(100_000);
    for (let i = 0; i < NON_READER / 100_000; i += 1) t.socket.write(chunk);
    let rssPeak = rss0;
    for (let i = 0; i < 20; i += 1) {
      // fixed wait on purpose: the RSS sampler's period, not a wait
      await new Promise((r) => setTimeout(r, 150));
      rssPeak = Math.max(rssPeak, rssMb());
    }
    expect(await deliver([rcpt(41)], "beside-a-non-reader")).toMatch(/^250 /);
    figures.push(
      `non-reading client with ${NON_READER} NOOPs: daemon RSS ${rss0.toFixed(0)} -> peak ${rssPeak.toFixed(0)} MB; ${(t.socket.writableLength / 1e6).toFixed(1)} MB still unsent by the client (the server stopped reading, and cut the session after ${JUNK_LIMIT})`,
    );
    expect(rssPeak - rss0).toBeLessThan(150);
    t.socket.destroy();
  });

  it("a 1 MB command line without a line break is refused and cut", async () => {
    const t = new Tap(rig.smtpPort);
    await t.until((x) => /^220 /m.test(x.text), "greeting");
    t.socket.write(`EHLO ${"a".repeat(1024 * 1024)}`);
    await t.until((x) => x.closed, "the session to be cut");
    const replies = t.replies();
    figures.push(`1 MB command line: ${JSON.stringify(replies[replies.length - 1])}`);
    expect(replies[replies.length - 1]).toMatch(/^[45]\d\d /);
  });
});

describe("clients that stop in the middle of a message", () => {
  const incoming = () => readdirSync(path.join(rig.dataDir, "incoming"));

  it.each([
    ["stalls (the socket timeout cuts it)", false],
    ["hangs up", true],
  ])("a client that %s mid-DATA leaves no job and no work folder behind", async (_name, hangUp) => {
    const before = (await jobIds()).length;
    const t = new Tap(rig.smtpPort);
    await t.until((x) => /^220 /m.test(x.text), "greeting");
    t.socket.write(`EHLO stall.example\r\nMAIL FROM:<alice@example.com>\r\nRCPT TO:<${rcpt(45)}>\r\nDATA\r\n`);
    await t.until((x) => /^354 /m.test(x.text), "354");
    // past what a message may hold in memory (256 KB), so that it has a work folder on disk
    t.socket.write(`From: alice@example.com\r\nSubject: half\r\n\r\n${"half a message\r\n".repeat(20_000)}`);
    await waitUntil(() => incoming().length > 0, "the work folder of the message", 30_000, 20);
    if (hangUp) t.socket.destroy();
    await t.until((x) => x.closed, "the session to end", SOCKET_TIMEOUT_MS + 60_000);
    if (!hangUp) expect(t.replies().pop()).toMatch(/^421 .*[Tt]imeout/);
    await waitUntil(() => incoming().length === 0, "the work folder to be removed", 30_000, 50);
    expect((await jobIds()).length).toBe(before);
    expect(daemon.child.exitCode).toBeNull();
  });
});

describe("connection flood", () => {
  it(`${FLOOD} sockets at once against maxConnections ${MAX_CONNECTIONS}: the excess gets 421, idle ones time out, descriptors come back`, async () => {
    // let earlier sessions finish closing first
    const base = await waitUntil(
      () => {
        const n = fdCount();
        return n < 40 ? n : null;
      },
      "a quiet daemon",
      30_000,
      200,
    ).catch(() => fdCount());
    let peak = base;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, fdCount());
      } catch {
        // the daemon is gone: the assertions below say so
      }
    }, 20);
    let taps: Tap[] = [];
    try {
      taps = Array.from({ length: FLOOD }, () => new Tap(rig.smtpPort));
      await Promise.allSettled(taps.map((t) => t.ready));
      // everyone has a first reply or is closed
      await Promise.all(taps.map((t) => t.until((x) => /\r\n/.test(x.text), "a first reply", 120_000)));
      const first = (t: Tap) => t.replies()[0] ?? "";
      const greeted = taps.filter((t) => first(t).startsWith("220"));
      const refused = taps.filter((t) => first(t).startsWith("421"));
      const other = taps.filter((t) => !first(t).startsWith("220") && !first(t).startsWith("421"));
      figures.push(
        `flood: ${FLOOD} sockets, ${greeted.length} greeted, ${refused.length} refused with 421 (${[...new Set(refused.map(first))].join(" | ")}), ${other.length} closed without a reply`,
      );
      expect(greeted.length).toBeGreaterThan(0);
      expect(greeted.length).toBeLessThanOrEqual(MAX_CONNECTIONS);
      expect(greeted.length + refused.length + other.length).toBe(FLOOD);
      expect(refused.length).toBeGreaterThanOrEqual(FLOOD - MAX_CONNECTIONS - other.length);
      expect(refused.length).toBeGreaterThan(FLOOD / 2);

      // a refused socket is closed by the server
      await Promise.all(refused.map((t) => t.until((x) => x.closed, "a refused socket to close", 30_000)));

      // the greeted ones sit idle: the socket timeout closes them with a 421 of its own
      await Promise.all(
        greeted.map((t) => t.until((x) => x.closed, "an idle socket to time out", SOCKET_TIMEOUT_MS + 60_000)),
      );
      const timedOut = greeted.filter((t) => /^421 .*[Tt]imeout/m.test(t.text));
      figures.push(
        `flood: ${timedOut.length}/${greeted.length} idle sessions closed by the ${SOCKET_TIMEOUT_MS} ms socket timeout with 421`,
      );
      expect(timedOut).toHaveLength(greeted.length);
    } finally {
      for (const t of taps) t.socket.destroy();
    }

    // a legitimate client delivers once the flood is over
    const r = await deliver([rcpt(50)], "after-flood");
    expect(r).toMatch(/^250 /);
    const back = await waitUntil(
      () => {
        const n = fdCount();
        return n <= base + 2 ? n : null;
      },
      `the daemon's descriptors to return to ${base}`,
      60_000,
      200,
    ).catch(() => fdCount());
    clearInterval(sampler);
    figures.push(`flood: daemon fds ${base} before, peak ${peak}, ${back} after`);
    expect(peak).toBeGreaterThan(base);
    expect(back).toBeLessThanOrEqual(base + 2);
    expect(daemon.child.exitCode).toBeNull();
  });

  it("a legitimate client gets through while a flood keeps refilling the slots", async () => {
    let stop = false;
    let opened = 0;
    const flooder = async () => {
      while (!stop) {
        const t = new Tap(rig.smtpPort);
        opened += 1;
        await t.ready.catch(() => undefined);
        // hold the slot for a moment if we got one, then give it up
        await t.until((x) => /\r\n/.test(x.text), "first reply", 30_000).catch(() => undefined);
        // fixed wait on purpose: the flood holds its slot a moment: load, not a wait
        await new Promise((r) => setTimeout(r, 200));
        t.socket.destroy();
      }
    };
    const flooders = Array.from({ length: MAX_CONNECTIONS * 2 }, flooder);
    let tries = 0;
    let result: string | null = null;
    try {
      // Each slot a flooder gives up is most often taken again by that same flooder, which
      // reconnects at once, so the client's chance comes by luck of timing: it tries every 20 ms
      // for up to 60 s (with 500 tries 50 ms apart it went without a slot for 26 s in one clean
      // CI run of three here, and got one on try 48 and on try 280 in two others).
      const until = Date.now() + 60_000;
      while (result === null && Date.now() < until) {
        tries += 1;
        result = await deliver([rcpt(60)], "during-flood");
        // fixed wait on purpose: a sender's pause between tries: load, not a wait
        if (result === null) await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      stop = true;
      await Promise.all(flooders);
    }
    figures.push(`refilling flood: ${opened} flood sockets; the legitimate client delivered on try ${tries}`);
    expect(result).toMatch(/^250 /);
  });
});

describe("AUTH guessing", () => {
  const plain = (user: string, pass: string) => Buffer.from(`\u0000${user}\u0000${pass}`).toString("base64");

  it("wrong passwords over loopback get slower answers and the session is cut at the third", async () => {
    const { client, banner } = await RawSmtp.connect(rig.smtpPort);
    expect(banner).toMatch(/^220 /);
    expect(await client.cmd("EHLO guesser.example")).toMatch(/AUTH PLAIN LOGIN/);
    const replies: string[] = [];
    const took: number[] = [];
    for (const guess of ["password", "123456", "alice", "letmein", "hunter2"]) {
      if (client.closed) break;
      const t0 = Date.now();
      const r = await client.cmd(`AUTH PLAIN ${plain("alice", guess)}`);
      took.push(Date.now() - t0);
      if (r === "") break;
      replies.push(r);
    }
    await waitUntil(() => client.closed, "the guesser to be cut", 30_000);
    client.close();
    figures.push(
      `AUTH guessing: ${replies.length} answers (${replies.map((r) => r.slice(0, 3)).join(", ")}), each took ${took.map((ms) => `${ms} ms`).join(", ")}; then cut`,
    );
    expect(replies.map((r) => r.slice(0, 3))).toEqual(["535", "535", "421"]);
    expect(replies[2]).toMatch(/Too many failed authentication attempts/);
    // refusals at AUTH are logged as REJECTED with their catalogue code, and nothing the guesser typed
    const rejected = daemon.out.text
      .split("\n")
      .filter((l) => l.includes('"msg":"REJECTED"') && /"code":"(AUTH_FAILED|CLIENT_LIMIT)"/.test(l));
    expect(rejected.length).toBeGreaterThanOrEqual(3);
    expect(rejected.filter((l) => l.includes('"login"'))).toEqual([]);
  });

  it("the right password still works in a new session (the cut is per session, not a lock-out)", async () => {
    const { client } = await RawSmtp.connect(rig.smtpPort);
    await client.cmd("EHLO owner.example");
    expect(await client.cmd(`AUTH PLAIN ${plain("alice", PASSWORD)}`)).toMatch(/^235 /);
    client.close();
  });
});

describe("after the abuse", () => {
  it("the daemon logged no unhandled error and still serves", async () => {
    expect(daemon.out.text).not.toContain("BUG: unhandled");
    expect(daemon.child.exitCode).toBeNull();
    expect(await deliver([rcpt(70)], "final")).toMatch(/^250 /);
  });
});
