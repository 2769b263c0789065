// One set-up for the OCR duty's tests (test/ocr/): whether the real tools are here, the real
// reader (ocrmypdf in bubblewrap), and a test's store and duty, stopped and removed after it.
import { afterEach } from "vitest";
import { findExecutable } from "../../src/fs/executable.js";
import { silentLogger } from "../../src/log/logger.js";
import { OcrDuty, type OcrDutyOptions } from "../../src/ocr/ocr-duty.js";
import { OcrRunner } from "../../src/ocr/ocr-run.js";
import { tempStore, type TempStore } from "./store.js";

export const HAVE_OCR = findExecutable("ocrmypdf") !== null && findExecutable("gs") !== null;

export const ocrRunner = (): OcrRunner =>
  new OcrRunner({ command: "ocrmypdf", languages: ["eng"], timeoutMs: 120_000, memoryMb: 2048, sandbox: "auto" });

/** Registers the clean-up; each test then makes its store and its duty (not started). */
export function ocrDutyRig() {
  let t: TempStore | null = null;
  let duty: OcrDuty | null = null;
  afterEach(async () => {
    await duty?.stop();
    duty = null;
    t?.cleanup();
    t = null;
  });
  return {
    store(): TempStore {
      t = tempStore();
      return t;
    },
    /** A duty on the test's store: one slot, three tries, the real reader unless `o` gives one. */
    duty(o: Partial<OcrDutyOptions> = {}): OcrDuty {
      if (!t) throw new Error("make the test's store first");
      duty = new OcrDuty({
        store: t.store,
        reader: ocrRunner(),
        concurrency: 1,
        attempts: 3,
        timeoutMs: 120_000,
        logger: silentLogger(),
        idleMs: 60_000,
        ...o,
      });
      return duty;
    },
  };
}
