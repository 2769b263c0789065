// The mailbox intake as an office meets it: a real Dovecot mailbox (private config, loopback
// port), mail put into it as a provider delivers it, and the real daemon (`faxgate start --config`)
// taking it with IDLE, faxing it at the emulator, and moving it to its folders.
import { EventEmitter } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { simpleParser } from "mailparser";
import nodemailer from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dovecotMissing, startDovecot, type Dovecot } from "../helpers/dovecot.js";
import {
  allJobsFinal,
  disposeRig,
  emulatorFaxes,
  kill,
  makeRig,
  startDaemon,
  type Daemon,
  type Rig,
} from "../faults/harness.js";
import { waitUntil } from "../helpers/wait.js";
import { composeSigned, dkimKey } from "../helpers/dkim-mail.js";
import { startTestDns, type TestDns } from "../helpers/dns-server.js";

const missing = dovecotMissing();
if (missing) console.warn(`mailbox tests skipped: ${missing}`);

const BOX = { user: "fax", password: "mailbox-secret-1" };
const AUTHSERV = "mx.example.net";
// what every mailbox of the daemon here shares: the local server, no TLS, no polling beside IDLE
const LOCAL = { host: "127.0.0.1", tls: "off", pollInterval: "10m" };
// a second mailbox that signs in with an OAuth2 token from tokenCommand, as Microsoft 365 wants
const SCAN = { user: "scan", token: "scan-oauth-token-7f3a" };
// a third mailbox whose provider is Exchange Online (provider: exchange-online): its verdict
// header names no authserv-id
const EXO_BOX = { user: "exo", password: "mailbox-secret-2" };
/** Exchange Online's Authentication-Results as Microsoft writes it (no authserv-id), for example.com */
const EXO_AR =
  "spf=pass (sender IP is 40.107.22.41)\r\n smtp.mailfrom=example.com; dkim=pass (signature was verified)\r\n header.d=example.com;dmarc=pass action=none header.from=example.com;compauth=pass\r\n reason=100";
let seq = 0;
// example.com's DKIM key, served by a DNS server of the test: the daemon checks signatures itself
const EXAMPLE_KEY = dkimKey();

/**
 * A mail alice signed as Microsoft 365 signs (h= from:date:subject:message-id: To and Cc are not
 * signed), with the provider's verdict above it.
 */
async function signedAsMicrosoft(to: string, subject: string, date = new Date()): Promise<Buffer> {
  const signed = await composeSigned({
    from: "alice@example.com",
    to,
    ip: "127.0.0.1",
    subject,
    date,
    sign: { domain: "example.com", key: EXAMPLE_KEY.privateKey, headerFieldNames: "from:date:subject:message-id" },
  });
  const ar = `Authentication-Results: ${AUTHSERV}; dkim=pass header.d=example.com; dmarc=pass (p=reject) header.from=example.com\r\n`;
  return Buffer.concat([Buffer.from(ar), signed]);
}

/**
 * A TCP relay between the daemon and Dovecot that can hold back the daemon's MOVE: the crash point
 * "job committed, message not yet moved" made exact instead of raced.
 */
class MoveHolder extends EventEmitter {
  armed = false;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  constructor(private readonly upstream: number) {
    super();
    this.server = net.createServer((client) => {
      const up = net.connect(this.upstream, "127.0.0.1");
      this.sockets.add(client).add(up);
      up.pipe(client);
      client.on("data", (chunk) => {
        if (this.armed && /\bMOVE\b/i.test(chunk.toString("latin1"))) {
          this.armed = false;
          this.emit("held");
          return;
        }
        up.write(chunk);
      });
      const end = () => {
        client.destroy();
        up.destroy();
      };
      client.on("close", end).on("error", end);
      up.on("close", end).on("error", end);
    });
  }
  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

interface Mail {
  from?: string;
  to?: string;
  cc?: string;
  subject?: string;
  authResults?: string[];
  body?: string;
}

function raw(m: Mail): string {
  seq += 1;
  const ar = m.authResults ?? [
    `${AUTHSERV}; dkim=pass header.d=example.com; spf=pass smtp.mailfrom=example.com; dmarc=pass (p=reject) header.from=example.com`,
  ];
  return [
    ...ar.map((v) => `Authentication-Results: ${v}`),
    `From: ${m.from ?? "Alice <alice@example.com>"}`,
    `To: ${m.to ?? "fax+15551234567@example.com"}`,
    ...(m.cc ? [`Cc: ${m.cc}`] : []),
    `Subject: ${m.subject ?? `Letter ${seq}`}`,
    `Message-ID: <mailbox-test-${seq}-${Date.now()}@example.com>`,
    `Date: ${new Date().toUTCString()}`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "",
    m.body ?? `Please fax this letter, number ${seq}.`,
    "",
  ].join("\r\n");
}

describe.skipIf(missing !== null)("mailbox intake (IMAP, Dovecot)", () => {
  let dovecot: Dovecot;
  let rig: Rig;
  let daemon: Daemon | null = null;
  let relay: MoveHolder;
  let dns: TestDns;

  const faxesTo = async (number: string) => (await emulatorFaxes(rig)).filter((f) => f.faxNumber === number);
  const inFolder = (folder: string) => dovecot.count(BOX.user, BOX.password, folder);
  /** the notification mails written so far, parsed */
  const outbox = async () => {
    const dir = path.join(rig.dir, "outbox");
    let names: string[] = [];
    try {
      names = readdirSync(dir).filter((f) => f.endsWith(".eml"));
    } catch {
      return [];
    }
    return Promise.all(
      names.map(async (f) => {
        const m = await simpleParser(readFileSync(path.join(dir, f)));
        const to = Array.isArray(m.to) ? m.to[0] : m.to;
        return { subject: m.subject ?? "", to: to?.text ?? "", text: m.text ?? "" };
      }),
    );
  };
  const mailWith = async (subject: RegExp) => (await outbox()).find((m) => subject.test(m.subject));

  beforeAll(async () => {
    dovecot = await startDovecot(
      { [BOX.user]: BOX.password, [EXO_BOX.user]: EXO_BOX.password },
      { [SCAN.token]: SCAN.user },
    );
    relay = new MoveHolder(dovecot.port);
    await relay.listen();
    dns = await startTestDns({ "sel._domainkey.example.com": [EXAMPLE_KEY.record] });
    rig = await makeRig({
      config: {
        dns: { servers: [dns.server] },
        imap: {
          mailboxes: [
            { ...LOCAL, port: relay.port, ...BOX, address: "fax@example.com", trustedAuthservIds: [AUTHSERV] },
            {
              ...LOCAL,
              port: dovecot.port,
              user: SCAN.user,
              tokenCommand: `printf %s ${SCAN.token}`,
              address: "scan@example.com",
              trustedAuthservIds: [AUTHSERV],
            },
            { ...LOCAL, port: dovecot.port, ...EXO_BOX, address: "exo@example.com", provider: "exchange-online" },
          ],
        },
        // the one mail door's rule for files that cannot be faxed holds for mailboxes as for SMTP
        intake: { partial: "send" },
      },
    });
    daemon = await startDaemon(rig);
    await daemon.out.waitFor(/"mailbox":"fax@127.0.0.1"[^\n]*"msg":"mailbox watched"/);
    await daemon.out.waitFor(/"mailbox":"scan@127.0.0.1"[^\n]*"msg":"mailbox watched"/);
    await daemon.out.waitFor(/"mailbox":"exo@127.0.0.1"[^\n]*"msg":"mailbox watched"/);
  });

  it("signs in with the OAuth2 token its tokenCommand prints, and never logs it", async () => {
    // scan@ has no password at all: only a token opens it
    expect(await dovecot.client(SCAN.user, "").catch(() => null)).toBeNull();
    const viaToken = await dovecot.tokenClient(SCAN.token);
    await viaToken.append("INBOX", raw({ to: "scan+15551230601@example.com", subject: "Scanned" }));
    await viaToken.logout();
    await waitUntil(async () => (await faxesTo("+15551230601")).length === 1, "the fax from the OAuth2 mailbox");
    expect(daemon!.out.text + daemon!.err.text).not.toContain(SCAN.token);
  });

  afterAll(async () => {
    await disposeRig(rig, daemon);
    await relay?.close();
    await dovecot?.dispose();
    await dns?.close();
  });

  it("a new message wakes the intake through IDLE (not the 10-minute poll), is faxed, and moves to the done folder", async () => {
    // the first message starts the daemon's reader threads: the one measured is the second
    await dovecot.deliver(BOX.user, BOX.password, raw({ to: "fax+15551230100@example.com", subject: "Warm-up" }));
    await waitUntil(async () => (await inFolder("faxgate-done")) === 1, "the warm-up message in faxgate-done");
    const marker = daemon!.out.text.length;
    // timed from the APPEND itself, not from the test client's own sign-in
    const writer = await dovecot.client(BOX.user, BOX.password);
    await writer.append("INBOX", raw({ to: "fax+15551230101@example.com", subject: "Referral" }));
    await writer.logout();
    // queued at all within the wait, with the poll 600 s away, is IDLE's doing (the time from
    // APPEND to QUEUED is a bench row: bench/mailbox.bench.ts)
    await waitUntil(
      () => /"component":"imap"[^\n]*"msg":"QUEUED"/.test(daemon!.out.text.slice(marker)),
      "QUEUED from the mailbox",
      30_000,
      10,
    );
    const queued = /"component":"imap"[^\n]*"msg":"QUEUED"[^\n]*/.exec(daemon!.out.text.slice(marker))!;
    expect(queued[0]).not.toContain("Please fax this letter");
    await waitUntil(async () => (await faxesTo("+15551230101")).length === 1, "the fax at the emulator");
    await waitUntil(async () => (await inFolder("faxgate-done")) === 2, "the message in faxgate-done");
    expect(await inFolder("INBOX")).toBe(0);
    // the sender is answered with the job id, as SMTP's 250 would
    await waitUntil(
      async () => (await mailWith(/^Fax queued: "Referral" to \+1 555-123-0101$/)) !== undefined,
      "the accepted mail",
    );
    expect((await mailWith(/^Fax queued: "Referral"/))!.text).toMatch(/FG[0-9A-Z]{14}/);
  });

  it("finds numbers in plus addresses, in the display name, and in [fax ...] subject tags, in that order", async () => {
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      raw({
        to: "fax+15551230201@example.com, fax+1 555 123 0202 <fax+15551230202@example.com>",
        subject: "Plus [fax 15551230299]",
      }),
    );
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      raw({ to: '"+1 (555) 123-0203" <fax@example.com>', subject: "Display name" }),
    );
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      raw({ to: "fax@example.com", subject: "Tagged [fax 15551230204, 15551230205]" }),
    );
    for (const n of ["+15551230201", "+15551230202", "+15551230203", "+15551230204", "+15551230205"]) {
      await waitUntil(async () => (await faxesTo(n)).length === 1, `a fax to ${n}`);
    }
    // the plus addresses named the numbers: the subject's tag was not another destination
    expect(await faxesTo("+15551230299")).toHaveLength(0);
  });

  it("a mail with a file that cannot be faxed goes without it under intake.partial: send, and says so", async () => {
    seq += 1;
    const pdf = Buffer.from(
      "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n",
    );
    const message = [
      `Authentication-Results: ${AUTHSERV}; dkim=pass header.d=example.com; spf=pass smtp.mailfrom=example.com; dmarc=pass (p=reject) header.from=example.com`,
      "From: Alice <alice@example.com>",
      "To: fax+15551230401@example.com",
      "Subject: With an archive",
      `Message-ID: <mailbox-test-${seq}-${Date.now()}@example.com>`,
      `Date: ${new Date().toUTCString()}`,
      "MIME-Version: 1.0",
      'Content-Type: multipart/mixed; boundary="b"',
      "",
      "--b",
      "Content-Type: text/plain",
      "",
      "Please see attached.",
      "--b",
      'Content-Type: application/pdf; name="letter.pdf"',
      "Content-Transfer-Encoding: base64",
      "",
      pdf.toString("base64"),
      "--b",
      'Content-Type: application/zip; name="archive.zip"',
      "Content-Transfer-Encoding: base64",
      "",
      Buffer.from("PK\u0003\u0004 not really an archive").toString("base64"),
      "--b--",
      "",
    ].join("\r\n");
    await dovecot.deliver(BOX.user, BOX.password, message);
    await waitUntil(async () => (await faxesTo("+15551230401")).length === 1, "the fax without the archive");
    await waitUntil(
      async () => (await mailWith(/^Sent without archive\.zip: Fax to \+1 555-123-0401 delivered/)) !== undefined,
      "the mail that says what was left out",
    );
  });

  it("refuses a From: its provider did not prove, and a stranger, into the failed folder with no fax", async () => {
    const failedBefore = await inFolder("faxgate-failed");
    // a verdict from a host the operator did not name is the sender's own words
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      raw({
        to: "fax+15551230301@example.com",
        subject: "Forged",
        authResults: ["evil.example; dmarc=pass header.from=example.com"],
      }),
    );
    // the provider's own verdict says fail; a "pass" written below it by the sender changes nothing
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      raw({
        to: "fax+15551230302@example.com",
        subject: "Failed DMARC",
        authResults: [
          `${AUTHSERV}; spf=fail smtp.mailfrom=example.com; dmarc=fail header.from=example.com`,
          `${AUTHSERV}; dmarc=pass header.from=example.com`,
        ],
      }),
    );
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      raw({ from: "mallory@elsewhere.example", to: "fax+15551230303@example.com", subject: "Stranger" }),
    );
    await waitUntil(
      async () => (await inFolder("faxgate-failed")) === failedBefore + 3,
      "three messages in faxgate-failed",
    );
    for (const n of ["+15551230301", "+15551230302", "+15551230303"]) expect(await faxesTo(n)).toHaveLength(0);
    // alice learns someone wrote as her, and why; the stranger gets nothing (no backscatter)
    await waitUntil(async () => (await mailWith(/^Fax not sent: "Failed DMARC"/)) !== undefined, "the refusal mail");
    const refusal = (await mailWith(/^Fax not sent: "Failed DMARC"/))!;
    expect(refusal.to).toBe("alice@example.com");
    expect(refusal.text).toMatch(/mx\.example\.net reports DMARC fail for example\.com/);
    // she may not have written it: she is not asked to correct and resend what someone forged
    expect(refusal.text).not.toMatch(/correct it/);
    expect(refusal.text).toMatch(/If you did not send it, someone else wrote in your name/);
    await waitUntil(
      async () => (await mailWith(/^Fax not sent: "Forged"/)) !== undefined,
      "the refusal of the forged verdict",
    );
    expect((await mailWith(/^Fax not sent: "Forged"/))!.text).toMatch(
      /the topmost Authentication-Results is by evil\.example, not by mx\.example\.net/,
    );
    expect((await outbox()).some((m) => m.subject.includes("Stranger") || m.to.includes("mallory"))).toBe(false);
  });

  it("only the topmost verdict header counts: an id-less one on top hides a trusted-id one forged below it", async () => {
    const failedBefore = await inFolder("faxgate-failed");
    // Exchange Online's shape on top (not this mailbox's provider), the trusted id written below it by the sender
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      raw({
        to: "fax+15551230311@example.com",
        subject: "Forged below",
        authResults: [EXO_AR.replace("dmarc=pass", "dmarc=fail"), `${AUTHSERV}; dmarc=pass header.from=example.com`],
      }),
    );
    await waitUntil(
      async () => (await inFolder("faxgate-failed")) === failedBefore + 1,
      "the message in faxgate-failed",
    );
    await waitUntil(async () => (await mailWith(/^Fax not sent: "Forged below"/)) !== undefined, "the refusal mail");
    expect((await mailWith(/^Fax not sent: "Forged below"/))!.text).toMatch(
      /the topmost Authentication-Results is by a header with no authserv-id, not by mx\.example\.net/,
    );
    expect(await faxesTo("+15551230311")).toHaveLength(0);
  });

  it("Exchange Online's id-less header is believed under provider: exchange-online, and only there", async () => {
    const exoDone = () => dovecot.count(EXO_BOX.user, EXO_BOX.password, "faxgate-done");
    const exoFailed = () => dovecot.count(EXO_BOX.user, EXO_BOX.password, "faxgate-failed");
    await dovecot.deliver(
      EXO_BOX.user,
      EXO_BOX.password,
      raw({ to: "exo+15551230321@example.com", subject: "From Outlook", authResults: [EXO_AR] }),
    );
    await waitUntil(
      async () => (await faxesTo("+15551230321")).length === 1,
      "the fax from the Exchange Online mailbox",
    );
    await waitUntil(async () => (await exoDone()) === 1, "the message in the exo faxgate-done");
    // the same provider's header, with DMARC failing: refused
    await dovecot.deliver(
      EXO_BOX.user,
      EXO_BOX.password,
      raw({
        to: "exo+15551230322@example.com",
        subject: "Spoofed Outlook",
        authResults: [EXO_AR.replace("dmarc=pass", "dmarc=fail")],
      }),
    );
    await waitUntil(async () => (await exoFailed()) === 1, "the DMARC fail in the exo faxgate-failed");
    // the same header in a mailbox whose provider names its id: nobody's verdict
    const failedBefore = await inFolder("faxgate-failed");
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      raw({ to: "fax+15551230323@example.com", subject: "Id-less elsewhere", authResults: [EXO_AR] }),
    );
    await waitUntil(async () => (await inFolder("faxgate-failed")) === failedBefore + 1, "the id-less verdict refused");
    for (const n of ["+15551230322", "+15551230323"]) expect(await faxesTo(n)).toHaveLength(0);
  });

  it("a copy of a signed mail with To: rewritten (Microsoft 365 does not sign To) is not faxed again", async () => {
    const original = await signedAsMicrosoft("fax+15551230701@example.com", "Signed once");
    await dovecot.deliver(BOX.user, BOX.password, original.toString("latin1"));
    await waitUntil(async () => (await faxesTo("+15551230701")).length === 1, "the first fax");
    const failedBefore = await inFolder("faxgate-failed");
    // a Cc'd colleague rewrites To: and sends it on: the signature still verifies, the provider says pass
    const copy = original.toString("latin1").replace(/^To: .*$/m, "To: fax+15551230702@example.com");
    expect(copy).not.toBe(original.toString("latin1"));
    await dovecot.deliver(BOX.user, BOX.password, copy);
    await waitUntil(async () => (await inFolder("faxgate-failed")) === failedBefore + 1, "the copy in faxgate-failed");
    expect(await faxesTo("+15551230702")).toHaveLength(0);
    await waitUntil(
      async () => (await mailWith(/^Fax not sent: "Signed once"/)) !== undefined,
      "the refusal mail to alice",
    );
    expect((await mailWith(/^Fax not sent: "Signed once"/))!.text).toMatch(
      /This signed message was already faxed at .* UTC: a copy of a signed mail cannot be faxed again/,
    );
    // nothing in it for the sender to correct: the mail does not ask for it
    expect((await mailWith(/^Fax not sent: "Signed once"/))!.text).toMatch(/there\s+is\s+nothing\s+to\s+correct/);
  });

  it("a signed mail dated 6 hours ago is refused as stale", async () => {
    const failedBefore = await inFolder("faxgate-failed");
    const old = await signedAsMicrosoft(
      "fax+15551230703@example.com",
      "Old mail",
      new Date(Date.now() - 6 * 3_600_000),
    );
    await dovecot.deliver(BOX.user, BOX.password, old.toString("latin1"));
    await waitUntil(
      async () => (await inFolder("faxgate-failed")) === failedBefore + 1,
      "the old mail in faxgate-failed",
    );
    expect(await faxesTo("+15551230703")).toHaveLength(0);
    await waitUntil(async () => (await mailWith(/^Fax not sent: "Old mail"/)) !== undefined, "the refusal mail");
    expect((await mailWith(/^Fax not sent: "Old mail"/))!.text).toMatch(
      /more than 4 hours before it reached the mailbox/,
    );
  });

  it("a signed mail that waited in the mailbox (faxgate stopped) is judged by its arrival, and faxed", async () => {
    // dated 6 hours ago and delivered into the mailbox a minute later: fresh when it arrived
    const sent = new Date(Date.now() - 6 * 3_600_000);
    const waited = await signedAsMicrosoft("fax+15551230704@example.com", "Waited in the mailbox", sent);
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      waited.toString("latin1"),
      "INBOX",
      new Date(sent.getTime() + 60_000),
    );
    await waitUntil(async () => (await faxesTo("+15551230704")).length === 1, "the waiting mail faxed");
  });

  it("holds only the mailbox while the server is down, and takes mail again once it is back", async () => {
    await dovecot.stop();
    await daemon!.out.waitFor(/"msg":"mailbox unreachable, trying again"/, 20_000);
    // SMTP is not held by the mailbox
    const info = await nodemailer
      .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
      .sendMail({
        from: "alice@example.com",
        to: "15551230401@fax.example.com",
        subject: "by SMTP meanwhile",
        text: "hello",
      });
    expect(info.response).toMatch(/^250 /);
    await dovecot.start();
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      raw({ to: "fax+15551230402@example.com", subject: "After the outage" }),
    );
    await waitUntil(async () => (await faxesTo("+15551230402")).length === 1, "the fax after the outage", 90_000);
  });

  it("a crash after the job is committed and before the message is moved faxes it once", async () => {
    // the relay holds the daemon's MOVE: the job is committed, the message still in the INBOX
    relay.armed = true;
    const held = new Promise((resolve) => relay.once("held", resolve));
    await dovecot.deliver(
      BOX.user,
      BOX.password,
      raw({ to: "fax+15551230501@example.com", subject: "Crash between commit and move" }),
    );
    await held;
    await kill(daemon!, "SIGKILL");
    expect(await inFolder("INBOX")).toBe(1);
    daemon = await startDaemon(rig);
    await daemon.out.waitFor(/"duplicate":true[^\n]*"msg":"mailbox message moved"/, 30_000);
    expect(await inFolder("INBOX")).toBe(0);
    await waitUntil(
      async () => (await faxesTo("+15551230501")).length >= 1 && (await allJobsFinal(rig)),
      "the fax, and every job final",
    );
    expect(await faxesTo("+15551230501")).toHaveLength(1);
  });
});
