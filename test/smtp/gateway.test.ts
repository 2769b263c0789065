// The SMTP gateway end to end: nodemailer and a raw client against the real server on a loopback
// port, a real Store in a temp folder, the emulator behind it for contacts and preferences.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emulatorCall } from "../helpers/client.js";
import { converse, RawSmtp } from "../helpers/raw-smtp.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { DOMAIN, PDF, jobIdOf, startRig, stopEmulator, transport, withRig, type Rig } from "./harness.js";

let emu: TestEmulator;
let rig: Rig;

beforeAll(async () => {
  emu = await startTestEmulator();
  rig = await startRig(emu, { smtp: { maxRecipients: 5, maxMessageBytes: 200_000, hostname: "fax-gw.test" } });
});
afterAll(async () => {
  await rig?.close();
  await stopEmulator(emu);
});

let seq = 0;
function mail(
  opts: { to?: string; subject?: string; body?: string; pdf?: boolean; messageId?: string; extraHeaders?: string } = {},
): string {
  const id = opts.messageId ?? `<t${Date.now()}-${++seq}@test>`;
  const head = `From: Alice Archer <alice@example.com>\r\nTo: ${opts.to ?? `15551234567@${DOMAIN}`}\r\nSubject: ${opts.subject ?? "Test"}\r\nMessage-ID: ${id}\r\nMIME-Version: 1.0\r\n${opts.extraHeaders ?? ""}`;
  if (!opts.pdf) return `${head}Content-Type: text/plain; charset=utf-8\r\n\r\n${opts.body ?? "Hello."}\r\n`;
  return `${head}Content-Type: multipart/mixed; boundary=BB\r\n\r\n--BB\r\nContent-Type: text/plain\r\n\r\n${opts.body ?? ""}\r\n--BB\r\nContent-Type: application/pdf; name=doc.pdf\r\nContent-Disposition: attachment; filename=doc.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n${PDF.toString("base64")}\r\n--BB--\r\n`;
}

describe("accepting mail", () => {
  it("queues a PDF to one number and answers 250 with the job id of the stored job", async () => {
    const info = await transport(rig.port).sendMail({
      from: "Alice Archer <alice@example.com>",
      to: `"Dr. Who" <1-555-123-4567@${DOMAIN}>`,
      subject: "Invoice 42",
      text: "Please find the invoice.",
      attachments: [{ filename: "invoice.pdf", content: PDF, contentType: "application/pdf" }],
    });
    expect(info.response).toMatch(/^250 2\.0\.0 queued as \S+$/);
    const job = (await rig.store.getJob(jobIdOf(info.response)))!;
    expect(job).not.toBeNull();
    expect(job.source).toBe("smtp");
    expect(job.user).toBe("alice");
    expect(job.recipients.map((r) => [r.number, r.name])).toEqual([["+15551234567", "Dr. Who"]]);
    // alice's preference is off and there is a document: her text is not a page of its own, it is listed
    expect(job.documents.map((d) => [d.name, d.contentType])).toEqual([["invoice.pdf", "application/pdf"]]);
    expect(job.meta.leftOut?.map((l) => l.name)).toEqual(["the text of the message"]);
    expect(job.cover.enabled).toBe(false);
    expect(job.original?.contentType).toBe("message/rfc822");
    expect(job.meta.origin).toMatchObject({ subject: "Invoice 42", envelopeFrom: "alice@example.com" });
  });

  it("makes one job with several recipients of one message, numbers and contact names mixed", async () => {
    const info = await transport(rig.port).sendMail({
      from: "alice@example.com",
      to: [
        `15551234567@${DOMAIN}`,
        `+44 20 7183 8750@${DOMAIN}`.replace(/ /g, ""),
        `acme.billing@${DOMAIN}`,
        `Globex_Accounts@${DOMAIN}`,
      ],
      subject: "To many",
      attachments: [{ filename: "a.pdf", content: PDF }],
    });
    const job = (await rig.store.getJob(jobIdOf(info.response)))!;
    expect(job.recipients.map((r) => r.number)).toEqual([
      "+15551234567",
      "+442071838750",
      "+15550100100",
      "+15550100200",
    ]);
    expect(job.recipients.map((r) => r.name)).toEqual([null, null, "Acme Billing", "Globex Accounts"]);
    expect((await rig.store.listJobs({ source: "smtp" })).filter((j) => j.id === job.id)).toHaveLength(1);
  });

  it("a body-only mail becomes a cover page; bob's cover preference puts a cover on attachments too", async () => {
    const a = await converse(
      rig.port,
      "alice@example.com",
      [`15551234567@${DOMAIN}`],
      mail({ subject: "Just a note [at 2099-01-02 08:00]", body: "Call me back." }),
    );
    const ja = (await rig.store.getJob(jobIdOf(a[5]!)))!;
    expect(ja.documents).toEqual([]);
    expect(ja.cover).toMatchObject({
      enabled: true,
      subject: "Just a note",
      notes: "Call me back.",
      senderName: "Alice Archer",
    });
    expect(ja.scheduledAt).toBe("2099-01-02T13:00:00.000Z"); // America/New_York

    const b = await converse(
      rig.port,
      "bob@example.com",
      [`15551234567@${DOMAIN}`],
      mail({ pdf: true, body: "See attached." }).replace("alice@example.com", "bob@example.com"),
    );
    const jb = (await rig.store.getJob(jobIdOf(b[5]!)))!;
    expect(jb.cover.enabled).toBe(true);
    expect(jb.documents).toHaveLength(1);
  });

  it("the same message delivered twice makes one fax and answers 250 with the same id", async () => {
    const m = mail({ pdf: true, messageId: "<dup-1@test>" });
    const first = await converse(rig.port, "alice@example.com", [`15551234567@${DOMAIN}`], m);
    const again = await converse(
      rig.port,
      "alice@example.com",
      [`15551234567@${DOMAIN}`],
      `Received: from relay2\r\n${m}`,
    );
    expect(first[5]).toMatch(/^250 2\.0\.0 queued as /);
    expect(jobIdOf(again[5]!)).toBe(jobIdOf(first[5]!));
    expect(
      (await rig.store.listJobs({ source: "smtp" })).filter((j) => j.meta.origin?.messageId === "<dup-1@test>"),
    ).toHaveLength(1);
    // Other recipients: another fax.
    const other = await converse(rig.port, "alice@example.com", [`15557654321@${DOMAIN}`], m);
    expect(jobIdOf(other[5]!)).not.toBe(jobIdOf(first[5]!));
  });

  it("the same message without a Message-ID delivered twice is known by its bytes", async () => {
    const m = (body: string): string =>
      `From: alice@example.com\r\nTo: 15551234567@${DOMAIN}\r\nSubject: no id\r\n\r\n${body}\r\n`;
    const send = (body: string) => converse(rig.port, "alice@example.com", [`15551234567@${DOMAIN}`], m(body));
    const first = await send("The same text, twice.");
    const again = await send("The same text, twice.");
    expect(first[5]).toMatch(/^250 2\.0\.0 queued as /);
    expect(jobIdOf(again[5]!)).toBe(jobIdOf(first[5]!));
    // other bytes: another fax
    const other = await send("Other text.");
    expect(other[5]).toMatch(/^250 2\.0\.0 queued as /);
    expect(jobIdOf(other[5]!)).not.toBe(jobIdOf(first[5]!));
  });

  it("banner names the configured host; EHLO advertises SIZE and AUTH on loopback", async () => {
    const { client, banner } = await RawSmtp.connect(rig.port);
    expect(banner).toMatch(/^220 fax-gw\.test ESMTP/);
    const ehlo = await client.cmd("EHLO tester");
    // the limit itself (RFC 1870), so a client knows it before it sends
    expect(ehlo).toMatch(/^250[- ]SIZE \d+$/m);
    expect(ehlo).toContain("AUTH PLAIN LOGIN");
    expect(ehlo).not.toContain("STARTTLS"); // no smtp.tls configured
    client.close();
  });
});

describe("refusals name their reason", () => {
  it("unknown sender: 550 5.7.1 at MAIL FROM", async () => {
    const r = await converse(rig.port, "mallory@evil.example", [], null);
    expect(r[2]).toMatch(/^550 5\.7\.1 Sender <mallory@evil\.example> is not a user/);
  });

  it("relay battery: every trick is 550 5.7.1", async () => {
    const tries = [
      "someone@gmail.com",
      `victim%gmail.com@${DOMAIN}`,
      `@${DOMAIN}:victim@gmail.com`,
      `"victim@gmail.com"@${DOMAIN}`,
      `victim@gmail.com@${DOMAIN}`,
      `gmail.com!victim@${DOMAIN}`,
      `15551234567@${DOMAIN}.evil.example`,
      `15551234567@sub.${DOMAIN}`,
    ];
    const r = await converse(rig.port, "alice@example.com", tries, null);
    const rcptReplies = r.slice(3, 3 + tries.length);
    for (const [i, reply] of rcptReplies.entries()) expect(reply, tries[i]).toMatch(/^5\d\d 5\.\d\.\d+ /);
    expect(rcptReplies.filter((x) => x.startsWith("550 5.7.1 Relay denied")).length).toBeGreaterThanOrEqual(
      tries.length - 2,
    );
  });

  it("bad number: 553 5.1.3 with what was wrong; unknown contact: 553 5.1.1", async () => {
    const r = await converse(rig.port, "alice@example.com", [`12@${DOMAIN}`, `nobody.here@${DOMAIN}`], null);
    expect(r[3]).toMatch(/^553 5\.1\.3 Bad fax number .*digits/);
    expect(r[4]).toMatch(/^553 5\.1\.1 No contact named "nobody\.here"/);
  });

  it("too many recipients: 452 4.5.3 past maxRecipients", async () => {
    const rcpts = Array.from({ length: 7 }, (_, i) => `1555123400${i + 4}@${DOMAIN}`);
    const r = await converse(rig.port, "alice@example.com", rcpts, null);
    expect(r.slice(3, 8).every((x) => x.startsWith("250"))).toBe(true);
    expect(r[8]).toMatch(/^452 4\.5\.3 Too many recipients: at most 5/);
    expect(r[9]).toMatch(/^452 4\.5\.3/);
  });

  it("too big: 552 5.3.4 for SIZE= at MAIL FROM and for the data itself", async () => {
    const { client } = await RawSmtp.connect(rig.port);
    await client.cmd("EHLO x");
    expect(await client.cmd("MAIL FROM:<alice@example.com> SIZE=300000")).toMatch(/^552 5\.3\.4 /);
    client.close();
    const big = mail({ body: "x".repeat(76).concat("\r\n").repeat(3000) });
    const r = await converse(rig.port, "alice@example.com", [`15551234567@${DOMAIN}`], big);
    expect(r[5]).toMatch(/^552 5\.3\.4 /);
  });

  it("nothing to fax: 554 5.6.0 naming why", async () => {
    const onlyVcard = `From: alice@example.com\r\nTo: 15551234567@${DOMAIN}\r\nSubject: card\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=Q\r\n\r\n--Q\r\nContent-Type: text/vcard; name=a.vcf\r\nContent-Disposition: attachment; filename=a.vcf\r\n\r\nBEGIN:VCARD\r\nEND:VCARD\r\n--Q--\r\n`;
    const r = await converse(rig.port, "alice@example.com", [`15551234567@${DOMAIN}`], onlyVcard);
    expect(r[5]).toMatch(/^554 5\.6\.0 Nothing to fax: .*a\.vcf.*vCard/);
    // no attachment and no text: [nocover] leaves nothing (a text is faxed as a page: see the mail-body tests)
    const nocover = await converse(
      rig.port,
      "alice@example.com",
      [`15551234567@${DOMAIN}`],
      mail({ subject: "x [nocover]", body: "" }),
    );
    expect(nocover[5]).toMatch(/^554 5\.6\.0 Nothing to fax: \[nocover\]/);
  });

  it("a message the parser cannot make sense of is kept as corrupt or answered clearly, and the server stays up", async () => {
    const nested = (() => {
      let body = "Content-Type: text/plain\r\n\r\ninnermost\r\n";
      for (let i = 0; i < 300; i += 1)
        body = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${body}\r\n--b${i}--\r\n`;
      return `From: alice@example.com\r\nSubject: deep\r\nMessage-ID: <deep@t>\r\n${body}`;
    })();
    const r = await converse(rig.port, "alice@example.com", [`15551234567@${DOMAIN}`], nested);
    expect(r[5]).toMatch(/^(250|554|451) /);
    const { client, banner } = await RawSmtp.connect(rig.port);
    expect(banner).toMatch(/^220 /);
    client.close();
  });

  it("a message still being read after the time limit is refused as too complex and kept; the server stays up", async () => {
    await withRig(emu, { readers: { mailTimeoutMs: 1 } }, async (slow) => {
      // HTML only: its text is read on a reader thread, which cannot answer within 1 ms (the MIME
      // itself is split while it arrives and is done within a millisecond of the last byte)
      const r = await converse(
        slow.port,
        "alice@example.com",
        [`15551234567@${DOMAIN}`],
        `From: alice@example.com\r\nSubject: slow\r\nMessage-ID: <slow@t>\r\nContent-Type: text/html\r\n\r\n<p>hello</p>\r\n`,
      );
      expect(r[5]).toMatch(
        /^554 5\.6\.0 The message could not be read: it is too complex \(the message took longer than 1 ms to read\); kept as \S+/,
      );
      const kept = (await slow.store.getJob(/kept as (\S+)/.exec(r[5]!)![1]!))!;
      expect(kept.state).toBe("corrupt");
      expect(kept.corruptReason).toMatch(/too complex/);
      expect(kept.original?.bytes).toBeGreaterThan(0);
      const { client, banner } = await RawSmtp.connect(slow.port);
      expect(banner).toMatch(/^220 /);
      client.close();
    });
  });
});

describe("our own trouble is 451, never 5xx", () => {
  it("the fax service down during a contact lookup: 451 4.3.0", async () => {
    await emulatorCall(emu, "PUT", "/_emulator/faults", { errorRate: 1 });
    try {
      const r = await converse(rig.port, "alice@example.com", [`initech.front.desk@${DOMAIN}`], null);
      expect(r[3]).toMatch(/^451 4\.3\.0 Cannot look up the contact "initech\.front\.desk"/);
    } finally {
      await emulatorCall(emu, "PUT", "/_emulator/faults", { errorRate: 0 });
    }
  });

  it("a store that cannot write: 451 4.3.0 after DATA", async () => {
    const broken = await startRig(emu, {
      wrapStore: (s) =>
        Object.assign(Object.create(s) as typeof s, {
          enqueue: async () => {
            throw new Error("SQLITE_FULL: database or disk is full");
          },
        }),
    });
    try {
      const r = await converse(broken.port, "alice@example.com", [`15551234567@${DOMAIN}`], mail({ pdf: true }));
      expect(r[5]).toMatch(/^451 4\.3\.0 Temporary local problem/);
    } finally {
      await broken.close();
    }
  });
});

describe("metrics", () => {
  it("counts sessions, replies by code and jobs enqueued from smtp", async () => {
    const text = await rig.metrics.text();
    expect(text).toMatch(/faxgate_smtp_sessions_total [1-9]/);
    expect(text).toMatch(/faxgate_smtp_replies_total\{code="250"\} [1-9]/);
    expect(text).toMatch(/faxgate_smtp_replies_total\{code="550"\} [1-9]/);
    expect(text).toMatch(/faxgate_jobs_enqueued_total\{source="smtp"\} [1-9]/);
  });
});
