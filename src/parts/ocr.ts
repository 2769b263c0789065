// OCR of received faxes (issue 51, docs/inbound.md): the reader (ocrmypdf in the sandbox) and the
// duty that reads each kept fax's text after it was routed. Off unless ocr.enabled; on without
// ocrmypdf installed, the start says so and received faxes are kept without text. With OCR off the
// duty still runs, reading nothing, when received faxes are looked at for reply codes
// (replySheets.look, not off, and pdftoppm installed): the look must not cost an office OCR.
import { findExecutable } from "../fs/index.js";
import { OcrDuty, OcrRunner } from "../ocr/index.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";
import { childLog } from "../log/index.js";

export interface OcrParts {
  /** Null when neither OCR nor the look for reply codes runs here. */
  duty: OcrDuty | null;
  /** True when the duty reads text (ocr.enabled, ocrmypdf installed); else it only looks for codes. */
  reads: boolean;
  part: Part;
}

export function createOcr({ config, store, clock, logger }: Core): OcrParts {
  const log = childLog(logger, { component: "ocr" });
  const o = config.ocr;
  const runner = new OcrRunner({ ...o, timeoutMs: o.timeout });
  const reads = o.enabled && runner.available() !== null;
  const looks = config.replySheets.look !== "off" && findExecutable("pdftoppm") !== null;
  const duty =
    reads || looks
      ? new OcrDuty({
          store,
          reader: reads ? runner : null,
          concurrency: o.concurrency,
          attempts: o.attempts,
          // a look alone is bounded by its own timeout
          timeoutMs: reads ? o.timeout : config.replySheets.timeout,
          logger: log,
          clock,
          // sent faxes' text (ocr.sent) only when text is read at all
          sent: reads && o.sent ? { jobs: store } : null,
        })
      : null;
  const part: Part = {
    name: "ocr",
    start: async () => {
      if (!o.enabled) {
        duty?.start();
        return;
      }
      if (!reads) {
        log.warn({ command: o.command }, "OCR is enabled but ocrmypdf is not installed: faxes are kept without text");
        duty?.start();
        return;
      }
      const plan = await runner.isolation();
      log.info({ network: plan.summary.network, files: plan.summary.files, languages: o.languages }, "OCR ready");
      if (o.sandbox === "required" && plan.method !== "bwrap")
        throw new Error(`ocr.sandbox is required, but OCR cannot be isolated here: ${plan.warnings.join("; ")}`);
      duty?.start();
    },
    stop: async () => {
      runner.close();
      await duty?.stop();
    },
  };
  return { duty, reads, part };
}
