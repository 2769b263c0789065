// The transmission report: real final jobs (the dispatcher against the emulator over HTTPS), the
// real store, read back with poppler's pdftotext and rendered with pdftoppm; mailed through the
// real notifier to an SMTP sink; written by the real `faxgate report` command.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { PDFDocument, StandardFonts, rgb } from "@cantoo/pdf-lib";
import { afterEach, describe, expect, it } from "vitest";
import { jobReport } from "../../src/notify/job-report.js";
import type { Job } from "../../src/store/types.js";
import { runCli } from "../helpers/cli.js";
import { Rig, USERS } from "../notify/rig.js";

const run = promisify(execFile);
const poppler = existsSync("/usr/bin/pdftotext") && existsSync("/usr/bin/pdftoppm");
const skipMsg = "poppler-utils (pdftotext, pdftoppm) is not installed: apt-get install poppler-utils";

let rig: Rig | null = null;
afterEach(async () => {
  await rig?.stop();
  rig = null;
});

/** A first page that is mostly a black square: its reduced image must darken the report's box. */
async function blackSquarePdf(file: string): Promise<void> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const p = doc.addPage([612, 792]);
  p.drawRectangle({ x: 56, y: 96, width: 500, height: 600, color: rgb(0, 0, 0) });
  p.drawText("page one", { x: 60, y: 740, size: 24, font });
  doc.addPage([612, 792]).drawText("page two", { x: 60, y: 740, size: 24, font });
  await writeFile(file, await doc.save());
}

async function pdfText(pdf: Uint8Array, dir: string): Promise<string> {
  const f = path.join(dir, `r-${Math.random().toString(36).slice(2)}.pdf`);
  await writeFile(f, pdf);
  const { stdout } = await run("pdftotext", ["-layout", f, "-"]);
  const info = await run("pdfinfo", [f]);
  expect(info.stdout).toMatch(/Pages:\s+1\n/);
  return stdout;
}

/** Share of dark pixels in the report's first-page box (PDF points 394..564 x 87..307 from the top, rendered at 72 dpi). */
async function boxDarkness(pdf: Uint8Array, dir: string): Promise<number> {
  const f = path.join(dir, `p-${Math.random().toString(36).slice(2)}.pdf`);
  await writeFile(f, pdf);
  await run("pdftoppm", ["-r", "72", "-gray", "-singlefile", f, path.join(dir, "page")]);
  const pgm = await readFile(path.join(dir, "page.pgm"));
  // P5 header: "P5\n<w> <h>\n255\n"
  const m = /^P5\s+(\d+)\s+(\d+)\s+255\s/.exec(pgm.subarray(0, 40).toString("latin1"))!;
  const w = Number(m[1]);
  const data = pgm.subarray(m[0].length);
  let dark = 0;
  let all = 0;
  for (let y = 92; y < 302; y++) {
    for (let x = 400; x < 558; x++) {
      all++;
      if (data[y * w + x]! < 100) dark++;
    }
  }
  return dark / all;
}

async function job(r: Rig, numbers: string[]): Promise<Job> {
  const file = path.join(r.dir, `doc-${numbers.join("-")}.pdf`);
  await blackSquarePdf(file);
  return r.finalJob("alice", numbers, {
    documents: [{ path: file, name: "order.pdf", contentType: "application/pdf" }],
    cover: { enabled: false, subject: "Pharmacy order" },
  });
}

describe.skipIf(!poppler)("transmission report", () => {
  it("names sender, destination, time with zone, pages of pages, duration, result and message id, with the first page reduced", async () => {
    rig = await new Rig().start();
    const j = await job(rig, ["+15551234567"]);
    expect(j.state).toBe("delivered");
    const me = await rig.directory.get("alice");
    const pdf = await jobReport({ store: rig.store, job: j, user: USERS[0], me, now: new Date() });
    const text = await pdfText(pdf, rig.dir);
    const r = j.recipients[0]!;
    expect(text).toContain("TRANSMISSION REPORT");
    expect(text).toContain(j.id);
    expect(text).toContain("alice@example.com");
    expect(text).toContain("+1 555-123-4567");
    expect(text).toContain("America/New_York");
    expect(text).toMatch(/E[SD]T/);
    expect(text).toContain(`${r.pages} of ${r.pagesCount}`);
    expect(r.pagesCount).toBe(2);
    expect(text).toMatch(/Time per page\s+\d+ (s|min)/);
    expect(text).toMatch(/Result\s+OK/);
    expect(text).toMatch(/Service result\s+0 OK/);
    expect(text).toContain(r.messageId!);
    expect(text).toContain("RESULT: OK");
    // the black square of page one, reduced, darkens most of the box; without a document it stays white
    expect(await boxDarkness(pdf, rig.dir)).toBeGreaterThan(0.4);
    const noDoc = await jobReport({
      store: rig.store,
      job: { ...j, documents: [] },
      user: USERS[0],
      me,
      now: new Date(),
    });
    expect(await boxDarkness(noDoc, rig.dir)).toBeLessThan(0.05);
    // a caller id the service keeps without its country code is written as every surface writes it
    const national = await jobReport({
      store: rig.store,
      job: j,
      user: USERS[0],
      me: { ...me!, faxCallerId: "5550100999" },
      now: new Date(),
      defaultCountryCode: "1",
    });
    expect(await pdfText(national, rig.dir)).toMatch(/Sender number\s+\+1 555-010-0999/);
  });

  it("a failed fax names the failure in words and in the service code", async () => {
    rig = await new Rig().start();
    const j = await job(rig, ["+15551230000", "+15551234567"]);
    expect(j.state).toBe("partial");
    const pdf = await jobReport({
      store: rig.store,
      job: j,
      user: USERS[0],
      me: await rig.directory.get("alice"),
      now: new Date(),
    });
    // FAXGATE_DOC_IMAGES=DIR keeps the report for docs/images (rendered there with pdftoppm)
    if (process.env.FAXGATE_DOC_IMAGES)
      await writeFile(path.join(process.env.FAXGATE_DOC_IMAGES, "transmission-report.pdf"), pdf);
    const text = await pdfText(pdf, rig.dir);
    const failed = j.recipients.find((x) => x.state === "failed")!;
    expect(text).toContain("+1 555-123-0000");
    expect(text).toMatch(/Result\s+FAILED: busy/i);
    expect(text).toContain(failed.resultCode!);
    expect(text).toContain("RESULT: 1 OF 2 DELIVERED");
  });

  it('rides on the outcome mail as notify.report says: "failed" attaches it to a failure only', async () => {
    rig = await new Rig().start();
    await rig.setPreferences("alice@example.com", {
      emailNotifySendOption: "All",
      emailNotifySendIncAttachment: false,
    });
    const ok = await job(rig, ["+15551234567"]);
    const bad = await job(rig, ["+15551230001"]);
    expect(
      await rig.notifier({ transport: rig.smtpTransport(), notify: rig.notifyConfig({ report: "failed" }) }).runOnce(),
    ).toBe(2);
    const mails = await rig.sink.waitFor(2);
    const of = (id: string) => mails.find((m) => m.parsed.headers.get("x-faxgate-job") === id)!;
    expect(of(ok.id).parsed.attachments).toHaveLength(0);
    const [att] = of(bad.id).parsed.attachments;
    expect(att?.filename).toBe(`transmission-report-${bad.id}.pdf`);
    const text = await pdfText(att!.content, rig.dir);
    expect(text).toMatch(/FAILED: no answer/i);
    expect(rig.logText()).not.toContain("page one");
  });

  it("`faxgate report <job> --out FILE` writes it; an unknown job is a clear error", async () => {
    rig = await new Rig().start();
    const j = await job(rig, ["+15551234567"]);
    const cfg = path.join(rig.dir, "faxgate.yaml");
    await writeFile(
      cfg,
      `api:\n  baseUrl: https://127.0.0.1:9\ndata: ${path.join(rig.dir, "data")}\nusers:\n  - name: alice\n    email: alice@example.com\n    apiKey: k\n`,
    );
    const out = path.join(rig.dir, "report.pdf");
    const res = await runCli(["report", j.id, "--out", out, "--tz", "Europe/Berlin", "--config", cfg]);
    expect(res.code, res.stderr).toBe(0);
    const text = await pdfText(await readFile(out), rig.dir);
    expect(text).toContain(j.recipients[0]!.messageId!);
    expect(text).toContain("Europe/Berlin");
    const missing = await runCli(["report", "nosuchjob", "--out", out, "--config", cfg]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("no job nosuchjob");
    const badZone = await runCli(["report", j.id, "--tz", "Mars/Olympus", "--config", cfg]);
    expect(badZone.code).toBe(2);
    expect(badZone.stderr).toContain("IANA time zone");
  });
});

if (!poppler) it.skip(skipMsg, () => {});
