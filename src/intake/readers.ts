// What intake needs from the reader threads and processes (workers/ implements it): the interface
// lives here so that intake depends on no runner, and workers/ depends on intake's parsers.
import type { ParsedMail } from "./mail/mail-parse.js";

/** What intake runs through the workers (or in-process, see inProcessReaders). */
export interface InputReaders {
  parseMail(messageFile: string, partsDir: string): Promise<ParsedMail>;
  /** A mail's HTML body as text (html-to-text, costly on hostile HTML: off the main thread). */
  htmlText?(html: string): Promise<string>;
  /** How long a mail may still be read after its last byte arrived (none when left out). */
  readonly mailTimeoutMs?: number;
  pdfPageTexts(data: Uint8Array): Promise<string[]>;
  close(): Promise<void>;
}

/** A task that ran out of time: the input's fault, not the machine's (no errno code). */
export class ReadTimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`${what} took longer than ${ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`} to read`);
    this.name = "ReadTimeoutError";
  }
}
