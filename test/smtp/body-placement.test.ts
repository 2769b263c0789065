// Where the text of a mail goes, as a sender meets it over a real SMTP session (swaks): with a
// document attached it is not a page of its own; with a cover it becomes the cover's notes
// without the signature and the confidentiality footer; [page] in the subject still asks for it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEmulator, type TestEmulator } from "../helpers/emulator.js";
import { DOMAIN, jobIdOf, PDF, stopEmulator, withRig, haveSwaks, runCommand } from "./harness.js";

const run = runCommand;
let emu: TestEmulator;
let tmp: string;
let pdf: string;
let hasSwaks = false;
const BODY = [
  "Please see attached.",
  "",
  "CONFIDENTIALITY NOTICE: This e-mail and any attachments are confidential and intended only for the addressee.",
  "If you have received this message in error, please delete it.",
  "-- ",
  "Alice Archer",
  "Front desk, Northside Clinic",
].join("\n");

beforeAll(async () => {
  emu = await startTestEmulator();
  tmp = mkdtempSync(path.join(os.tmpdir(), "faxgate-body-"));
  pdf = path.join(tmp, "referral.pdf");
  writeFileSync(pdf, PDF);
  hasSwaks = await haveSwaks("body-placement");
}, 60_000);
afterAll(async () => {
  await stopEmulator(emu);
  rmSync(tmp, { recursive: true, force: true });
});

async function swaks(port: number, subject: string, to: string): Promise<string> {
  const { stdout } = await run("swaks", [
    "--server",
    `127.0.0.1:${port}`,
    "--from",
    "alice@example.com",
    "--to",
    `${to}@${DOMAIN}`,
    "--header",
    `Subject: ${subject}`,
    "--body",
    BODY,
    "--attach-type",
    "application/pdf",
    "--attach-name",
    "referral.pdf",
    "--attach",
    `@${pdf}`,
  ]);
  return jobIdOf(/queued as \S+/.exec(stdout)?.[0] ?? stdout);
}

describe("the text of a mail with a document (smtp.body: auto)", () => {
  it("no cover: only the PDF is faxed; the text is listed as left out", async (ctx) => {
    if (!hasSwaks) return ctx.skip();
    await withRig(emu, {}, async (rig) => {
      const job = (await rig.store.getJob(await swaks(rig.port, "Referral", "15557770401")))!;
      expect(job.documents.map((d) => d.name)).toEqual(["referral.pdf"]);
      expect(job.meta.leftOut).toEqual([
        { name: "the text of the message", reason: expect.stringContaining("write [page] in the subject") },
      ]);
    });
  });

  it("[cover]: the text is the cover notes, without the signature and the confidentiality footer", async (ctx) => {
    if (!hasSwaks) return ctx.skip();
    await withRig(emu, {}, async (rig) => {
      const job = (await rig.store.getJob(await swaks(rig.port, "[cover] Referral", "15557770402")))!;
      expect(job.documents.map((d) => d.name)).toEqual(["referral.pdf"]);
      expect(job.cover).toMatchObject({ enabled: true, subject: "Referral", notes: "Please see attached." });
    });
  });

  it("[page]: the whole text is a first page, as asked", async (ctx) => {
    if (!hasSwaks) return ctx.skip();
    await withRig(emu, {}, async (rig) => {
      const job = (await rig.store.getJob(await swaks(rig.port, "Referral [page]", "15557770403")))!;
      expect(job.documents.map((d) => d.name)).toEqual(["message.txt", "referral.pdf"]);
      expect((await rig.store.readDocument(job.documents[0]!)).toString()).toContain("Alice Archer");
    });
  });

  it("a text-only mail is still faxed", async (ctx) => {
    if (!hasSwaks) return ctx.skip();
    await withRig(emu, {}, async (rig) => {
      const { stdout } = await run("swaks", [
        "--server",
        `127.0.0.1:${rig.port}`,
        "--from",
        "alice@example.com",
        "--to",
        `15557770404@${DOMAIN}`,
        "--header",
        "Subject: Call back",
        "--body",
        "Please call me back.\n-- \nAlice",
      ]);
      const job = (await rig.store.getJob(jobIdOf(stdout)))!;
      expect(job.cover).toMatchObject({ enabled: true, notes: "Please call me back." });
    });
  });
});
