// What the reply-code tests share: a reply as a fax machine sends it, the sheet taken from what
// the service transmitted, the reply's arrival at the emulator, and the wait for its second
// routing (after the look for its code).
import { readFile } from "node:fs/promises";
import path from "node:path";
import { PDFDocument } from "@cantoo/pdf-lib";
import { emulatorInbound } from "../helpers/emulator.js";
import { type GatewayInProcessSpec, mergeSections, type Sections, type TestGateway } from "../helpers/gateway.js";
import { faxQuality, pictureToPdf, rasterise, typeset } from "../helpers/scanned-fax.js";
import { newJob } from "../helpers/store.js";
import { waitUntil } from "../helpers/wait.js";
import { consoleGateway } from "../web/rig.js";

/**
 * The gateway the reply tests start: the console's, the emulator quick (100 ms a fax), inbound
 * faxes looked for every second and mailed (to an outbox in the gateway's folder), OCR on or
 * off, and `config` over that.
 */
export function replyGateway(opts: { ocr: boolean; config?: Sections }): GatewayInProcessSpec {
  return consoleGateway({
    delayMs: 100,
    outbox: true,
    config: mergeSections(
      {
        notify: { from: "faxgate@example.com", inbound: { enabled: true, interval: "1s", mailBacklog: true } },
        ocr: { enabled: opts.ocr },
      },
      opts.config ?? {},
    ),
  });
}

/** A reply as a fax machine sends it: a typed answer, then `sheet` printed at 200x100 dpi, speckled. */
export async function faxedBack(sheet: Uint8Array, seed: number): Promise<Buffer> {
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

/** Alice's [reply] fax sent through the dispatcher; its id and its sheet as the service transmitted it. */
export async function sentWithSheet(rig: TestGateway): Promise<{ jobId: string; sheet: Uint8Array }> {
  const { job } = await rig.gw.store.enqueue(
    newJob(rig.dir, { cover: { enabled: false, replySheet: true }, recipients: [{ number: "+15551234567" }] }),
  );
  const sent = await waitUntil(
    async () => {
      const r = (await rig.gw.store.getJob(job.id))?.recipients[0];
      return r?.state === "delivered" ? r : null;
    },
    "the [reply] fax delivered",
    60_000,
    100,
  );
  // the sheet as the service transmitted it: its last page
  const sheet = await lastPage(await readFile(path.join(rig.emu.dataDir, "faxes", `${sent.messageId}.pdf`)));
  return { jobId: job.id, sheet };
}

/** The emulator receives `pdf` for bob's number; answers the service's message id. */
export function arrive(rig: TestGateway, pdf: Buffer): Promise<string> {
  return emulatorInbound(
    rig.emu,
    { email: "bob@example.com", callerId: "+15557654321", to: "+15550100300" },
    pdf,
    "reply.pdf",
  );
}

/** The kept fax once the look for its code has routed it (a second `routed` entry). */
export async function routedAfterLook(rig: TestGateway, messageId: string) {
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
