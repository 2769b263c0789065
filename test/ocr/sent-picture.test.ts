// A sent fax whose document is a picture (ocr.sent): a PNG of a typed letter, mailed to the SMTP
// door, goes to the emulator as a picture and the OCR duty reads it (ocrmypdf --image-dpi 200: the
// picture says nothing of its resolution, as a phone's or a scanner's export often does); the
// text is stored and GET /api/search finds the fax by a word on the picture.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import nodemailer from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { getSentText } from "../../src/store/sql/sent-text.js";
import type { Job } from "../../src/store/types.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { typeset } from "../helpers/scanned-fax.js";
import { waitUntil } from "../helpers/wait.js";
import { consoleGateway, PASSWORDS, signIn } from "../web/rig.js";

const HAVE_OCR = findExecutable("ocrmypdf") !== null && findExecutable("gs") !== null;
if (!HAVE_OCR) console.warn("sent pictures' text skipped: ocrmypdf or ghostscript is absent");

const LETTER = ["PRESCRIPTION RENEWAL", "Metoprolol for Jonas Whitfield", "Signed by the practice"];

/** A greyscale PNG of the letter at 200 dpi, without the pHYs chunk that would tell its resolution. */
async function letterPng(): Promise<Buffer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-sent-picture-"));
  try {
    const pdf = path.join(dir, "letter.pdf");
    const png = path.join(dir, "letter.png");
    writeFileSync(pdf, await typeset(LETTER, 18));
    execFileSync("gs", [
      "-q",
      "-dNOPAUSE",
      "-dBATCH",
      "-dSAFER",
      "-sDEVICE=pnggray",
      "-r200",
      `-sOutputFile=${png}`,
      pdf,
    ]);
    return withoutChunk(readFileSync(png), "pHYs");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The PNG without its chunks of `type` (each chunk: length, type, data, CRC; the signature is 8 bytes). */
function withoutChunk(png: Buffer, type: string): Buffer {
  const kept = [png.subarray(0, 8)];
  for (let at = 8; at < png.length; ) {
    const end = at + 12 + png.readUInt32BE(at);
    if (png.toString("latin1", at + 4, at + 8) !== type) kept.push(png.subarray(at, end));
    at = end;
  }
  return Buffer.concat(kept);
}

describe.skipIf(!HAVE_OCR)("the text of a sent picture (ocr.sent)", () => {
  let rig: TestGateway;
  let job: Job;
  let png: Buffer;
  beforeAll(async () => {
    png = await letterPng();
    const outbox = path.join(os.tmpdir(), `faxgate-sent-picture-outbox-${process.pid}`);
    rig = await startGateway(
      consoleGateway({
        config: {
          ocr: { enabled: true, sent: true },
          notify: { from: "faxgate@example.com", transport: `outbox:${outbox}` },
        },
      }),
    );
    await nodemailer
      .createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true })
      .sendMail({
        from: "alice@example.com",
        to: "15551230778@fax.example.com",
        subject: "renewal",
        text: "attached",
        attachments: [{ filename: "renewal.png", content: png, contentType: "image/png" }],
      });
    job = await waitUntil(
      async () => (await rig.gw.store.listJobs({})).find((j) => j.state === "delivered"),
      "the mailed picture delivered",
      60_000,
      100,
    );
  }, 120_000);
  afterAll(async () => {
    await rig?.stop();
  });

  it("reads the picture as it was sent, and search finds the fax by its words", async () => {
    // the job went out as the picture itself (not converted to a PDF first): the picture is what is read
    expect(job.documents.map((d) => d.contentType)).toEqual(["image/png"]);
    expect(png.includes(Buffer.from("pHYs"))).toBe(false);
    const text = await waitUntil(
      async () => {
        const t = await getSentText(rig.gw.store.sql, job.id);
        return t && t.state !== "pending" && t.state !== "running" ? t : null;
      },
      "the sent picture's text",
      180_000,
      250,
    );
    expect(text.state).toBe("done");
    expect(text.body).toMatch(/Metoprolol for Jonas Whitfield/);
    const read = (await rig.gw.store.listEvents(job.id)).filter((e) => e.transition === "text read");
    expect(read.map((e) => e.detail)).toEqual([expect.stringMatching(/^text read \(1 pages, \d+ words\)$/)]);

    const s = await signIn(rig.url("web"), "alice", PASSWORDS.alice);
    const r = await fetch(`${rig.url("web")}/api/search?q=metoprolol+whitfield`, { headers: { cookie: s.cookie } });
    expect(r.status).toBe(200);
    const { results } = (await r.json()) as { results: Array<Record<string, unknown>> };
    expect(results.map((x) => [x.kind, x.id, x.matched])).toEqual([["sent", job.id, ["text"]]]);
  }, 200_000);
});
