// The OCR duty's sent half on a real store with the real tools: a sent fax whose page has no words
// ends as unreadable and its timeline says so; a plain-text document is taken as it is (no OCR);
// a job sent before the duty first looked is not read.
import { PDFDocument } from "@cantoo/pdf-lib";
import { afterEach, describe, expect, it } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { silentLogger } from "../../src/log/logger.js";
import { OcrDuty } from "../../src/ocr/ocr-duty.js";
import { OcrRunner } from "../../src/ocr/ocr-run.js";
import { getSentText } from "../../src/store/sql/sent-text.js";
import { docFile, newJob, tempStore, type TempStore } from "../helpers/store.js";
import { nextEvent } from "../helpers/wait.js";

const HAVE_OCR = findExecutable("ocrmypdf") !== null && findExecutable("gs") !== null;

let t: TempStore | null = null;
let duty: OcrDuty | null = null;
afterEach(async () => {
  await duty?.stop();
  duty = null;
  t?.cleanup();
  t = null;
});

async function sent(s: TempStore, documents: Array<{ path: string; name: string; contentType: string }>) {
  const { job } = await s.store.enqueue(newJob(s.dir, { documents }));
  const now = new Date().toISOString();
  // delivered as the dispatcher leaves it: the sweep looks at the job's state and times
  await s.store.sql.run("UPDATE jobs SET state = 'delivered', finished_at = ?, updated_at = ? WHERE id = ?", [
    now,
    now,
    job.id,
  ]);
  return job.id;
}

describe.skipIf(!HAVE_OCR)("the OCR duty's sent faxes", () => {
  it("a page without words is unreadable, said so; plain text is taken as it is; earlier ones are not read", async () => {
    t = tempStore();
    const early = await sent(t, [
      { path: docFile(t.dir, "Sent before\n"), name: "early.txt", contentType: "text/plain" },
    ]);
    duty = new OcrDuty({
      store: t.store,
      reader: new OcrRunner({
        command: "ocrmypdf",
        languages: ["eng"],
        timeoutMs: 120_000,
        memoryMb: 2048,
        sandbox: "auto",
      }),
      concurrency: 1,
      attempts: 3,
      timeoutMs: 120_000,
      logger: silentLogger(),
      idleMs: 60_000,
      sent: { jobs: t.store },
    });
    // the first look marks when sent faxes are read from; jobs sent after it are read
    const first = nextEvent(duty, "idle", "the OCR duty idle", () => true, 120_000);
    duty.start();
    await first;
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
});
