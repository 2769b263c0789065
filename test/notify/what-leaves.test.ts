// Issue 48 item 6: notify.attachments is the one rule for what of a fax leaves by mail, and the
// transmission report obeys it. Through the whole path: a fax mailed to the gateway's SMTP
// listener by a real client, sent to the emulator over HTTPS, the outcome mail written by the
// outbox transport; the report attached to it read back with poppler's pdftotext, the way anyone
// holding the mail could read it.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import { simpleParser, type ParsedMail } from "mailparser";
import nodemailer from "nodemailer";
import { afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../helpers/wait.js";
import { consoleGateway } from "../web/rig.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { Rig } from "./rig.js";
import { tempFolder } from "../tmp-dir.js";

const run = promisify(execFile);
const poppler = existsSync("/usr/bin/pdftotext");

/** Words only the fax's page holds, and words only its subject holds. */
const PAGE_WORDS = "ZEBRA-7731 Roe Jane lab results";
const SUBJECT = "Referral for J. Roe";
const FILE_NAME = "roe-referral.pdf";

let rig: TestGateway | null = null;
let notifyRig: Rig | null = null;
let outbox: string | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
  await notifyRig?.stop();
  notifyRig = null;
  if (outbox) rmSync(outbox, { recursive: true, force: true });
  outbox = null;
});

async function referral(): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  doc.addPage([612, 792]).drawText(PAGE_WORDS, { x: 60, y: 700, size: 18, font });
  return Buffer.from(await doc.save());
}

async function pdfText(pdf: Buffer): Promise<string> {
  const f = path.join(outbox!, `read-${Math.random().toString(36).slice(2)}.pdf`);
  writeFileSync(f, pdf);
  try {
    return (await run("pdftotext", ["-layout", f, "-"])).stdout;
  } finally {
    rmSync(f, { force: true });
  }
}

/** A gateway with `attachments` and report: always; alice (whose preference wants the PDF) mails one fax; its outcome mail. */
async function outcomeMail(attachments: "service" | "never" | "inbound-only"): Promise<ParsedMail> {
  outbox = tempFolder("outbox");
  const box = outbox;
  rig = await startGateway(
    consoleGateway({
      delayMs: 200,
      config: {
        notify: { from: "faxgate@example.com", transport: `outbox:${box}`, attachments, report: "always" },
      },
    }),
  );
  const info = await nodemailer
    .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
    .sendMail({
      from: "alice@example.com",
      to: "15551234567@fax.example.com",
      subject: SUBJECT,
      text: "",
      attachments: [{ filename: FILE_NAME, content: await referral(), contentType: "application/pdf" }],
    });
  expect(info.response).toMatch(/^250 /);
  const file = await waitUntil(
    () => readdirSync(box).find((f) => f.endsWith(".eml")),
    "the outcome mail in the outbox",
    60_000,
  );
  return simpleParser(readFileSync(path.join(box, file)));
}

function report(m: ParsedMail) {
  return m.attachments.find((a) => /^transmission-report-.*\.pdf$/.test(a.filename ?? ""));
}

/** Everything of the mail a reader sees without opening an attachment. */
function visible(m: ParsedMail): string {
  return [m.subject, m.text, m.html || "", ...m.attachments.map((a) => a.filename ?? "")].join("\n");
}

describe.skipIf(!poppler)("what of a fax leaves by mail", () => {
  it("service: the report shows the first page, and the fax rides along as the preference asks", async () => {
    const m = await outcomeMail("service");
    expect(m.headers.get("x-faxgate-notification")).toBe("outcome");
    const r = report(m);
    expect(r).toBeDefined();
    // the test can see a page when one is there: the next two are not vacuous
    expect(await pdfText(r!.content)).toContain("ZEBRA-7731");
    expect(m.attachments.filter((a) => a !== r)).toHaveLength(1);
    expect(visible(m)).toContain(SUBJECT);
  }, 90_000);

  it("never with report always: the report still comes, without the page and saying so; nothing of the fax is in the mail", async () => {
    const m = await outcomeMail("never");
    const r = report(m);
    expect(r).toBeDefined();
    const text = await pdfText(r!.content);
    expect(text).toContain("TRANSMISSION REPORT");
    expect(text).toContain("RESULT: OK");
    expect(text).not.toContain("ZEBRA-7731");
    expect(text).not.toContain("Roe");
    expect(text).toMatch(/not shown/);
    // no fax PDF, and neither subject nor file name in the mail or on the report
    expect(m.attachments).toEqual([r]);
    expect(visible(m)).not.toContain("Roe");
    expect(visible(m)).not.toContain("referral");
    expect(text).not.toContain("referral");
  }, 90_000);

  it("inbound-only: an outcome mail carries no page and no PDF, but names the fax by its subject", async () => {
    const m = await outcomeMail("inbound-only");
    const r = report(m);
    expect(r).toBeDefined();
    const text = await pdfText(r!.content);
    expect(text).not.toContain("ZEBRA-7731");
    expect(text).toMatch(/not shown/);
    expect(m.attachments).toEqual([r]);
    expect(visible(m)).toContain(SUBJECT);
  }, 90_000);
});

describe("the other mails about a fax obey the same rule", () => {
  /** A not-sent notice, a mailbox's accepted notice, a corrupt job's outcome and a needs-a-number mail, all about the referral. */
  async function mails(attachments: "service" | "never"): Promise<string[]> {
    const r = (notifyRig = await new Rig().start());
    await r.store.enqueueNotification({
      kind: "rejected",
      user: "alice",
      dedupeKey: "rejected:roe",
      payload: { file: FILE_NAME, subject: SUBJECT, reason: "no fax number was found", source: "spool" },
    });
    await r.store.enqueueNotification({
      kind: "accepted",
      user: "alice",
      dedupeKey: "accepted:roe",
      payload: { jobId: "job-4711", subject: SUBJECT, numbers: ["+15551234567"], via: "the mailbox fax@example.com" },
    });
    const orig = path.join(r.dir, FILE_NAME);
    writeFileSync(orig, "not really a pdf");
    await r.store.enqueueCorrupt({
      source: "spool",
      user: "alice",
      reason: "the PDF cannot be read",
      original: { path: orig, name: FILE_NAME, contentType: "application/pdf" },
    });
    // a print that named no number waits for its owner, who is mailed for one
    const printed = path.join(r.dir, "printed.pdf");
    writeFileSync(printed, await referral());
    const { job: waiting } = await r.store.enqueue({
      source: "spool",
      awaitingAddress: true,
      user: "alice",
      recipients: [],
      documents: [{ path: printed, name: FILE_NAME, contentType: "application/pdf" }],
      cover: { enabled: false },
      meta: { origin: { file: FILE_NAME } },
    });
    await r.store.enqueueNotification({
      kind: "address",
      user: "alice",
      jobId: waiting.id,
      dedupeKey: `address:${waiting.id}`,
      payload: { jobId: waiting.id },
    });
    await r.notifier({ transport: r.smtpTransport(), notify: r.notifyConfig({ attachments }) }).runOnce();
    const got = await r.sink.waitFor(4);
    return got.map((m) => [m.parsed.subject, m.parsed.text, m.parsed.html || ""].join("\n"));
  }

  it("service: the mails name the fax by its subject and file name", async () => {
    const all = (await mails("service")).join("\n");
    expect(all).toContain(SUBJECT);
    expect(all).toContain(FILE_NAME);
  }, 60_000);

  it("never: not-sent, accepted, corrupt-job and needs-a-number mails go, naming neither subject nor file name", async () => {
    const got = await mails("never");
    expect(got).toHaveLength(4);
    for (const m of got) {
      expect(m).not.toMatch(/Roe|referral/i);
      expect(m).toMatch(/Fax (not sent|queued)|needs a fax number/);
    }
  }, 60_000);
});
