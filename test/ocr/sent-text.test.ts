// The text of SENT faxes (ocr.sent) through the whole gateway with the real tools: a letter mailed
// to the SMTP door goes to the emulator over HTTPS, is delivered, and the OCR duty (ocrmypdf in
// bubblewrap) reads the document as it went; the text is stored, the job's timeline says how
// much was read (never what), and GET /api/search finds it for its owner and operators only. Its
// text goes with the job's copies when retention deletes them; a legal hold keeps both. With
// ocr.sent off nothing of a sent fax is read.
import os from "node:os";
import path from "node:path";
import nodemailer from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { ledgerRows } from "../../src/store/sql/ledger.js";
import { addHold, purgeExpired, releaseHold } from "../../src/store/sql/retention.js";
import { getSentText } from "../../src/store/sql/sent-text.js";
import type { Job } from "../../src/store/types.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { typeset } from "../helpers/scanned-fax.js";
import { nextEvent, waitUntil } from "../helpers/wait.js";
import { consoleGateway, PASSWORDS, signIn } from "../web/rig.js";

const HAVE_OCR = findExecutable("ocrmypdf") !== null && findExecutable("gs") !== null;
if (!HAVE_OCR) console.warn("sent faxes' text skipped: ocrmypdf or ghostscript is absent");

const LETTER = ["LETTER OF REFERRAL", "Cardiology appointment for Maria Alvarez", "Please confirm by fax"];

async function mail(rig: TestGateway, from: string, to: string): Promise<Job> {
  await nodemailer.createTransport({ host: "127.0.0.1", port: rig.smtpPort, secure: false, ignoreTLS: true }).sendMail({
    from,
    to: `${to}@fax.example.com`,
    subject: "referral",
    text: "attached",
    attachments: [{ filename: "letter.pdf", content: await typeset(LETTER), contentType: "application/pdf" }],
  });
  return waitUntil(
    async () => (await rig.gw.store.listJobs({})).find((j) => j.state === "delivered"),
    "the mailed fax delivered",
    60_000,
    100,
  );
}

async function search(rig: TestGateway, user: keyof typeof PASSWORDS, query: string) {
  const s = await signIn(rig.url("web"), user, PASSWORDS[user]);
  const r = await fetch(`${rig.url("web")}/api/search?${query}`, { headers: { cookie: s.cookie } });
  expect(r.status).toBe(200);
  return ((await r.json()) as { results: Array<Record<string, unknown>> }).results;
}

describe.skipIf(!HAVE_OCR)("the text of sent faxes (ocr.sent)", () => {
  let rig: TestGateway;
  let job: Job;
  beforeAll(async () => {
    const outbox = path.join(os.tmpdir(), `faxgate-sent-text-outbox-${process.pid}`);
    rig = await startGateway(
      consoleGateway({
        config: {
          ocr: { enabled: true, sent: true },
          notify: { from: "faxgate@example.com", transport: `outbox:${outbox}` },
        },
      }),
    );
    job = await mail(rig, "alice@example.com", "15551230777");
  }, 120_000);
  afterAll(async () => {
    await rig?.stop();
  });

  it("reads a delivered fax's document, says how much on its timeline, and search finds it", async () => {
    const text = await waitUntil(
      async () => {
        const t = await getSentText(rig.gw.store.sql, job.id);
        return t && t.state !== "pending" && t.state !== "running" ? t : null;
      },
      "the sent fax's text",
      180_000,
      250,
    );
    expect(text.state).toBe("done");
    expect(text.body).toMatch(/Cardiology appointment for Maria Alvarez/);
    const events = await rig.gw.store.listEvents(job.id);
    const read = events.filter((e) => e.transition === "text read");
    expect(read).toHaveLength(1);
    expect(read[0]!.detail).toMatch(/^text read \(1 pages, \d+ words\)$/);
    expect(events.map((e) => e.detail ?? "").join(" ")).not.toMatch(/alvarez|cardiology/i);

    // its owner finds it by its words, as a sent fax with its own page
    const alice = await search(rig, "alice", "q=cardiology+appointment");
    expect(alice).toHaveLength(1);
    expect(alice[0]).toMatchObject({
      kind: "sent",
      id: job.id,
      link: `/fax.html?id=${job.id}`,
      matched: ["text"],
      line: "Cardiology appointment for Maria Alvarez",
    });
    // someone else does not, by words or by the number dialled
    expect(await search(rig, "bob", "q=cardiology+appointment")).toEqual([]);
    expect(await search(rig, "bob", "q=1230777")).toEqual([]);
    // an operator finds it by the number dialled
    const ops = await search(rig, "ops", "q=1230777");
    expect(ops.map((r) => [r.kind, r.id, r.matched])).toEqual([["sent", job.id, ["dialled"]]]);
    // each search a ledger row without its words
    const rows = (await ledgerRows(rig.gw.store.sql, {})).filter((r) => r.action === "searched");
    expect(rows).toHaveLength(4);
    expect(JSON.parse(rows[0]!.detail)).toMatchObject({ results: 1, shown: job.id });
    expect(rows.map((r) => r.detail).join(" ")).not.toMatch(/cardiology|1230777/i);
  }, 200_000);

  it("its text goes with the job's copies; a legal hold keeps it", async () => {
    await waitUntil(async () => (await getSentText(rig.gw.store.sql, job.id))?.state === "done", "the text", 180_000);
    const db = rig.gw.store.sql;
    const rule = {
      jobsBefore: new Date(Date.now() + 86_400_000).toISOString(),
      receivedBefore: "2000-01-01T00:00:00.000Z",
      expired: () => true,
      serviceDue: () => new Date().toISOString(),
      purged: async () => undefined,
    };
    // the outcome notice is sent (or dropped) first: a pending one keeps the job
    await waitUntil(
      async () =>
        (
          await db.all<{ n: number }>(
            "SELECT COUNT(*) AS n FROM notifications WHERE job_id = ? AND state = 'pending'",
            [job.id],
          )
        )[0]!.n === 0,
      "the outcome notice",
    );
    const hold = await addHold(db, { kind: "job", value: job.id, reason: "test", by: "ops" }, async () => undefined);
    expect(await purgeExpired(db, rule, async () => undefined)).toEqual([]);
    expect((await getSentText(db, job.id))?.state).toBe("done");
    await releaseHold(db, hold.id, "ops", async () => undefined);
    const gone = await purgeExpired(db, rule, async () => undefined);
    expect(gone.map((g) => g.id)).toEqual([job.id]);
    expect(await getSentText(db, job.id)).toBeNull();
    expect(await search(rig, "ops", "q=cardiology")).toEqual([]);
  }, 200_000);
});

describe.skipIf(!HAVE_OCR)("with ocr.sent off", () => {
  let rig: TestGateway;
  afterAll(async () => {
    await rig?.stop();
  });

  it("reads nothing of a sent fax", async () => {
    rig = await startGateway(consoleGateway({ config: { ocr: { enabled: true, sent: false } } }));
    const job = await mail(rig, "alice@example.com", "15551230777");
    // two rounds of the duty finding nothing to do after the fax was delivered: a sweep would
    // have queued and read it before the second
    for (let i = 0; i < 2; i++) await nextEvent(rig.gw.ocr!, "idle", "the OCR duty idle");
    expect(await getSentText(rig.gw.store.sql, job.id)).toBeNull();
    expect((await rig.gw.store.listEvents(job.id)).map((e) => e.transition)).not.toContain("text read");
    expect(await search(rig, "alice", "q=cardiology")).toEqual([]);
  }, 120_000);
});
