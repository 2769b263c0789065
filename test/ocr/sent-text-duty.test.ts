// The OCR duty's sent half on a real store with the real tools: a sent fax whose page has no words
// ends as unreadable and its timeline says so; a plain-text document is taken as it is (no OCR);
// a job sent before the duty first looked is not read; a run killed mid-way is tried again.
import { PDFDocument } from "@cantoo/pdf-lib";
import { describe, expect, it } from "vitest";
import type { OcrDuty } from "../../src/ocr/ocr-duty.js";
import { getSentText } from "../../src/store/sql/sent-text.js";
import { HAVE_OCR, ocrDutyRig, ocrRunner } from "../helpers/ocr-duty.js";
import { scannedFax } from "../helpers/scanned-fax.js";
import { docFile, markSent, newJob, type TempStore } from "../helpers/store.js";
import { nextEvent } from "../helpers/wait.js";

const rig = ocrDutyRig();

async function sent(s: TempStore, documents: Array<{ path: string; name: string; contentType: string }>) {
  const { job } = await s.store.enqueue(newJob(s.dir, { documents }));
  await markSent(s.store, job.id);
  return job.id;
}

/** Starts the duty; its first look marks when sent faxes are read from: jobs sent after it are read. */
async function firstLook(duty: OcrDuty): Promise<void> {
  const first = nextEvent(duty, "idle", "the OCR duty idle", () => true, 120_000);
  duty.start();
  await first;
}

describe.skipIf(!HAVE_OCR)("the OCR duty's sent faxes", () => {
  it("a page without words is unreadable, said so; plain text is taken as it is; earlier ones are not read", async () => {
    const t = rig.store();
    const early = await sent(t, [
      { path: docFile(t.dir, "Sent before\n"), name: "early.txt", contentType: "text/plain" },
    ]);
    const duty = rig.duty({ sent: { jobs: t.store } });
    await firstLook(duty);
    const blank = await PDFDocument.create();
    blank.addPage([612, 792]);
    const blankId = await sent(t, [
      { path: docFile(t.dir, Buffer.from(await blank.save())), name: "blank.pdf", contentType: "application/pdf" },
    ]);
    const textId = await sent(t, [
      { path: docFile(t.dir, "Order 7781 for gauze\nShip by Friday\n"), name: "order.txt", contentType: "text/plain" },
    ]);
    const idle = nextEvent(duty, "idle", "the OCR duty idle again", () => true, 120_000);
    duty.poke();
    await idle;
    const unreadable = await getSentText(t.store.sql, blankId);
    expect(unreadable?.state).toBe("unreadable");
    const events = await t.store.listEvents(blankId);
    expect(events.filter((e) => e.transition === "text unreadable").map((e) => e.detail)).toEqual([
      "text unreadable (no words were found on its pages)",
    ]);
    const text = await getSentText(t.store.sql, textId);
    expect(text?.state).toBe("done");
    expect(text?.body).toBe("Order 7781 for gauze\nShip by Friday");
    expect((await t.store.listEvents(textId)).find((e) => e.transition === "text read")?.detail).toBe(
      "text read (1 pages, 7 words)",
    );
    expect(await getSentText(t.store.sql, early)).toBeNull();
  }, 150_000);

  it("a run killed mid-way is tried again and read", async () => {
    const t = rig.store();
    const reader = ocrRunner();
    const duty = rig.duty({ reader, retryMs: [0], sent: { jobs: t.store } });
    await firstLook(duty);
    const scan = await scannedFax(["DELIVERY NOTE", "Gauze for Maria Alvarez", "Order 7781"], { seed: 5 });
    const id = await sent(t, [{ path: docFile(t.dir, scan), name: "note.pdf", contentType: "application/pdf" }]);
    const started = nextEvent(reader, "started", "the OCR run's start", () => true, 60_000);
    duty.poke();
    const [pid] = (await started) as [number];
    // the run is claimed: the next idle comes after it was tried again
    const idle = nextEvent(duty, "idle", "the OCR duty idle after the retry", () => true, 120_000);
    process.kill(-pid, "SIGKILL");
    await idle;
    const text = (await getSentText(t.store.sql, id))!;
    expect(text).toMatchObject({ state: "done", attempts: 2 });
    expect(text.body).toContain("Alvarez");
    // a try that is tried again is not on the timeline; its read is
    expect(
      (await t.store.listEvents(id)).filter((e) => e.transition.startsWith("text")).map((e) => e.transition),
    ).toEqual(["text read"]);
  }, 240_000);
});
