// Never less than the sender meant: a mail with an attachment that cannot be faxed is refused at
// SMTP time naming each such file (swaks and nodemailer as the real clients), unless the operator
// chose intake.partial: send; then it goes without, and the outcome mail says so first. Logos
// and signatures stay dropped quietly; .csv and other text types are faxed as text.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { composeOutcome } from "../../src/notify/outcome-mail.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { DOMAIN, jobIdOf, PDF, stopEmulator, transport, withRig, haveSwaks, runCommand } from "./harness.js";

const run = runCommand;
const ZIP = Buffer.concat([Buffer.from("PK\x03\x04", "latin1"), Buffer.alloc(200, 1)]);
// HEIC: an ISO box header, a type no fax service takes
const HEIC = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from("ftypheic", "latin1"), Buffer.alloc(300, 7)]);
const LOGO = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

let emu: TestEmulator;
let tmp: string;
let hasSwaks = false;
beforeAll(async () => {
  emu = await startTestEmulator();
  tmp = mkdtempSync(path.join(os.tmpdir(), "faxgate-left-out-"));
  hasSwaks = await haveSwaks("left-out");
}, 60_000);
afterAll(async () => {
  await stopEmulator(emu);
  rmSync(tmp, { recursive: true, force: true });
});

/** swaks's whole transcript (it exits non-zero when the server refuses the data). */
async function swaks(port: number, args: string[]): Promise<string> {
  const base = [
    "--server",
    `127.0.0.1:${port}`,
    "--from",
    "alice@example.com",
    "--to",
    `15557770301@${DOMAIN}`,
    "--header",
    "Subject: Lab results",
  ];
  try {
    const { stdout } = await run("swaks", [...base, ...args]);
    return stdout;
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? "");
  }
}

describe("an attachment that cannot be faxed (intake.partial: refuse, the default)", () => {
  it("swaks: text and a .zip is refused with 554 5.6.0 naming the file, and nothing is queued", async (ctx) => {
    if (!hasSwaks) return ctx.skip();
    const zip = path.join(tmp, "archive.zip");
    writeFileSync(zip, ZIP);
    await withRig(emu, {}, async (rig) => {
      const out = await swaks(rig.port, [
        "--body",
        "Please see attached.",
        "--attach-type",
        "application/zip",
        "--attach-name",
        "archive.zip",
        "--attach",
        `@${zip}`,
      ]);
      expect(out).toMatch(/<\*\* +554 5\.6\.0 Nothing to fax: no attachment can be faxed: archive\.zip \(/);
      expect((await rig.store.counts()).jobs.queued).toBe(0);
    });
  });

  it("swaks: a .docx renamed .pdf and a .heic beside a good PDF are both named", async (ctx) => {
    if (!hasSwaks) return ctx.skip();
    const fake = path.join(tmp, "letter.pdf");
    const heic = path.join(tmp, "photo.heic");
    const good = path.join(tmp, "good.pdf");
    writeFileSync(fake, ZIP);
    writeFileSync(heic, HEIC);
    writeFileSync(good, PDF);
    await withRig(emu, {}, async (rig) => {
      const out = await swaks(rig.port, [
        "--body",
        "Three files.",
        "--attach-type",
        "application/pdf",
        "--attach-name",
        "good.pdf",
        "--attach",
        `@${good}`,
        "--attach-type",
        "application/pdf",
        "--attach-name",
        "letter.pdf",
        "--attach",
        `@${fake}`,
        "--attach-type",
        "image/heic",
        "--attach-name",
        "photo.heic",
        "--attach",
        `@${heic}`,
      ]);
      const reply = /<\*\* +(554 .*)/.exec(out)?.[1] ?? out;
      expect(reply).toMatch(/^554 5\.6\.0 Not faxed, so that nothing you attached is left out: /);
      expect(reply).toContain("letter.pdf (it is declared as application/pdf but its content is a ZIP archive)");
      expect(reply).toContain("photo.heic");
      expect(reply).not.toContain("good.pdf");
      expect((await rig.store.counts()).jobs.queued).toBe(0);
    });
  });

  it("a small inline logo beside a PDF is dropped quietly: the fax goes", async () => {
    await withRig(emu, {}, async (rig) => {
      const info = await transport(rig.port).sendMail({
        from: "alice@example.com",
        to: `15557770302@${DOMAIN}`,
        subject: "Invoice",
        html: '<img src="cid:logo@x">',
        attachments: [
          {
            filename: "logo.png",
            content: LOGO,
            contentType: "image/png",
            cid: "logo@x",
            contentDisposition: "inline",
          },
          { filename: "invoice.pdf", content: PDF, contentType: "application/pdf" },
        ],
      });
      const job = (await rig.store.getJob(jobIdOf(info.response)))!;
      expect(job.documents.map((d) => d.name)).toEqual(["invoice.pdf"]);
      expect(job.meta.leftOut?.some((l) => l.sentWithout)).toBeFalsy();
    });
  });

  it(".csv, .md and text/csv are faxed as plain text, like .txt", async () => {
    await withRig(emu, {}, async (rig) => {
      const info = await transport(rig.port).sendMail({
        from: "alice@example.com",
        to: `15557770303@${DOMAIN}`,
        subject: "Tables",
        attachments: [
          { filename: "results.csv", content: "name,value\nglucose,5.4\n", contentType: "text/csv" },
          { filename: "notes.md", content: "# Notes\n\nfasting\n", contentType: "application/octet-stream" },
        ],
      });
      const job = (await rig.store.getJob(jobIdOf(info.response)))!;
      expect(job.documents.map((d) => [d.name, d.contentType])).toEqual([
        ["results.csv", "text/plain"],
        ["notes.md", "text/plain"],
      ]);
    });
  });
});

describe("intake.partial: send", () => {
  it("sends the PDF without archive.zip, and the outcome mail says so first", async () => {
    await withRig(emu, { partial: "send" }, async (rig) => {
      const info = await transport(rig.port).sendMail({
        from: "alice@example.com",
        to: `15557770304@${DOMAIN}`,
        subject: "Records",
        attachments: [
          { filename: "records.pdf", content: PDF, contentType: "application/pdf" },
          { filename: "archive.zip", content: ZIP, contentType: "application/zip" },
        ],
      });
      const job = (await rig.store.getJob(jobIdOf(info.response)))!;
      expect(job.documents.map((d) => d.name)).toEqual(["records.pdf"]);
      expect(job.meta.leftOut?.[0]).toMatchObject({ name: "archive.zip", sentWithout: true });
      const delivered = {
        ...job,
        state: "delivered" as const,
        recipients: job.recipients.map((r) => ({ ...r, state: "delivered" as const, pages: 1 })),
      };
      const mail = composeOutcome(delivered, "UTC");
      expect(mail.subject).toMatch(/^Sent without archive\.zip: Fax to .* delivered, 1 page$/);
    });
  });

  it('still refuses when nothing attached can be faxed (a cover saying "see attached" alone is not sent)', async () => {
    await withRig(emu, { partial: "send" }, async (rig) => {
      const err = await transport(rig.port)
        .sendMail({
          from: "alice@example.com",
          to: `15557770305@${DOMAIN}`,
          subject: "Records",
          text: "Please see attached.",
          attachments: [{ filename: "archive.zip", content: ZIP, contentType: "application/zip" }],
        })
        .then(
          () => null,
          (e: Error & { response?: string }) => e,
        );
      expect(err?.response).toMatch(/^554 5\.6\.0 .*archive\.zip/);
    });
  });
});
