// OCR of received faxes (issue 51, docs/inbound.md): the reader (ocrmypdf in the sandbox) and the
// duty that reads each kept fax's text after it was routed. Off unless ocr.enabled; on without
// ocrmypdf installed, the start says so and received faxes are kept without text.
import { OcrDuty, OcrRunner } from "../ocr/index.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";

export interface OcrParts {
  /** Null when OCR is off or cannot run here. */
  duty: OcrDuty | null;
  part: Part;
}

export function createOcr({ config, store, clock, logger }: Core): OcrParts {
  const log = logger.child({ component: "ocr" });
  const o = config.ocr;
  const runner = new OcrRunner({ ...o, timeoutMs: o.timeout });
  const usable = o.enabled && runner.available() !== null;
  const duty = usable
    ? new OcrDuty({
        store,
        reader: runner,
        concurrency: o.concurrency,
        attempts: o.attempts,
        timeoutMs: o.timeout,
        logger: log,
        clock,
      })
    : null;
  const part: Part = {
    name: "ocr",
    start: async () => {
      if (!o.enabled) return;
      if (!duty) {
        log.warn({ command: o.command }, "OCR is enabled but ocrmypdf is not installed: faxes are kept without text");
        return;
      }
      const plan = await runner.isolation();
      log.info({ network: plan.summary.network, files: plan.summary.files, languages: o.languages }, "OCR ready");
      if (o.sandbox === "required" && plan.method !== "bwrap")
        throw new Error(`ocr.sandbox is required, but OCR cannot be isolated here: ${plan.warnings.join("; ")}`);
      duty.start();
    },
    stop: async () => {
      runner.close();
      await duty?.stop();
    },
  };
  return { duty, part };
}
