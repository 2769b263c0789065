// What a mail user meets: a real SMTP session, through the queue and the dispatcher, to the
// emulator's record of the fax. Office attachments are converted to PDF before the 250 (or
// refused with 554 when they cannot be), the mail's text has a place, and each recipient of a
// send-to-many keeps their name on the cover.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UserConfig } from "../../src/config/schema.js";
import { findExecutable } from "../../src/fs/executable.js";
import { composeOutcome } from "../../src/notify/outcome-mail.js";
import { renderText } from "../../src/notify/mail-body.js";
import type { QueueStore } from "../../src/store/index.js";
import { clientFor, emulatorCall } from "../helpers/client.js";
import { canaryPdf, docx, docxPicture, HAVE_PDFTOTEXT, listener, pdfText } from "../helpers/office-attack.js";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { drain, TEST_QUEUE_TIMINGS } from "../dispatch/rig.js";
import { DOMAIN, jobIdOf, PDF, stopEmulator, transport, USERS, withRig } from "./harness.js";
import { testDispatcher, testOffice } from "../helpers/collaborators.js";

const DOCX = readFileSync(path.join(import.meta.dirname, "..", "fixtures", "office", "hello.docx"));
const HAVE_SOFFICE = findExecutable("soffice") !== null;
if (!HAVE_SOFFICE)
  console.warn(
    "office-and-body: soffice (LibreOffice) is not installed; the conversion tests skip (apt-get install libreoffice-writer-nogui)",
  );

let emu: TestEmulator;
beforeAll(async () => {
  emu = await startTestEmulator({ delayMs: 50 });
}, 60_000);
afterAll(async () => {
  await stopEmulator(emu);
});

interface EmuFax {
  faxNumber: string;
  status: string;
  attachments: string[];
  recipientName: string | null;
  notes: string | null;
  cf: Record<string, string>;
}

/** Sends every queued job of the store through a real dispatcher to the emulator. */
async function dispatchAll(store: QueueStore): Promise<void> {
  const keys = new Map(USERS.map((u) => [u.name, u.apiKey]));
  const dispatcher = testDispatcher({
    store,
    clientFor: (user) => clientFor(emu, keys.get(user)!),
    api: { baseUrl: emu.baseUrl, ratePerSecond: 1000 },
    queue: { ...TEST_QUEUE_TIMINGS },
  });
  await drain({ dispatcher, store }, { held: false });
}

async function faxesOf(jobId: string): Promise<EmuFax[]> {
  const all = (await emulatorCall(emu, "GET", "/_emulator/faxes")) as EmuFax[];
  return all.filter((f) => f.cf?.faxgateJob === jobId);
}

describe("office documents by mail", () => {
  it.skipIf(!HAVE_SOFFICE)(
    "a .docx is converted to PDF before the 250 and faxed as report.pdf",
    async () => {
      await withRig(emu, {}, async (rig) => {
        const info = await transport(rig.port).sendMail({
          from: "alice@example.com",
          to: `15557770201@${DOMAIN}`,
          subject: "Report",
          attachments: [
            {
              filename: "report.docx",
              content: DOCX,
              contentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            },
          ],
        });
        const id = jobIdOf(info.response);
        const job = (await rig.store.getJob(id))!;
        expect(job.documents.map((d) => [d.name, d.contentType])).toEqual([["report.pdf", "application/pdf"]]);
        expect((await rig.store.readDocument(job.documents[0]!)).subarray(0, 5).toString()).toBe("%PDF-");
        await dispatchAll(rig.store);
        const faxes = await faxesOf(id);
        expect(faxes.map((f) => [f.attachments, f.status])).toEqual([
          [["report.pdf"], expect.stringMatching(/processing|success/)],
        ]);
        expect((await rig.store.getJob(id))!.recipients[0]!.state).not.toBe("failed");
      });
    },
    90_000,
  );

  it.skipIf(!HAVE_SOFFICE || !HAVE_PDFTOTEXT)(
    "a .docx whose pictures link to a local file and a URL is faxed without them: nothing is read, nothing fetched",
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-smtp-office-"));
      const canaryText = `CANARY${Date.now()}`;
      const pdf = await canaryPdf(canaryText);
      const canary = path.join(dir, "other-users-fax.pdf");
      writeFileSync(canary, pdf);
      const web = await listener(pdf);
      try {
        const attack = docx(docxPicture("rId5") + docxPicture("rId6"), [
          { id: "rId5", type: "image", target: `file://${canary}`, external: true },
          { id: "rId6", type: "image", target: `${web.url}/mail.pdf`, external: true },
        ]);
        await withRig(emu, {}, async (rig) => {
          const info = await transport(rig.port).sendMail({
            from: "alice@example.com",
            to: `15557770209@${DOMAIN}`,
            subject: "Report",
            attachments: [{ filename: "report.docx", content: Buffer.from(attack) }],
          });
          const job = (await rig.store.getJob(jobIdOf(info.response)))!;
          const text = pdfText(await rig.store.readDocument(job.documents[0]!), dir);
          expect(text).toContain("Visible body text");
          expect({ canaryInPdf: text.includes(canaryText), httpRequests: web.requests }).toEqual({
            canaryInPdf: false,
            httpRequests: [],
          });
        });
      } finally {
        await web.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    120_000,
  );

  it("without LibreOffice a .docx is refused at once with 554 5.6.0 naming the type; nothing is queued", async () => {
    const office = testOffice({ soffice: "/nonexistent/soffice" });
    await withRig(emu, { office }, async (rig) => {
      const err = await transport(rig.port)
        .sendMail({
          from: "alice@example.com",
          to: `15557770202@${DOMAIN}`,
          subject: "Report",
          text: "See attached.",
          attachments: [
            { filename: "report.docx", content: DOCX },
            { filename: "extra.pdf", content: PDF },
          ],
        })
        .catch((e: unknown) => e as { response: string });
      expect((err as { response: string }).response).toMatch(
        /^554 5\.6\.0 report\.docx is a Word document \(\.docx\): .*no converter, LibreOffice, is installed/,
      );
      expect(await rig.store.listJobs({})).toEqual([]);
    });
  });
});

describe("the text of the mail", () => {
  it("attachments and no cover: the text is not a page of its own; the outcome mail lists it", async () => {
    await withRig(emu, {}, async (rig) => {
      const info = await transport(rig.port).sendMail({
        from: "alice@example.com",
        to: `15557770203@${DOMAIN}`,
        subject: "Invoice",
        text: "Please pay by Friday.",
        attachments: [{ filename: "invoice.pdf", content: PDF }],
      });
      const id = jobIdOf(info.response);
      await dispatchAll(rig.store);
      expect((await faxesOf(id)).map((f) => f.attachments)).toEqual([["invoice.pdf"]]);
      const notice = renderText(composeOutcome((await rig.store.getJob(id))!, "UTC").blocks);
      expect(notice).toMatch(
        /Left out of the fax[\s\S]*the text of the message: with documents attached and no cover page the mail text is not faxed; write \[page\] in the subject/,
      );
    });
  });

  it("a text-only mail with [nocover] is faxed as a page of text", async () => {
    await withRig(emu, {}, async (rig) => {
      const info = await transport(rig.port).sendMail({
        from: "alice@example.com",
        to: `15557770204@${DOMAIN}`,
        subject: "Note [nocover]",
        text: "Call me back, please.",
      });
      const id = jobIdOf(info.response);
      await dispatchAll(rig.store);
      const [fax] = await faxesOf(id);
      expect(fax!.attachments).toEqual(["message.txt"]);
    });
  });

  it("a user's mailBody: ignore wins over smtp.body; the text is listed as left out in the outcome mail", async () => {
    const users: UserConfig[] = USERS.map((u) => (u.name === "bob" ? { ...u, mailBody: "ignore" as const } : u));
    await withRig(emu, { users, smtp: { body: "page" } }, async (rig) => {
      const send = (from: string, to: string) =>
        transport(rig.port).sendMail({
          from,
          to: `${to}@${DOMAIN}`,
          subject: "Order",
          text: "Ship it today.",
          attachments: [{ filename: "order.pdf", content: PDF }],
        });
      const bob = jobIdOf((await send("bob@example.com", "15557770205")).response);
      const alice = jobIdOf((await send("alice@example.com", "15557770206")).response);
      await dispatchAll(rig.store);
      expect((await faxesOf(alice)).map((f) => f.attachments)).toEqual([["message.txt", "order.pdf"]]);
      const [bobFax] = await faxesOf(bob);
      expect(bobFax!.attachments).toEqual(["order.pdf"]);
      expect(bobFax!.notes ?? "").not.toContain("Ship it today");
      const notice = renderText(composeOutcome((await rig.store.getJob(bob))!, "UTC").blocks);
      expect(notice).toMatch(/Left out of the fax[\s\S]*the text of the message: the mail text is not faxed/);
    });
  });
});

describe("send-to-many", () => {
  it("each recipient's display name reaches their cover page", async () => {
    await withRig(emu, {}, async (rig) => {
      const info = await transport(rig.port).sendMail({
        from: "alice@example.com",
        to: [`"Dr. Smith" <15557770207@${DOMAIN}>`, `"Ms. Jones" <15557770208@${DOMAIN}>`, `acme.billing@${DOMAIN}`],
        subject: "[cover] Meeting",
        text: "See you at ten.",
      });
      const id = jobIdOf(info.response);
      await dispatchAll(rig.store);
      const names = Object.fromEntries((await faxesOf(id)).map((f) => [f.faxNumber, f.recipientName]));
      expect(names).toEqual({
        "+15557770207": "Dr. Smith",
        "+15557770208": "Ms. Jones",
        "+15550100100": "Acme Billing",
      });
    });
  });
});
