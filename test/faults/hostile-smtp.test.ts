// Hostile SMTP: a relay and sender battery (all refused), malformed MIME (each gets a job or a
// clear reply), and a daemon that neither crashes nor stalls through it.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/store.js";
import { converse, RawSmtp } from "../helpers/raw-smtp.js";
import { disposeRig, makeRig, startDaemon, type Daemon, type Rig } from "./harness.js";

let rig: Rig;
let daemon: Daemon;

beforeAll(async () => {
  rig = await makeRig();
  daemon = await startDaemon(rig);
});
afterAll(() => disposeRig(rig, daemon));

const relayTries = [
  "someone@gmail.com",
  "victim%gmail.com@fax.example.com",
  "@fax.example.com:victim@gmail.com",
  '"victim@gmail.com"@fax.example.com',
  "victim@gmail.com@fax.example.com",
  "gmail.com!victim@fax.example.com",
  "15551234567@fax.example.com.evil.example",
  "15551234567@evil.example",
  "15551234567@sub.fax.example.com",
];

describe("relay battery", () => {
  it.each(relayTries)("refuses RCPT TO:<%s>", async (rcpt) => {
    const replies = await converse(rig.smtpPort, "alice@example.com", [rcpt], null);
    const rcptReply = replies[3]!;
    expect(rcptReply).toMatch(/^5\d\d /);
  });

  it("refuses unknown and forged senders at MAIL FROM", async () => {
    for (const from of ["mallory@evil.example", "alice@example.com.evil.example", "", "postmaster"]) {
      const { client } = await RawSmtp.connect(rig.smtpPort);
      await client.cmd("EHLO x");
      const r = await client.cmd(`MAIL FROM:<${from}>`);
      expect(r, from).toMatch(/^5\d\d /);
      client.close();
    }
  });
});

function mime(parts: string): string {
  return `From: alice@example.com\r\nTo: 15551234567@fax.example.com\r\nSubject: hostile\r\nMessage-ID: <${Math.random().toString(36).slice(2)}@t>\r\n${parts}`;
}

const hostile: Array<[string, () => string]> = [
  [
    "broken boundary",
    () =>
      mime(
        'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="XYZ"\r\n\r\n--XYZ\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--XY',
      ),
  ],
  ["no headers at all", () => "just a body line\r\n"],
  [
    "unknown charset and encoding",
    () => mime("Content-Type: text/plain; charset=x-klingon\r\nContent-Transfer-Encoding: x-rot13\r\n\r\nUryyb\r\n"),
  ],
  [
    "wrong base64",
    () =>
      mime(
        "Content-Type: application/pdf; name=a.pdf\r\nContent-Disposition: attachment; filename=a.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!!not base64 at all!!!!\r\n",
      ),
  ],
  ["NUL bytes", () => mime(`Content-Type: text/plain\r\n\r\nhello\u0000world\u0000\r\n`)],
  ["1 MB header line", () => mime(`X-Long: ${"a".repeat(1_000_000)}\r\nContent-Type: text/plain\r\n\r\nbody\r\n`)],
  [
    "1,000 text/plain parts",
    () =>
      mime(
        `MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=P\r\n\r\n${Array.from({ length: 1000 }, (_v, i) => `--P\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`).join("")}--P--\r\n`,
      ),
  ],
  [
    "2.7 MB header block",
    () =>
      mime(
        `${Array.from({ length: 27_000 }, (_v, i) => `X-Filler-${i}: ${"h".repeat(90)}`).join("\r\n")}\r\nContent-Type: text/plain\r\n\r\nbody\r\n`,
      ),
  ],
  [
    "1,000 nested parts",
    () => {
      let body = "Content-Type: text/plain\r\n\r\ninnermost\r\n";
      for (let i = 0; i < 1000; i += 1)
        body = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${body}\r\n--b${i}--\r\n`;
      return mime(body);
    },
  ],
  [
    "zip bomb named .pdf",
    () =>
      mime(
        `MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: application/pdf; name=invoice.pdf\r\nContent-Disposition: attachment; filename=invoice.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.concat([Buffer.from("PK\x03\x04", "latin1"), Buffer.alloc(4096, 0x41)]).toString("base64")}\r\n--B--\r\n`,
      ),
  ],
];

describe("malformed MIME", () => {
  it.each(hostile)("%s: a job or a clear SMTP reply, and the daemon stays up", async (_name, make) => {
    const replies = await converse(rig.smtpPort, "alice@example.com", ["15551234567@fax.example.com"], make());
    const final = replies[replies.length - 2]!;
    // a fault of the message is answered for good: never 451 (that is for our own trouble)
    expect(final).toMatch(/^(250|552|554|550|553) /);
    if (final.startsWith("554 5.6.0 The message could not be read")) {
      const kept = /kept as (\S+)$/.exec(final)![1]!;
      const store = SqliteStore.open({ dataDir: rig.dataDir });
      try {
        expect((await store.getJob(kept))?.state).toBe("corrupt");
      } finally {
        store.close();
      }
    }
    if (final.startsWith("250")) {
      const id = /([A-Za-z0-9]{6,})\s*$/.exec(final)![1]!;
      const store = SqliteStore.open({ dataDir: rig.dataDir });
      try {
        expect(await store.getJob(id)).not.toBeNull();
      } finally {
        store.close();
      }
    }
    expect(daemon.child.exitCode).toBeNull();
    const { client, banner } = await RawSmtp.connect(rig.smtpPort);
    expect(banner).toMatch(/^220 /);
    client.close();
  });

  it("10,000 recipients are cut at maxRecipients with 452, the rest refused politely", async () => {
    const { client } = await RawSmtp.connect(rig.smtpPort);
    await client.cmd("EHLO x");
    expect(await client.cmd("MAIL FROM:<alice@example.com>")).toMatch(/^250/);
    let ok = 0;
    let tooMany = 0;
    for (let i = 0; i < 10_000; i += 1) {
      const r = await client.cmd(`RCPT TO:<1555${String(2_000_000 + i).padStart(7, "0")}@fax.example.com>`);
      if (r.startsWith("250")) ok += 1;
      else if (r.startsWith("452")) tooMany += 1;
      if (client.closed) break;
    }
    client.close();
    expect(ok).toBe(50);
    expect(tooMany).toBeGreaterThan(0);
    expect(daemon.child.exitCode).toBeNull();
  });
});

describe("after the battery", () => {
  it("the daemon logged no unhandled error and is still serving", async () => {
    expect(daemon.out.text).not.toContain("BUG: unhandled");
    expect(daemon.child.exitCode).toBeNull();
    const { client, banner } = await RawSmtp.connect(rig.smtpPort);
    expect(banner).toMatch(/^220 /);
    client.close();
  });
});
