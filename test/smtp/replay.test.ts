// Issue 48 item 1: a proved sender is not a wanted fax. In the public MX mode anyone holding one
// DKIM-signed mail of a user could send its bytes again, from any host, to any number. These tests
// do what that attacker does (real SMTP from another loopback address, a real DNS server serving
// SPF, DKIM and DMARC) against a Google-shaped signature (h= covers To and Cc) and a Microsoft
// 365-shaped one (h= from:date:subject:message-id only), and check that the replay record holds
// across a restart and across two gateways on one PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { senderAuthOff, type SmtpConfig, type UserConfig } from "../../src/config/schema.js";
import type { QueueStore } from "../../src/store/queue-store.js";
import { composeSigned, dkimKey, sendFrom, type Outgoing } from "../helpers/dkim-mail.js";
import { startTestDns, type TestDns } from "../helpers/dns-server.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { seedWithKeys } from "../helpers/seed.js";
import { openBackend, type BackendStore, usePgCluster } from "../helpers/store-backends.js";
import { DOMAIN, jobIdOf, PDF, startRig, stopEmulator, USERS, type Rig } from "./harness.js";

const GOOGLE = dkimKey();
const MS = dkimKey();

// 127.0.0.2 is the senders' mail server; 127.0.0.3 is the attacker's host
const GOOD_IP = "127.0.0.2";
const BAD_IP = "127.0.0.3";
const MS_SIGNS = "from:date:subject:message-id";

const ZONE = {
  "google.test": ["v=spf1 ip4:127.0.0.2 -all"],
  "sel._domainkey.google.test": [GOOGLE.record],
  "_dmarc.google.test": ["v=DMARC1; p=reject"],
  "ms.test": ["v=spf1 ip4:127.0.0.2 -all"],
  "sel._domainkey.ms.test": [MS.record],
  "_dmarc.ms.test": ["v=DMARC1; p=reject"],
  "msstrict.test": ["v=spf1 ip4:127.0.0.2 -all"],
  "sel._domainkey.msstrict.test": [MS.record],
  "_dmarc.msstrict.test": ["v=DMARC1; p=reject"],
};

const MX_USERS: UserConfig[] = [
  ...USERS,
  { name: "gina", email: "gina@google.test", aliases: [], apiKey: "gina-print-key" },
  { name: "mike", email: "mike@ms.test", aliases: [], apiKey: "mike-print-key" },
  { name: "sam", email: "sam@msstrict.test", aliases: [], apiKey: "sam-print-key" },
];

const VERIFY: SmtpConfig["senderAuth"] = {
  ...senderAuthOff(),
  mode: "verify",
  domains: { "msstrict.test": { requireSignedRecipients: true } },
};

const fax = (n: string): string => `${n}@${DOMAIN}`;
const A = fax("15551230001");
const B = fax("15551230002");

let emu: TestEmulator;
let dns: TestDns;
let rig: Rig;

const rigOpts = (wrap?: () => QueueStore) => ({
  users: MX_USERS,
  smtp: { trustedNetworks: ["127.0.0.1/32"], senderAuth: VERIFY, maxMessagesPerMinutePerClient: 10_000 },
  dns: { servers: [dns.server], timeout: 500 },
  ...(wrap ? { wrapStore: wrap } : {}),
});

beforeAll(async () => {
  // each extra user acts as alice or bob at the service, with a key of its own
  emu = await startTestEmulator({
    seed: seedWithKeys({ alice: ["gina-print-key"], bob: ["mike-print-key", "sam-print-key"] }),
  });
  dns = await startTestDns(ZONE);
  rig = await startRig(emu, rigOpts());
});
afterAll(async () => {
  await rig?.close();
  await dns?.close();
  await stopEmulator(emu);
});

/** A mail of gina (Google-shaped signature: To and Cc signed) or mike (Microsoft-shaped: not). */
function mail(who: "gina" | "mike" | "sam", over: Partial<Outgoing> = {}): Outgoing {
  const domain = who === "gina" ? "google.test" : who === "mike" ? "ms.test" : "msstrict.test";
  return {
    from: `${who}@${domain}`,
    to: A,
    ip: GOOD_IP,
    sign: {
      domain,
      key: who === "gina" ? GOOGLE.privateKey : MS.privateKey,
      ...(who === "gina" ? {} : { headerFieldNames: MS_SIGNS }),
    },
    attachments: [{ filename: "page.pdf", content: PDF, contentType: "application/pdf" }],
    subject: `fax ${Math.random().toString(36).slice(2)}`,
    ...over,
  };
}

async function jobCount(r: Rig = rig): Promise<number> {
  return (await r.store.listJobs({ limit: 10_000 })).length;
}

describe("a copy of a signed mail is faxed once (replay record)", () => {
  it("Google-shaped: the same bytes again, from the attacker's host or the sender's, are refused 550 5.7.1", async () => {
    const m = mail("gina");
    const raw = await composeSigned(m);
    const first = await sendFrom(rig.port, m, raw);
    expect(first).toMatch(/^250 /);
    const job = await rig.store.getJob(jobIdOf(first));
    expect(job?.meta.origin?.recipientsProved).toBe("yes");
    const before = await jobCount();
    for (const ip of [BAD_IP, GOOD_IP]) {
      const again = await sendFrom(rig.port, { ...m, ip }, raw);
      expect(again).toMatch(
        /^550 5\.7\.1 This signed message was already faxed to \+15551230001 at .* UTC: a copy of a signed mail cannot be faxed again/,
      );
    }
    expect(await jobCount()).toBe(before);
  });

  it("Microsoft-shaped (To unsigned): the copy with To: rewritten to another number is refused", async () => {
    const m = mail("mike");
    const raw = await composeSigned(m);
    const first = await sendFrom(rig.port, m, raw);
    expect(first).toMatch(/^250 /);
    expect((await rig.store.getJob(jobIdOf(first)))?.meta.origin?.recipientsProved).toBe("no");
    // the attacker (a Cc'd colleague) rewrites To: — the signature does not cover it, so it still verifies
    const rewritten = Buffer.from(raw.toString("latin1").replace(/^To: .*$/m, `To: ${B}`), "latin1");
    expect(rewritten.equals(raw)).toBe(false);
    const before = await jobCount();
    const again = await sendFrom(rig.port, { ...m, ip: BAD_IP, rcpt: [B] }, rewritten);
    expect(again).toMatch(/^550 5\.7\.1 This signed message was already faxed at .* UTC/);
    expect(await jobCount()).toBe(before);
  });

  it("a split delivery (A, then B, both in To) is taken once each; A a second time is refused", async () => {
    const m = mail("gina", { headerTo: [A, B] });
    const raw = await composeSigned(m);
    expect(await sendFrom(rig.port, { ...m, rcpt: [A] }, raw)).toMatch(/^250 /);
    expect(await sendFrom(rig.port, { ...m, rcpt: [B] }, raw)).toMatch(/^250 /);
    const before = await jobCount();
    expect(await sendFrom(rig.port, { ...m, rcpt: [A] }, raw)).toMatch(
      /^550 5\.7\.1 This signed message was already faxed to \+15551230001/,
    );
    expect(await jobCount()).toBe(before);
  });
});

describe("the signed Date: decides freshness", () => {
  it("a mail signed 5 hours ago (maxMessageAgeHours 4) is refused 550 5.7.1", async () => {
    const r = await sendFrom(rig.port, mail("gina", { date: new Date(Date.now() - 5 * 3_600_000) }));
    expect(r).toMatch(/^550 5\.7\.1 This signed message is dated .* UTC, more than 4 hours ago/);
  });

  it("a mail dated 2 hours ahead is refused", async () => {
    const r = await sendFrom(rig.port, mail("gina", { date: new Date(Date.now() + 2 * 3_600_000) }));
    expect(r).toMatch(/^550 5\.7\.1 This signed message is dated .* in the future/);
  });

  it("a signature that does not cover Date: proves no date: refused", async () => {
    const m = mail("mike");
    const r = await sendFrom(rig.port, { ...m, sign: { ...m.sign!, headerFieldNames: "from:subject:message-id" } });
    expect(r).toMatch(/^550 5\.7\.1 The date of this signed message is not proved \(its signature does not cover/);
  });
});

describe("destinations come from what the sender wrote", () => {
  it("an envelope recipient not in To/Cc is refused, and nothing is queued", async () => {
    const before = await jobCount();
    const r = await sendFrom(rig.port, mail("gina", { rcpt: [A, B] }));
    expect(r).toMatch(/^550 5\.7\.1 <15551230002@fax\.example\.com> is not in the To: or Cc: of this message/);
    expect(await jobCount()).toBe(before);
  });

  it("a To: added above the signed one is not proved by the signature", async () => {
    const m = mail("gina");
    const raw = await composeSigned(m);
    const added = Buffer.concat([Buffer.from(`To: ${B}\r\n`), raw]);
    const r = await sendFrom(rig.port, { ...m, ip: BAD_IP, rcpt: [B] }, added);
    // the first use of this signature, but its To: is no longer all signed: not proved
    expect(r).toMatch(/^250 /);
    expect((await rig.store.getJob(jobIdOf(r)))?.meta.origin?.recipientsProved).toBe("no");
  });

  it("requireSignedRecipients: a Microsoft-shaped mail of that domain is refused", async () => {
    const r = await sendFrom(rig.port, mail("sam"));
    expect(r).toMatch(
      /^550 5\.7\.1 The fax numbers of this message are not covered by a DKIM signature of msstrict\.test/,
    );
  });
});

describe("the record is kept in the store", () => {
  it("a new gateway on the same data folder still refuses the copy", async () => {
    const backend = await openBackend("sqlite", null);
    try {
      const m = mail("gina");
      const raw = await composeSigned(m);
      const one = await startRig(
        emu,
        rigOpts(() => backend.store),
      );
      expect(await sendFrom(one.port, m, raw)).toMatch(/^250 /);
      await one.close();
      const store = await backend.reopen();
      const two = await startRig(
        emu,
        rigOpts(() => store),
      );
      try {
        expect(await sendFrom(two.port, { ...m, ip: BAD_IP }, raw)).toMatch(
          /^550 5\.7\.1 This signed message was already faxed/,
        );
      } finally {
        await two.close();
      }
    } finally {
      await backend.cleanup();
    }
  });

  const postgres = usePgCluster("replay across two gateways on PostgreSQL");
  describe.skipIf(postgres.missing !== null)("two gateways on one PostgreSQL", () => {
    let backend: BackendStore;
    let one: Rig;
    let two: Rig;
    beforeAll(async () => {
      backend = await openBackend("postgres", postgres.cluster);
      const other = await backend.reopen();
      one = await startRig(
        emu,
        rigOpts(() => backend.store),
      );
      two = await startRig(
        emu,
        rigOpts(() => other),
      );
    }, 60_000);
    afterAll(async () => {
      await one?.close();
      await two?.close();
      await backend?.cleanup();
    });

    it("a copy sent to the other gateway is refused", async () => {
      const m = mail("gina");
      const raw = await composeSigned(m);
      expect(await sendFrom(one.port, m, raw)).toMatch(/^250 /);
      expect(await sendFrom(two.port, { ...m, ip: BAD_IP }, raw)).toMatch(
        /^550 5\.7\.1 This signed message was already faxed/,
      );
    });

    it("the same bytes to both gateways at once: one 250, one refusal", async () => {
      const m = mail("mike");
      const raw = await composeSigned(m);
      const replies = await Promise.all([sendFrom(one.port, m, raw), sendFrom(two.port, { ...m, ip: BAD_IP }, raw)]);
      expect(replies.filter((r) => r.startsWith("250 ")).length).toBe(1);
      expect(replies.filter((r) => /^550 5\.7\.1 This signed message was already faxed/.test(r)).length).toBe(1);
    });
  });
});
