// A received fax routed by its reply code (issue 51), end to end on the real parts: a [reply] fax
// sent by alice through the dispatcher to the emulator over HTTPS; its reply sheet taken from the
// PDF the service transmitted, printed by Ghostscript at 200x100 dpi, speckled, behind a typed
// answer; faxed back to bob's number by the emulator; found by the OCR duty's look (pdftoppm in the
// sandbox, zxing-wasm) and routed to alice, with a ledger row saying why and both timelines
// linked in the console's API. The same sheet signed with another key routes by the rules and says so.
import { readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PDFDocument } from "@cantoo/pdf-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { encodeReplyCode } from "../../src/reply-sheet/reply-code.js";
import { replySheetPage } from "../../src/reply-sheet/reply-page.js";
import { ledgerRows } from "../../src/store/sql/ledger.js";
import { emulatorInbound } from "../helpers/emulator.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { faxQuality, pictureToPdf, rasterise, typeset } from "../helpers/scanned-fax.js";
import { newJob } from "../helpers/store.js";
import { waitUntil } from "../helpers/wait.js";
import { PASSWORDS, consoleGateway, signIn } from "../web/rig.js";

const TOOLS = ["ocrmypdf", "gs", "pdftoppm"].filter((t) => findExecutable(t) === null);
if (TOOLS.length) console.warn(`reply routing test skipped: ${TOOLS.join(", ")} not installed`);

let rig: TestGateway;

/** A reply as a fax machine sends it: a typed answer, then `sheet` printed at 200x100 dpi, speckled. */
async function faxedBack(sheet: Uint8Array, seed: number): Promise<Buffer> {
  const printed = rasterise(sheet, [200, 100]);
  faxQuality(printed, 0.004, seed);
  const doc = await PDFDocument.create();
  for (const part of [await typeset(["Re: your fax", "Yes, Tuesday suits us."]), await pictureToPdf(printed)]) {
    const src = await PDFDocument.load(part);
    for (const p of await doc.copyPages(src, src.getPageIndices())) doc.addPage(p);
  }
  return Buffer.from(await doc.save());
}

/** The last page of a PDF, alone. */
async function lastPage(pdf: Uint8Array): Promise<Uint8Array> {
  const src = await PDFDocument.load(pdf);
  const doc = await PDFDocument.create();
  const [p] = await doc.copyPages(src, [src.getPageCount() - 1]);
  doc.addPage(p!);
  return doc.save();
}

/** The emulator receives `pdf` for bob's number; answers the service's message id. */
async function arrive(pdf: Buffer): Promise<string> {
  return emulatorInbound(
    rig.emu,
    { email: "bob@example.com", callerId: "+15557654321", to: "+15550100300" },
    pdf,
    "reply.pdf",
  );
}

/** The kept fax once the look for its code has routed it (a second `routed` entry). */
async function routedAfterLook(messageId: string) {
  return waitUntil(
    async () => {
      const [fax] = await rig.gw.store.listReceived({ messageId });
      if (!fax) return null;
      const events = await rig.gw.store.listReceivedEvents(fax.id);
      return events.filter((e) => e.action === "routed").length >= 2 ? { fax, events } : null;
    },
    "the reply routed after the look for its code",
    240_000,
    250,
  );
}

async function consoleGet(user: keyof typeof PASSWORDS, url: string) {
  const s = await signIn(rig.url("web"), user, PASSWORDS[user]);
  const r = await fetch(`${rig.url("web")}${url}`, { headers: { cookie: s.cookie } });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

describe.skipIf(TOOLS.length > 0)("a received fax with a reply code", () => {
  let jobId = "";
  let sheet: Uint8Array = new Uint8Array();

  beforeAll(async () => {
    rig = await startGateway(
      consoleGateway({
        delayMs: 100,
        config: {
          notify: {
            from: "faxgate@example.com",
            transport: `outbox:${os.tmpdir()}/faxgate-reply-routes-outbox-${process.pid}`,
            inbound: { enabled: true, interval: "1s", mailBacklog: true },
          },
          ocr: { enabled: true },
        },
      }),
    );
    // alice's [reply] fax, sent to the service like any other
    const { job } = await rig.gw.store.enqueue(
      newJob(rig.dir, { cover: { enabled: false, replySheet: true }, recipients: [{ number: "+15551234567" }] }),
    );
    jobId = job.id;
    const sent = await waitUntil(
      async () => {
        const r = (await rig.gw.store.getJob(jobId))?.recipients[0];
        return r?.state === "delivered" ? r : null;
      },
      "the [reply] fax delivered",
      60_000,
      100,
    );
    // the sheet as the service transmitted it: its last page
    sheet = await lastPage(await readFile(path.join(rig.emu.dataDir, "faxes", `${sent.messageId}.pdf`)));
  }, 120_000);
  afterAll(() => rig?.stop());

  it("routes to the sender of the sent fax, says why in the ledger, and links both timelines", async () => {
    const { fax, events } = await routedAfterLook(await arrive(await faxedBack(sheet, 51)));
    // received with bob's key (or the operator's, whose admin key sees the account's faxes too)
    expect(["bob", "ops"]).toContain(fax.user);
    expect(events.map((e) => `${e.action}: ${e.detail ?? ""}`)).toEqual([
      expect.stringMatching(/^stored: /),
      "routed: rule waiting for its reply code to be looked for: ",
      `reply to: ${jobId}`,
      `routed: by its reply code to the sender of job ${jobId}: mail to alice`,
    ]);
    // alice is mailed the fax; the user whose key received it is not
    const mailed = await rig.gw.store.listNotifications({ kind: "inbound" });
    const about = mailed.filter((n) => (n.payload as { receivedId?: string }).receivedId === fax.id);
    expect(about.map((n) => n.user)).toEqual(["alice"]);
    // the hold's row, then the reply's: the ledger says why it went to alice
    const rows = (await ledgerRows(rig.gw.store.sql, {})).filter(
      (r) => r.action === "routed" && r.object_id === fax.id,
    );
    expect(rows.map((r) => JSON.parse(r.detail))).toEqual([
      expect.objectContaining({ route: "waiting for its reply code to be looked for" }),
      { route: "reply code", deliveries: 1, after: `its reply code verified: a reply to job ${jobId}` },
    ]);
    // the console: the sent fax's timeline names the reply, the reply names the sent fax, alice may open both
    const job = await consoleGet("alice", `/api/jobs/${jobId}`);
    expect(
      (job.body.timeline as Array<{ transition: string; detail: string }>).filter((e) => e.transition === "reply"),
    ).toEqual([expect.objectContaining({ detail: fax.id })]);
    const received = await consoleGet("alice", `/api/received/${fax.id}`);
    expect(received.status).toBe(200);
    expect(received.body.access).toBe("mailed");
    expect(
      (received.body.timeline as Array<{ action: string; detail: string }>).find((e) => e.action === "reply to")
        ?.detail,
    ).toBe(jobId);
    // a stranger to the fax (bob's number took it, but the route gave it to alice) still cannot open the sent fax
    expect((await consoleGet("bob", `/api/jobs/${jobId}`)).status).toBe(404);
  }, 300_000);

  it("a code signed with another key routes by the rules, and the timeline says it did not verify", async () => {
    const forged = await replySheetPage(encodeReplyCode(Buffer.alloc(32, 9), { jobId, owner: "alice" }));
    const { fax, events } = await routedAfterLook(await arrive(await faxedBack(forged, 52)));
    expect(events.map((e) => `${e.action}: ${e.detail ?? ""}`)).toEqual([
      expect.stringMatching(/^stored: /),
      "routed: rule waiting for its reply code to be looked for: ",
      "reply code: reply code did not verify; routed by the rules",
      "routed: after a reply code that did not verify: rule default",
    ]);
    const mailed = await rig.gw.store.listNotifications({ kind: "inbound" });
    expect(
      mailed.filter((n) => (n.payload as { receivedId?: string }).receivedId === fax.id).map((n) => n.user),
    ).toEqual([fax.user]);
    const job = await rig.gw.store.listEvents(jobId);
    expect(job.filter((e) => e.transition === "reply")).toHaveLength(1);
  }, 300_000);
});
