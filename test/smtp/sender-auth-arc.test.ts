// ARC from the forwarders the operator names (smtp.senderAuth.arcForwarders): a mailing list
// receives a user's DKIM-signed mail, records that it passed DMARC, adds its footer (which breaks
// the author's signature) and seals the result with ARC, as Google Groups or Mailman do. It then
// hands the mail on from its own address, outside the author's SPF: SPF and DKIM fail, DMARC
// fails, and only the named forwarder's seal can let the mail in. The forwarder is mailauth's own
// authenticate() and sealMessage(); its ARC key is published by a real DNS server on loopback.
import { promises as dnsp } from "node:dns";
import { readdirSync } from "node:fs";
import path from "node:path";
import { authenticate, sealMessage, type ARCSealOptions } from "mailauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { senderAuthOff, type UserConfig } from "../../src/config/schema.js";
import { composeSigned, dkimKey, sendFrom } from "../helpers/dkim-mail.js";
import { startTestDns, type TestDns } from "../helpers/dns-server.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { seedWithKeys } from "../helpers/seed.js";
import { DOMAIN, PDF, jobIdOf, startRig, stopEmulator, USERS, type Rig } from "./harness.js";

const AUTHOR = dkimKey(); // orig.test: the author's own domain, DMARC p=reject
const LIST = dkimKey(); // lists.test: the forwarder the operator names
const STRANGER_LIST = dkimKey(); // elsewhere.test: a forwarder nobody named

// 127.0.0.2 is orig.test's mail server; 127.0.0.4 the forwarders' (in nobody's SPF record)
const AUTHOR_IP = "127.0.0.2";
const FORWARDER_IP = "127.0.0.4";

const ZONE = {
  "orig.test": ["v=spf1 ip4:127.0.0.2 -all"],
  "sel._domainkey.orig.test": [AUTHOR.record],
  "_dmarc.orig.test": ["v=DMARC1; p=reject"],
  "lists.test": ["v=spf1 ip4:127.0.0.4 -all"],
  "arc._domainkey.lists.test": [LIST.record],
  "elsewhere.test": ["v=spf1 ip4:127.0.0.4 -all"],
  "arc._domainkey.elsewhere.test": [STRANGER_LIST.record],
};

const SENDER = "dana@orig.test";
const FAX = `15551234567@${DOMAIN}`;

let emu: TestEmulator;
let dns: TestDns;
let rig: Rig;

beforeAll(async () => {
  // each extra user acts as alice or bob at the service, with a key of its own
  emu = await startTestEmulator({ seed: seedWithKeys({ alice: ["dana-print-key"] }) });
  dns = await startTestDns(ZONE);
  const users: UserConfig[] = [...USERS, { name: "dana", email: SENDER, aliases: [], apiKey: "dana-print-key" }];
  rig = await startRig(emu, {
    users,
    smtp: {
      trustedNetworks: ["127.0.0.1/32"],
      senderAuth: { ...senderAuthOff(), mode: "verify", arcForwarders: ["lists.test"] },
    },
    dns: { servers: [dns.server], timeout: 500 },
  });
});
afterAll(async () => {
  await rig?.close();
  await dns?.close();
  await stopEmulator(emu);
});

/** The forwarder's own resolver (node:dns pointed at the test server): it is not faxgate's. */
function forwarderResolver(): (name: string, rrtype: string) => Promise<unknown> {
  const r = new dnsp.Resolver({ timeout: 1000, tries: 1 });
  r.setServers([dns.server]);
  return (name, rrtype) => r.resolve(name, rrtype);
}

/** The author's mail as orig.test's mail system sends it: signed, From: the user. */
function authored(sign = true): Promise<Buffer> {
  return composeSigned({
    from: SENDER,
    to: FAX,
    ip: AUTHOR_IP,
    ...(sign ? { sign: { domain: "orig.test", key: AUTHOR.privateKey } } : {}),
    attachments: [{ filename: "page.pdf", content: PDF, contentType: "application/pdf" }],
  });
}

/**
 * What a mailing list does with a message that reached it from `arrivedFrom`: authenticate it
 * (the results go into its ARC-Authentication-Results), add its footer to the text, and seal the
 * changed message as `sealer` with the key it publishes at arc._domainkey.<sealer>.
 */
async function forward(original: Buffer, sealer: string, key: string, arrivedFrom = AUTHOR_IP): Promise<Buffer> {
  const { arc } = await authenticate(original, {
    ip: arrivedFrom,
    helo: "mail.orig.test",
    sender: SENDER,
    mta: `mx.${sealer}`,
    resolver: forwarderResolver() as never,
    disableBimi: true,
  });
  if (!arc) throw new Error("the forwarder got no ARC result");
  const changed = Buffer.from(
    original.toString("latin1").replace("Please fax the attached page.", "[fax-list] Please fax the attached page."),
    "latin1",
  );
  expect(changed.equals(original)).toBe(false);
  const seal: ARCSealOptions & { authResults: string; cv: string } = {
    signingDomain: sealer,
    selector: "arc",
    privateKey: key,
    authResults: arc.authResults!,
    cv: arc.status.result,
  };
  const headers = await sealMessage(changed, seal);
  return Buffer.concat([headers, changed]);
}

function workFolders(): string[] {
  return readdirSync(path.join(rig.dataDir, "incoming"));
}

/** Sent over SMTP from the forwarder's address: the final reply; a refusal leaves nothing behind. */
async function sendForwarded(raw: Buffer): Promise<string> {
  const before = (await rig.store.listJobs({ limit: 10_000 })).length;
  const r = await sendFrom(rig.port, { from: SENDER, to: FAX, ip: FORWARDER_IP }, raw);
  if (!r.startsWith("250 ")) {
    expect((await rig.store.listJobs({ limit: 10_000 })).length).toBe(before);
    expect(workFolders()).toEqual([]);
  }
  return r;
}

describe("smtp.senderAuth.arcForwarders: a named forwarder's ARC seal", () => {
  it("without any seal the forwarded mail fails DMARC: 550 5.7.26 (p=reject)", async () => {
    const original = await authored();
    const changed = Buffer.from(original.toString("latin1").replace("Please fax", "[fax-list] Please fax"), "latin1");
    const r = await sendForwarded(changed);
    expect(r).toMatch(/^550 5\.7\.26 This message does not pass the DMARC policy of orig\.test \(p=reject\)/);
    expect(r).not.toMatch(/ARC (seal|chain)/);
  });

  it("sealed by the named forwarder, which recorded DMARC pass: queued, the check says ARC", async () => {
    const r = await sendForwarded(await forward(await authored(), "lists.test", LIST.privateKey));
    expect(r).toMatch(/^250 /);
    const job = await rig.store.getJob(jobIdOf(r));
    expect(job?.meta.origin?.senderCheck).toBe(
      "ARC pass sealed by lists.test, which recorded DMARC pass for orig.test",
    );
    const metrics = await rig.metrics.registry.getSingleMetricAsString("faxgate_smtp_sender_verdicts_total");
    expect(metrics).toMatch(/verdict="pass",check="arc"\} 1/);
  });

  it("a valid seal of a forwarder nobody named: 550 5.7.26 naming the sealer", async () => {
    const r = await sendForwarded(await forward(await authored(), "elsewhere.test", STRANGER_LIST.privateKey));
    expect(r).toMatch(
      /^550 5\.7\.26 This message does not pass the DMARC policy of orig\.test \(p=reject\): .*; it carries an ARC seal of elsewhere\.test, which is not a forwarder this gateway trusts\./,
    );
  });

  it("the named forwarder's seal over a message changed after sealing (broken chain): 550 5.7.26, ARC fails", async () => {
    const sealed = await forward(await authored(), "lists.test", LIST.privateKey);
    const changed = Buffer.from(sealed.toString("latin1").replace("[fax-list]", "[fax-list] URGENT"), "latin1");
    const r = await sendForwarded(changed);
    expect(r).toMatch(
      /^550 5\.7\.26 This message does not pass the DMARC policy of orig\.test \(p=reject\): .*; its ARC chain \(sealed by lists\.test\) does not verify \(i=1 no valid signature\)\./,
    );
  });

  it("the named forwarder's results rewritten to say dmarc=pass (broken seal): 550 5.7.26, ARC fails", async () => {
    // the original reached the list from a host outside orig.test's SPF, unsigned: the list recorded dmarc=fail
    const sealed = (await forward(await authored(false), "lists.test", LIST.privateKey, FORWARDER_IP)).toString(
      "latin1",
    );
    expect(sealed).toMatch(/dmarc=fail/);
    const forged = Buffer.from(sealed.replace(/dmarc=fail/, "dmarc=pass"), "latin1");
    const r = await sendForwarded(forged);
    expect(r).toMatch(
      /^550 5\.7\.26 .*; its ARC chain \(sealed by lists\.test\) does not verify \(i=1 seal signature validation failed\)\./,
    );
  });

  it("the named forwarder recorded that the original failed DMARC: 550 5.7.26 saying so", async () => {
    const sealed = await forward(await authored(false), "lists.test", LIST.privateKey, FORWARDER_IP);
    const r = await sendForwarded(sealed);
    expect(r).toMatch(
      /^550 5\.7\.26 .*; lists\.test, the forwarder that sealed it, recorded dmarc=fail for orig\.test when it received it\./,
    );
  });
});
