// OCR of received faxes with the real tools (ocrmypdf and tesseract in bubblewrap): a fax as a fax
// machine makes one (typeset, rasterised at 204x196 dpi, speckled) is kept by the store, read by
// the duty, and its words come back, in the store for search and in the PDF's new text layer; a
// page with no words is kept as it came and says so; a run killed mid-way is tried again.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { OcrDuty, TextKnown } from "../../src/ocr/ocr-duty.js";
import type { OcrRunner } from "../../src/ocr/ocr-run.js";
import { getReceivedText } from "../../src/store/sql/received-text.js";
import { faxQuality, pictureToPdf, rasterise, scannedFax, typeset } from "../helpers/scanned-fax.js";
import { HAVE_OCR, ocrDutyRig, ocrRunner as runner } from "../helpers/ocr-duty.js";
import { receivedInput, type TempStore } from "../helpers/store.js";
import { nextEvent } from "../helpers/wait.js";

if (!HAVE_OCR)
  console.warn("OCR tests skipped: ocrmypdf or ghostscript is absent (apt-get install ocrmypdf tesseract-ocr-eng)");

const LINES = [
  "PRIOR AUTHORIZATION REQUEST",
  "Patient: Maria Alvarez",
  "Referral to cardiology, matter 2026-114",
  "Please return the signed form by fax.",
];

const rig = ocrDutyRig();

function pdfText(pdf: Uint8Array, dir: string): string {
  const file = path.join(dir, `check-${Date.now()}.pdf`);
  writeFileSync(file, pdf);
  return execFileSync("pdftotext", [file, "-"], { encoding: "utf8" });
}

async function keep(s: TempStore, messageId: string, document: Buffer) {
  const { fax } = await s.store.keepReceived(receivedInput({ messageId, document, readText: { waitsUntil: null } }));
  return fax;
}

function start(reader: OcrRunner, retryMs = [60_000]): OcrDuty {
  const d = rig.duty({ reader, retryMs });
  d.start();
  return d;
}

describe.skipIf(!HAVE_OCR)("OCR of a received fax", () => {
  it("reads a scanned fax at 204x196 dpi: the words are stored and the PDF gains its text layer", async () => {
    const t = rig.store();
    const scan = await scannedFax(LINES, { dpi: [204, 196], noise: 0.004, seed: 7 });
    // the picture holds no text of its own: whatever pdftotext finds later, OCR put there
    expect(pdfText(scan, t.dir).trim()).toBe("");
    const fax = await keep(t, "msg-scan-1", scan);
    expect((await getReceivedText(t.store.sql, fax.id))?.state).toBe("pending");
    const duty = start(runner());
    const known = (await nextEvent(
      duty,
      "known",
      "the fax's text known",
      (e) => (e as TextKnown).faxId === fax.id,
      120_000,
    )) as [TextKnown];
    expect(known[0].state).toBe("done");
    const text = (await getReceivedText(t.store.sql, fax.id))!;
    expect(text.state).toBe("done");
    for (const w of ["AUTHORIZATION", "Alvarez", "cardiology", "2026-114"]) expect(text.body).toContain(w);
    const stored = (await t.store.readReceivedDocument(fax.id))!;
    const layer = pdfText(stored, t.dir);
    expect(layer).toContain("Alvarez");
    expect((await t.store.getReceived(fax.id))!.bytes).toBe(stored.length);
    const timeline = await t.store.listReceivedEvents(fax.id);
    expect(timeline.map((e) => e.action)).toEqual(["stored", "text read"]);
    // the timeline says what was done, never what the fax says
    expect(JSON.stringify(timeline)).not.toContain("Alvarez");
  }, 180_000);

  it("keeps a fax without words as it came, and says so", async () => {
    const t = rig.store();
    const img = rasterise(await typeset([]), [204, 98]);
    faxQuality(img, 0.001, 3);
    const blank = await pictureToPdf(img);
    const fax = await keep(t, "msg-blank-1", blank);
    const duty = start(runner());
    const [k] = (await nextEvent(
      duty,
      "known",
      "the fax's text known",
      (e) => (e as TextKnown).faxId === fax.id,
      120_000,
    )) as [TextKnown];
    expect(k.state).toBe("unreadable");
    expect(Buffer.compare((await t.store.readReceivedDocument(fax.id))!, blank)).toBe(0);
    const timeline = await t.store.listReceivedEvents(fax.id);
    expect(timeline.at(-1)).toMatchObject({ action: "text unreadable" });
    expect(timeline.at(-1)!.detail).toContain("kept as it came");
  }, 180_000);

  it("a run killed mid-way leaves the fax kept and is tried again", async () => {
    const t = rig.store();
    const fax = await keep(t, "msg-kill-1", await scannedFax(LINES, { seed: 11 }));
    const r = runner();
    const duty = start(r, [0]);
    // ocrmypdf's process group is there once the run has begun: end it as a crash or an OOM kill would
    const [pid] = (await nextEvent(r, "started", "the OCR run's start", () => true, 60_000)) as [number];
    process.kill(-pid, "SIGKILL");
    const first = (await nextEvent(
      duty,
      "known",
      "the fax's text known",
      (e) => (e as TextKnown).faxId === fax.id,
      60_000,
    )) as [TextKnown];
    expect(first[0].state).toBe("pending");
    expect(await t.store.getReceived(fax.id)).not.toBeNull();
    const second = (await nextEvent(
      duty,
      "known",
      "the fax's text known",
      (e) => (e as TextKnown).faxId === fax.id,
      120_000,
    )) as [TextKnown];
    expect(second[0].state).toBe("done");
    const text = (await getReceivedText(t.store.sql, fax.id))!;
    expect(text.attempts).toBe(2);
    expect(text.body).toContain("Alvarez");
  }, 240_000);
});
