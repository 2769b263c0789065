// The public MX mode (smtp.senderAuth: verify) against a real DNS server on loopback serving SPF,
// DKIM and DMARC records: mail DKIM-signed by nodemailer, sent over real SMTP from distinct
// loopback addresses (127.0.0.x) so that SPF decides. Each refusal is checked for its RFC 7372
// code and for leaving nothing behind (no job, no work folder).
import { readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { senderAuthOff, type SmtpConfig, type UserConfig } from "../../src/config/schema.js";
import { composeSigned, dkimKey, sendFrom, type Outgoing } from "../helpers/dkim-mail.js";
import { emulatorCall } from "../helpers/client.js";
import { RawSmtp } from "../helpers/raw-smtp.js";
import { startTestDns, startSilentDns, type TestDns } from "../helpers/dns-server.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { seedWithKeys } from "../helpers/seed.js";
import { RefusalLog } from "../../src/web/refusals.js";
import { renderText } from "../../src/notify/mail-body.js";
import { composeOutcome } from "../../src/notify/outcome-mail.js";
import { silentLogger } from "../../src/log/logger.js";
import { DOMAIN, PDF, jobIdOf, startRig, stopEmulator, USERS, type Rig } from "./harness.js";

const SIGNED = dkimKey(); // signed.test: SPF and DKIM, no DMARC record
const STRICT = dkimKey(); // strict.test: DMARC p=reject
const OTHER = dkimKey(); // other.test: a domain that is not the sender's
const WRONG = dkimKey(); // a key signed.test never published
const WEAK = dkimKey(768); // weak.test: a key shorter than minKeyBits (1024)

// 127.0.0.2 is the senders' mail server; 127.0.0.3 is a stranger's host
const GOOD_IP = "127.0.0.2";
const BAD_IP = "127.0.0.3";

const ZONE = {
  "signed.test": ["v=spf1 ip4:127.0.0.2 -all"],
  "sel._domainkey.signed.test": [SIGNED.record],
  "strict.test": ["v=spf1 ip4:127.0.0.2 -all"],
  "sel._domainkey.strict.test": [STRICT.record],
  "_dmarc.strict.test": ["v=DMARC1; p=reject"],
  "other.test": ["v=spf1 ip4:127.0.0.3 -all"],
  "sel._domainkey.other.test": [OTHER.record],
  "weak.test": ["v=spf1 ip4:127.0.0.2 -all"],
  "sel._domainkey.weak.test": [WEAK.record],
};

const MX_USERS: UserConfig[] = [
  ...USERS,
  { name: "carol", email: "carol@signed.test", aliases: [], apiKey: "carol-print-key" },
  { name: "dave", email: "dave@strict.test", aliases: [], apiKey: "dave-print-key" },
  { name: "erin", email: "erin@weak.test", aliases: [], apiKey: "erin-print-key" },
];

const FAX = `15551234567@${DOMAIN}`;

/** The public MX mode as these tests run it. */
const VERIFY: SmtpConfig["senderAuth"] = { ...senderAuthOff(), mode: "verify" };

type Send = Omit<Outgoing, "to">;

function send(rig: Rig, s: Send): Promise<string> {
  return sendFrom(rig.port, {
    ...s,
    to: FAX,
    attachments: [{ filename: "page.pdf", content: PDF, contentType: "application/pdf" }],
  });
}

let emu: TestEmulator;
let dns: TestDns;
let rig: Rig;
const refusals = new RefusalLog();

beforeAll(async () => {
  // each extra user acts as alice or bob at the service, with a key of its own
  emu = await startTestEmulator({
    seed: seedWithKeys({ alice: ["carol-print-key"], bob: ["dave-print-key", "erin-print-key"] }),
  });
  dns = await startTestDns(ZONE);
  rig = await startRig(emu, {
    users: MX_USERS,
    smtp: {
      trustedNetworks: ["127.0.0.1/32"],
      senderAuth: VERIFY,
    },
    dns: { servers: [dns.server], timeout: 500 },
    logger: refusals.tap(silentLogger(), "smtp"),
  });
});
afterAll(async () => {
  await rig?.close();
  await dns?.close();
  await stopEmulator(emu);
});

async function jobCount(): Promise<number> {
  return (await rig.store.listJobs({ limit: 10_000 })).length;
}

function workFolders(): string[] {
  return readdirSync(path.join(rig.dataDir, "incoming"));
}

/** A refusal: the reply matches, and no job or work folder is left. */
async function expectRefused(s: Send, reply: RegExp): Promise<string> {
  const before = await jobCount();
  const r = await send(rig, s);
  expect(r).toMatch(reply);
  expect(await jobCount()).toBe(before);
  expect(workFolders()).toEqual([]);
  return r;
}

describe("smtp.senderAuth verify: strangers prove their sender", () => {
  it("a signed, aligned mail from a server in the SPF record is queued, and its check is kept for the outcome mail", async () => {
    const r = await send(rig, {
      from: "carol@signed.test",
      ip: GOOD_IP,
      sign: { domain: "signed.test", key: SIGNED.privateKey },
    });
    expect(r).toMatch(/^250 /);
    const job = await rig.store.getJob(jobIdOf(r));
    expect(job?.meta.origin?.senderCheck).toMatch(/^SPF\+DKIM pass for signed\.test/);
    // the user's outcome mail says which check let the mail in
    const text = renderText(composeOutcome(job!, "UTC").blocks);
    expect(text).toMatch(/Sender check:\s+SPF\+DKIM pass for signed\.test \(no DMARC record\)/);
    const metrics = await rig.metrics.registry.getSingleMetricAsString("faxgate_smtp_sender_verdicts_total");
    expect(metrics).toMatch(/verdict="pass",check="spf\+dkim"\} 1/);
  });

  it("the same mail from an address outside the SPF record: 550 5.7.23", async () => {
    await expectRefused(
      { from: "carol@signed.test", ip: BAD_IP, sign: { domain: "signed.test", key: SIGNED.privateKey } },
      /^550 5\.7\.23 SPF check failed: signed\.test does not list 127\.0\.0\.3/,
    );
  });

  it("a signature that does not verify (body changed after signing): 550 5.7.20", async () => {
    await expectRefused(
      { from: "carol@signed.test", ip: GOOD_IP, sign: { domain: "signed.test", key: SIGNED.privateKey }, tamper: true },
      /^550 5\.7\.20 No valid DKIM signature for signed\.test: its signature does not verify/,
    );
  });

  it("a signature with a key the domain never published: 550 5.7.20", async () => {
    await expectRefused(
      { from: "carol@signed.test", ip: GOOD_IP, sign: { domain: "signed.test", key: WRONG.privateKey } },
      /^550 5\.7\.20 /,
    );
  });

  it("an unsigned mail from a domain without DMARC: 550 5.7.20 (SPF alone is not enough)", async () => {
    await expectRefused(
      { from: "carol@signed.test", ip: GOOD_IP },
      /^550 5\.7\.20 No valid DKIM signature for signed\.test: the message is not signed/,
    );
  });

  it("signed with the key of another domain: 550 5.7.22", async () => {
    await expectRefused(
      { from: "carol@signed.test", ip: GOOD_IP, sign: { domain: "other.test", key: OTHER.privateKey } },
      /^550 5\.7\.22 No DKIM signature of signed\.test: the message is signed by other\.test only/,
    );
  });

  it("signed with a key shorter than minKeyBits: 550 5.7.21", async () => {
    await expectRefused(
      { from: "erin@weak.test", ip: GOOD_IP, sign: { domain: "weak.test", key: WEAK.privateKey } },
      /^550 5\.7\.21 The DKIM signature of weak\.test is not acceptable: its key is shorter than 1024 bits/,
    );
  });

  it("From: differing from the envelope sender: 550 5.7.26", async () => {
    await expectRefused(
      {
        from: "carol@signed.test",
        headerFrom: "mallory@other.test",
        ip: GOOD_IP,
        sign: { domain: "other.test", key: OTHER.privateKey },
      },
      /^550 5\.7\.26 The From: header \(<mallory@other\.test>\) is not the envelope sender <carol@signed\.test>/,
    );
  });

  it("a domain with DMARC p=reject, from a host outside its SPF, unsigned: 550 5.7.26 naming the policy", async () => {
    await expectRefused(
      { from: "dave@strict.test", ip: BAD_IP },
      /^550 5\.7\.26 This message does not pass the DMARC policy of strict\.test \(p=reject\)/,
    );
  });

  it("the same domain, signed by itself: DMARC passes on DKIM alone and the mail is queued", async () => {
    const r = await send(rig, {
      from: "dave@strict.test",
      ip: BAD_IP,
      sign: { domain: "strict.test", key: STRICT.privateKey },
    });
    expect(r).toMatch(/^250 /);
    expect((await rig.store.getJob(jobIdOf(r)))?.meta.origin?.senderCheck).toMatch(
      /^DMARC pass for strict\.test \(aligned dkim\)/,
    );
  });

  it("a stranger whose envelope sender is not a user is refused at MAIL FROM", async () => {
    await expectRefused(
      { from: "eve@other.test", ip: BAD_IP, sign: { domain: "other.test", key: OTHER.privateKey } },
      /^550 5\.7\.1 Sender <eve@other\.test> is not a user/,
    );
  });

  it("a second mail from the same domain asks DNS nothing (answers cached per their TTL)", async () => {
    const before = dns.asked.length;
    const r = await send(rig, {
      from: "carol@signed.test",
      ip: GOOD_IP,
      sign: { domain: "signed.test", key: SIGNED.privateKey },
    });
    expect(r).toMatch(/^250 /);
    expect(dns.asked.slice(before)).toEqual([]);
  });

  it("every refusal is in the console refusal list with its reply, and counted", async () => {
    const reasons = refusals.recent(100).map((r) => r.reason);
    for (const code of ["5.7.23", "5.7.20", "5.7.22", "5.7.26"])
      expect(reasons.some((r) => r.includes(code))).toBe(true);
    const metrics = await rig.metrics.registry.getSingleMetricAsString("faxgate_smtp_sender_verdicts_total");
    expect(metrics).toMatch(/verdict="fail",check="spf"\} 1/);
    expect(metrics).toMatch(/verdict="fail",check="dmarc"\} 1/);
  });
});

describe("trusted relays: their Authentication-Results", () => {
  it("dmarc=fail recorded by the relay for the sender domain: 550 5.7.26; without it the same mail is queued", async () => {
    const forged = {
      from: "alice@example.com",
      ip: "127.0.0.1",
      extraHeaders: {
        "Authentication-Results":
          "relay.example.com; spf=softfail smtp.mailfrom=alice@example.com; dkim=none; dmarc=fail (p=NONE) header.from=example.com",
      },
    };
    await expectRefused(
      forged,
      /^550 5\.7\.26 Your mail relay \(relay\.example\.com\) found that this message fails the DMARC policy of example\.com/,
    );
    expect(await send(rig, { from: "alice@example.com", ip: "127.0.0.1" })).toMatch(/^250 /);
  });

  it("spf=fail is refused 5.7.23, and a dkim=pass beside it counts only from a named relay", async () => {
    const ar = (dkim: string) => ({
      "Authentication-Results": `relay.example.com; spf=fail smtp.mailfrom=alice@example.com; dkim=${dkim} header.d=example.com`,
    });
    await expectRefused(
      { from: "alice@example.com", ip: "127.0.0.1", extraHeaders: ar("fail") },
      /^550 5\.7\.23 Your mail relay/,
    );
    // no authserv-id is configured: the pass may be the sender's own words
    await expectRefused(
      { from: "alice@example.com", ip: "127.0.0.1", extraHeaders: ar("pass") },
      /^550 5\.7\.23 .*a dkim=pass counts only from a relay named in smtp\.senderAuth\.relays\.authservIds/,
    );
  });

  it("a forger's own dkim=pass below the relay's spf=fail does not cancel it (no authserv-id configured)", async () => {
    // the relay adds its verdict on top; the forger wrote the second field into the message
    await expectRefused(
      {
        from: "alice@example.com",
        ip: "127.0.0.1",
        extraHeaders: {
          "Authentication-Results": [
            "relay.example.com; spf=fail smtp.mailfrom=alice@example.com; dkim=none",
            "relay.example.com; dkim=pass header.d=example.com",
          ],
        },
      },
      /^550 5\.7\.23 Your mail relay \(relay\.example\.com\) found that this message fails SPF for example\.com/,
    );
  });

  it("Exchange Online as the relay (its header names no authserv-id): its dmarc=fail refuses", async () => {
    await expectRefused(
      {
        from: "alice@example.com",
        ip: "127.0.0.1",
        extraHeaders: {
          "Authentication-Results":
            "spf=fail (sender IP is 198.51.100.7) smtp.mailfrom=example.com; dkim=none (message not signed) header.d=none;dmarc=fail action=oreject header.from=example.com;compauth=fail reason=000",
        },
      },
      /^550 5\.7\.26 Your mail relay found that this message fails the DMARC policy of example\.com/,
    );
  });

  it("a topmost field that cannot be read refuses; nothing below it is read", async () => {
    await expectRefused(
      {
        from: "alice@example.com",
        ip: "127.0.0.1",
        extraHeaders: {
          "Authentication-Results": [
            "relay.example.com; spf=fail (unclosed comment",
            "relay.example.com; dmarc=pass header.from=example.com",
          ],
        },
      },
      /^550 5\.7\.1 Your mail relay's verdict cannot be believed: the topmost Authentication-Results cannot be read/,
    );
  });
});

describe("a default install (smtp.senderAuth not set): the relay's verdict is still read", () => {
  it("a relayed forgery the relay marked dmarc=fail is refused 550 5.7.26; its clean mail is queued", async () => {
    const plain = await startRig(emu, { smtp: { trustedNetworks: ["127.0.0.1/32"] } });
    try {
      const relayed = (headers: Record<string, string>) =>
        sendFrom(plain.port, {
          from: "alice@example.com",
          to: FAX,
          ip: "127.0.0.1",
          extraHeaders: headers,
          attachments: [{ filename: "page.pdf", content: PDF }],
        });
      expect(
        await relayed({
          "Authentication-Results":
            "relay.example.com; spf=softfail smtp.mailfrom=alice@example.com; dkim=none; dmarc=fail (p=REJECT) header.from=example.com",
        }),
      ).toMatch(/^550 5\.7\.26 Your mail relay \(relay\.example\.com\) found that this message fails the DMARC policy/);
      expect((await plain.store.listJobs({ limit: 10 })).length).toBe(0);
      expect(await relayed({})).toMatch(/^250 /);
    } finally {
      await plain.close();
    }
  });
});

describe("trusted relays named by authserv-id, a pass required", () => {
  it("only the named relay's Authentication-Results count, and it must have recorded a pass", async () => {
    const named = await startRig(emu, {
      users: MX_USERS,
      smtp: {
        trustedNetworks: ["127.0.0.1/32"],
        senderAuth: { ...senderAuthOff(), relays: { check: "pass", authservIds: ["relay.example.com"] } },
      },
      dns: { servers: [dns.server], timeout: 500 },
    });
    const relay = (headers: Record<string, string | string[]>) =>
      sendFrom(named.port, {
        from: "alice@example.com",
        to: FAX,
        ip: "127.0.0.1",
        extraHeaders: headers,
        attachments: [{ filename: "page.pdf", content: PDF }],
      });
    try {
      // a pass written by anyone else (the forger, upstream) is not the relay's word
      expect(
        await relay({ "Authentication-Results": "mx.forger.example; dmarc=pass header.from=example.com" }),
      ).toMatch(
        /^550 5\.7\.1 Your mail relay's verdict cannot be believed: the topmost Authentication-Results is by mx\.forger\.example/,
      );
      expect(await relay({})).toMatch(/^550 5\.7\.26 /);
      expect(
        await relay({
          "Authentication-Results":
            "relay.example.com; spf=pass smtp.mailfrom=alice@example.com; dkim=pass header.d=example.com; dmarc=pass header.from=example.com",
        }),
      ).toMatch(/^250 /);
      // the named relay's own DKIM pass beside an SPF fail: forwarded mail, taken
      expect(
        await relay({
          "Authentication-Results":
            "relay.example.com; spf=fail smtp.mailfrom=alice@example.com; dkim=pass header.d=example.com",
        }),
      ).toMatch(/^250 /);
      // only the topmost field is the relay's: what came below it with the message is not read
      expect(
        await relay({
          "Authentication-Results": [
            "relay.example.com; dmarc=pass header.from=example.com",
            "mx.forger.example; dmarc=fail header.from=example.com",
          ],
        }),
      ).toMatch(/^250 /);
      // a topmost field of another host means the relay added none: its verdict is missing
      expect(
        await relay({
          "Authentication-Results": [
            "mx.forger.example; dmarc=pass header.from=example.com",
            "relay.example.com; dmarc=pass header.from=example.com",
          ],
        }),
      ).toMatch(
        /^550 5\.7\.1 .*the topmost Authentication-Results is by mx\.forger\.example, not by relay\.example\.com/,
      );
      expect((await named.store.listJobs({ limit: 10 })).length).toBe(3);
    } finally {
      await named.close();
    }
  });
});

/** The emulator's count of contact lookups so far (any user's key). */
async function contactCalls(): Promise<number> {
  const calls = (await emulatorCall(emu, "GET", "/_emulator/requests")) as Record<string, number>;
  return Object.entries(calls)
    .filter(([route]) => /contact/i.test(route))
    .reduce((n, [, c]) => n + c, 0);
}

/**
 * One SMTP session from `ip` with a real client that says exactly this: every reply in order,
 * from MAIL FROM on (DATA's final reply last, when a message is sent).
 */
async function session(ip: string, from: string, rcpts: string[], message: Buffer | null): Promise<string[]> {
  const { client } = await RawSmtp.connect(rig.port, "127.0.0.1", ip);
  try {
    await client.cmd("EHLO mail.sender.test");
    const replies = [await client.cmd(`MAIL FROM:<${from}>`)];
    for (const r of rcpts) replies.push(await client.cmd(`RCPT TO:<${r}>`));
    if (message) {
      const data = await client.cmd("DATA");
      replies.push(data);
      if (data.startsWith("354")) {
        client.write(`${message.toString("latin1").replace(/^\./gm, "..")}\r\n.\r\n`);
        replies.push(await client.reply(60_000));
      }
    }
    await client.cmd("QUIT");
    return replies;
  } finally {
    client.close();
  }
}

describe("a stranger's claim to be a user is not used before it is proved", () => {
  const CONTACT = `acme.billing@${DOMAIN}`;
  const UNKNOWN = `nobody.here@${DOMAIN}`;

  it("RCPT gives every well-formed recipient the same 250 and asks the service nothing; unproved DATA is refused, still asking nothing", async () => {
    const before = await contactCalls();
    const jobs = await jobCount();
    // dave@strict.test has DMARC, so MAIL FROM is taken from any host: a forger's MAIL FROM
    const replies = await session(BAD_IP, "dave@strict.test", [CONTACT, UNKNOWN, FAX], null);
    expect(replies).toEqual([
      expect.stringMatching(/^250 /),
      expect.stringMatching(/^250 /),
      expect.stringMatching(/^250 /),
      expect.stringMatching(/^250 /),
    ]);
    expect(await contactCalls()).toBe(before);
    const unsigned = await composeSigned({ from: "dave@strict.test", to: CONTACT, ip: BAD_IP });
    const withData = await session(BAD_IP, "dave@strict.test", [CONTACT, UNKNOWN], unsigned);
    expect(withData.at(-1)).toMatch(/^550 5\.7\.26 This message does not pass the DMARC policy of strict\.test/);
    expect(await contactCalls()).toBe(before);
    expect(await jobCount()).toBe(jobs);
  });

  it("once proved, the contacts are looked up: an unknown one refuses the whole message naming it", async () => {
    const signed = (to: string) =>
      composeSigned({
        from: "carol@signed.test",
        to,
        ip: GOOD_IP,
        sign: { domain: "signed.test", key: SIGNED.privateKey },
        attachments: [{ filename: "page.pdf", content: PDF, contentType: "application/pdf" }],
      });
    const jobs = await jobCount();
    const refused = await session(
      GOOD_IP,
      "carol@signed.test",
      [CONTACT, UNKNOWN],
      await signed(`${CONTACT}, ${UNKNOWN}`),
    );
    expect(refused.slice(0, 3)).toEqual([
      expect.stringMatching(/^250 /),
      expect.stringMatching(/^250 /),
      expect.stringMatching(/^250 /),
    ]);
    expect(refused.at(-1)).toMatch(
      /^553 5\.1\.1 Recipient <nobody\.here@fax\.example\.com>: No contact named "nobody\.here" with a fax number; the message was not faxed to anyone$/,
    );
    expect(await jobCount()).toBe(jobs);
    expect(workFolders()).toEqual([]);
    // the same proved mail to the known contact alone: faxed to the contact's number
    const ok = await session(GOOD_IP, "carol@signed.test", [CONTACT], await signed(CONTACT));
    const job = await rig.store.getJob(jobIdOf(ok.at(-1)!));
    expect(job!.recipients.map((r) => r.number)).toEqual(["+15550100100"]);
  });
});

describe("DNS that does not answer", () => {
  it("451 4.7.x: the sender is told to try again, nothing is kept", async () => {
    const silent = await startSilentDns();
    const down = await startRig(emu, {
      users: MX_USERS,
      smtp: {
        trustedNetworks: ["127.0.0.1/32"],
        senderAuth: VERIFY,
      },
      dns: { servers: [silent.server], timeout: 200 },
    });
    try {
      const r = await send(down, {
        from: "carol@signed.test",
        ip: GOOD_IP,
        sign: { domain: "signed.test", key: SIGNED.privateKey },
      });
      expect(r).toMatch(/^451 4\.7\.\d+ Cannot (check|look up) .*(signed\.test).* right now/);
      expect((await down.store.listJobs({ limit: 10 })).length).toBe(0);
    } finally {
      await down.close();
      await silent.close();
    }
  });
});

describe("forgeries and the user's message rate", () => {
  it("forged mail in a user's name does not spend their rate; verified mail does", async () => {
    const limited = await startRig(emu, {
      users: MX_USERS,
      smtp: {
        trustedNetworks: ["127.0.0.1/32"],
        maxMessagesPerMinute: 2,
        senderAuth: VERIFY,
      },
      dns: { servers: [dns.server], timeout: 500 },
    });
    try {
      const real: Send = {
        from: "carol@signed.test",
        ip: GOOD_IP,
        sign: { domain: "signed.test", key: SIGNED.privateKey },
      };
      // three forgeries in carol's name from a host outside her domain's SPF record
      for (let i = 0; i < 3; i += 1) expect(await send(limited, { ...real, ip: BAD_IP })).toMatch(/^550 5\.7\.23 /);
      // carol's own mail still goes through, up to her rate, and the rate still holds for her
      expect(await send(limited, real)).toMatch(/^250 /);
      expect(await send(limited, real)).toMatch(/^250 /);
      expect(await send(limited, real)).toMatch(/^451 4\.7\.1 Too many messages from carol: at most 2 per minute/);
      expect((await limited.store.listJobs({ limit: 10 })).length).toBe(2);
    } finally {
      await limited.close();
    }
  });
});
