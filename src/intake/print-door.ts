// The print door into the queue: a file from a print folder or CUPS (claimed and read by spool/)
// becomes a faxable document, its text is read for the codes that may address it, and, once the
// spool has found where it goes, it is queued. Each step answers its result or throws a typed
// refusal: a FaxgateError that is not temporary refuses the file, anything else leaves it to retry.
import { FaxgateError, isFaxgateError, describeError } from "../errors.js";
import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { QueueStore } from "../store/queue-store.js";
import type { NewJob } from "../store/types.js";
import { acceptJob, type Accepted } from "./accept.js";
import { FAXABLE_TYPES, sniffBuffer } from "./documents/file-type.js";
import type { DocumentConverter } from "./office/convert-queue.js";
import { officeExtension, pdfName } from "./office/office-convert.js";
import type { InputReaders } from "./readers.js";

export interface PrintDoorDeps {
  store: Pick<QueueStore, "enqueue" | "enqueueCorrupt" | "enqueueNotification">;
  metrics?: Metrics;
  /** Reads a PDF's text layer (on the daemon's worker threads, with a time limit). */
  readers: Pick<InputReaders, "pdfPageTexts">;
  /** Converts office documents to PDF before they are queued. */
  office: DocumentConverter;
}

/** What is faxed: the file itself, or the PDF made from an office document (as for mail). */
export interface PrintDocument {
  name: string;
  contentType: string;
  data: Buffer;
}

/** The document's text by page, for codes; `unreadable` says why a PDF's could not be read. */
export type PrintText = { pages: string[] } | { unreadable: string } | undefined;

export class PrintDoor {
  constructor(private readonly deps: PrintDoorDeps) {}

  /** The file's bytes as a faxable document; a type that cannot be faxed is refused (UNSUPPORTED_TYPE). */
  async document(file: { user: string; name: string; data: Buffer }): Promise<PrintDocument> {
    const sniffed = sniffBuffer(file.data.subarray(0, 4096));
    if (sniffed && FAXABLE_TYPES.has(sniffed)) return { name: file.name, contentType: sniffed, data: file.data };
    const ext = officeExtension(file.name, sniffed);
    if (!ext)
      throw new FaxgateError(
        "UNSUPPORTED_TYPE",
        `the file's content is ${sniffed ?? "of an unknown type"}; only PDF, TIFF, PNG, JPEG, plain text and office documents can be faxed`,
      );
    return {
      name: pdfName(file.name),
      contentType: "application/pdf",
      data: await this.deps.office.convert({ name: file.name, ext, data: file.data, user: file.user }),
    };
  }

  /** The text of a text or PDF document (undefined for images, which have none). */
  async text(doc: PrintDocument, log: Logger): Promise<PrintText> {
    // in plain text a form feed starts a new page
    if (doc.contentType === "text/plain") return { pages: doc.data.toString("utf8").split("\f") };
    if (doc.contentType !== "application/pdf") return undefined;
    try {
      return { pages: await this.deps.readers.pdfPageTexts(doc.data) };
    } catch (err) {
      // Shutting down is not the PDF's fault: the file stays claimed and is picked up at the next start.
      if (isFaxgateError(err)) throw err;
      // An unreadable text layer is not fatal: the ticket or the file name may still address it.
      const why = describeError(err).slice(0, 200);
      log.warn({ err: why }, "PDF text could not be read; embedded codes skipped");
      return { unreadable: why };
    }
  }

  /**
   * Queues the addressed job durably. A job that waits for its address (print now, address later)
   * also queues the notice that asks its owner for one.
   */
  async accept(job: NewJob, log: Logger, fields: Record<string, unknown>): Promise<Accepted> {
    const accepted = await acceptJob({ store: this.deps.store, log, metrics: this.deps.metrics }, job, fields);
    if (job.awaitingAddress && !accepted.duplicate) {
      const id = accepted.job.id;
      await this.deps.store.enqueueNotification({
        kind: "address",
        user: job.user,
        jobId: id,
        dedupeKey: `address:${id}`,
        payload: { jobId: id },
      });
      log.info({ job: id }, "HELD needs an address: its owner gives the number in the console");
    }
    return accepted;
  }
}
