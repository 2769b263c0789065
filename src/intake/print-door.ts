// The print door into the queue: a file from a print folder or CUPS (claimed and read by spool/)
// goes in with what its ticket says, and comes out as a queued job or a refusal. Inside: the file
// becomes a faxable document (office files converted), its text is read for the codes that may
// address it, the destination is decided (intake/print/addressing.ts), the caller's vet runs, and
// the job is queued. A refusal is a FaxgateError that is not temporary and not our fault; anything
// else leaves the file to be tried again.
import { FaxgateError, describeError, faultOf, isFaxgateError } from "../errors.js";
import type { FaxApi } from "../fax/index.js";
import type { Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";
import type { QueueStore } from "../store/index.js";
import { type AcceptDeps, acceptJob, type Accepted } from "./accept.js";
import { sha256Hex } from "../sha256.js";
import { FAXABLE_TYPES, sniffBuffer } from "./documents/file-type.js";
import type { DocumentConverter } from "./office/convert-queue.js";
import { officeExtension, pdfName } from "./office/office-convert.js";
import { ADDRESS_LATER, decideAddressing, waitingAddressing, type Addressing } from "./print/addressing.js";
import type { FaxPrefixRule } from "./print/dial-string.js";
import { parseEmbeddedCodes } from "./print/embedded-codes.js";
import type { Ticket } from "./print/ticket.js";
import type { InputReaders } from "./readers.js";
import type { QueuePressure } from "./queue-pressure.js";
import type { DestinationCheck } from "../recipients/index.js";

export interface PrintDoorDeps {
  store: Pick<QueueStore, "enqueue" | "enqueueCorrupt" | "enqueueNotification">;
  ledger: AcceptDeps["ledger"];
  metrics?: Metrics;
  /** queue.maxWaiting: a full queue leaves the file to be tried again (QUEUE_FULL is temporary) */
  pressure: QueuePressure;
  /** Reads a PDF's text layer (on the daemon's worker threads, with a time limit). */
  readers: Pick<InputReaders, "pdfPageTexts">;
  /** Converts office documents to PDF before they are queued. */
  office: DocumentConverter;
  /** The owner's API client, only called to look a contact name up. */
  clientFor: (user: string) => FaxApi;
  defaultCountryCode: string;
  /** The destination policy, with each owner's own rules (recipients/). */
  destinations: DestinationCheck;
  /** What to do with the outside-line prefix of a `phone` print option (spool.faxPrefix). */
  faxPrefix?: FaxPrefixRule;
}

/** A print file as its pickup read it. */
export interface PrintFile {
  user: string;
  /** The name it was printed or saved under. */
  name: string;
  data: Buffer;
  /** The sha256 of `data`, in hex. */
  sha256: string;
  /** What the print dialog or the sidecar ticket said. */
  ticket?: Ticket;
  /** Where the bytes were read from, recorded as the document's path. */
  path: string;
  /** The same pickup of the same file queues one job, however often it is tried. */
  dedupeKey: string;
  /** Where it came from, kept in the job's `meta.origin` beside how it was addressed. */
  origin: Record<string, string>;
}

/** The destination decided and the key of a true repeat: same owner, bytes, route and cover. */
export interface PrintRoute {
  route: Addressing;
  repeat: string;
}

export interface PrintAccepted extends Accepted, PrintRoute {}

export interface PrintOptions {
  log: Logger;
  /** Runs once the destination is known, before anything is queued; may throw a refusal. */
  vet?: (print: PrintRoute) => void | Promise<void>;
}

/** The document's text by page, for codes; `unreadable` says why a PDF's could not be read. */
type PrintText = { pages: string[] } | { unreadable: string } | undefined;

/** Whether `err` refuses the file for good; anything else leaves it to be tried again. */
export function isPrintRefusal(err: unknown): err is FaxgateError {
  // ours (a bug, the store, the config) is never the file's fault: it waits instead of being refused
  return isFaxgateError(err) && !err.temporary && faultOf(err) !== "ours";
}

export class PrintDoor {
  constructor(private readonly deps: PrintDoorDeps) {}

  /** Queues a print file, or throws why not (isPrintRefusal tells a refusal from a wait). */
  async accept(file: PrintFile, { log, vet }: PrintOptions): Promise<PrintAccepted> {
    const doc = await this.document(file);
    // The text is read even when a ticket or the file name addresses the document: codes hidden
    // in it that name another destination must refuse the file, never be ignored or followed.
    const text = await this.text(doc, log);
    const route = await this.address(file, text, log);
    const repeat = repeatKey(file, route);
    await vet?.({ route, repeat });
    const waiting = route.via === ADDRESS_LATER;
    const accepted = await acceptJob(
      {
        store: this.deps.store,
        ledger: this.deps.ledger,
        log,
        metrics: this.deps.metrics,
        pressure: this.deps.pressure,
      },
      {
        source: "spool",
        ...(waiting ? { awaitingAddress: true } : {}),
        user: file.user,
        recipients: route.recipients,
        // the bytes judged and read by the pickup, never the path again: it may have been swapped since
        documents: [{ path: file.path, ...doc }],
        cover: route.cover,
        scheduledAt: route.scheduledAt,
        tags: route.tags,
        dedupeKey: file.dedupeKey,
        meta: {
          origin: {
            ...file.origin,
            via: route.via,
            sha256: file.sha256,
            repeat,
            ...(route.dialNotes.length ? { dial: route.dialNotes.join("; ") } : {}),
          },
        },
      },
      { via: route.via, bytes: file.data.length },
    );
    if (waiting && !accepted.duplicate) await this.askForAddress(accepted, file.user, log);
    return { ...accepted, route, repeat };
  }

  /** The file's bytes as a faxable document; a type that cannot be faxed is refused (UNSUPPORTED_TYPE). */
  private async document(file: PrintFile): Promise<{ name: string; contentType: string; data: Buffer }> {
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
  private async text(doc: { contentType: string; data: Buffer }, log: Logger): Promise<PrintText> {
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

  private async address(file: PrintFile, text: PrintText, log: Logger): Promise<Addressing> {
    const codes = text && "pages" in text ? parseEmbeddedCodes(text.pages) : undefined;
    if (codes?.problems.length) log.warn({ problems: codes.problems }, "embedded codes not understood");
    let route: Addressing;
    try {
      route = await decideAddressing({
        fileName: file.name,
        ticket: file.ticket,
        codes,
        textUnreadable: text && "unreadable" in text ? text.unreadable : undefined,
        defaultCountryCode: this.deps.defaultCountryCode,
        faxPrefix: this.deps.faxPrefix,
        user: file.user,
        api: () => this.deps.clientFor(file.user),
        destinations: this.deps.destinations,
      });
    } catch (err) {
      // Print now, address later: a print job (it came with a ticket) that names no destination
      // anywhere waits for its owner to give one in the console, instead of being refused.
      if (!isFaxgateError(err, "NO_DESTINATION") || !file.ticket) throw err;
      route = waitingAddressing(file.ticket);
    }
    if (route.dialNotes.length) log.info({ notes: route.dialNotes }, "phone option read");
    return route;
  }

  /** A job that waits for its address (print now, address later) asks its owner for one. */
  private async askForAddress({ job }: Accepted, user: string, log: Logger): Promise<void> {
    await this.deps.store.enqueueNotification({
      kind: "address",
      user,
      jobId: job.id,
      dedupeKey: `address:${job.id}`,
      payload: { jobId: job.id },
    });
    log.info({ job: job.id }, "HELD needs an address: its owner gives the number in the console");
  }
}

/** Only a true repeat is the same fax: same owner, bytes, destinations, cover, schedule and tags. */
function repeatKey(file: PrintFile, route: Addressing): string {
  const what = {
    to: route.recipients.map((r) => r.number).sort(),
    cover: route.cover,
    at: route.scheduledAt,
    tags: [...route.tags].sort(),
  };
  return sha256Hex(`${file.user}\0${file.sha256}\0${JSON.stringify(what)}`);
}
