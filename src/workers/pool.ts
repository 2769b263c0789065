// Hostile input is read off the main thread (as Postfix parses in separate processes): HTML bodies
// to text, printed PDFs' text layers and stored mails' MIME run on a few piscina worker threads,
// so the event loop keeps answering while they work, a file built to make a parser spin is stopped
// after a time limit, and one built to exhaust memory kills only its worker, never the daemon.
import os from "node:os";
import { Piscina } from "piscina";
import { FaxgateError } from "../errors.js";
import type { ParsedMail } from "../intake/mail/mail-parse.js";
import { ReadTimeoutError, type InputReaders } from "../intake/readers.js";
import { PdfProcessPool, PdfReadLimitError } from "./pdf-process.js";
import { threadEntry } from "../thread.js";
import type { Task, TaskOutcome, TaskValues } from "./tasks.js";

export { ReadTimeoutError, type InputReaders };

export interface ReaderPoolOptions {
  /** Worker threads at most (default: the CPU count, at least 1, at most 4). */
  threads?: number;
  /**
   * A stored mail still being parsed after this long is given up (default 120 s, queue wait
   * included); a mail parsed as it arrives, this long after its last byte. The same limit holds
   * for its HTML body turned into text.
   */
  mailTimeoutMs?: number;
  /** A PDF whose text is still being read after this long is given up (default 60 s). */
  pdfTimeoutMs?: number;
  /** Heap limit of each worker (default 1024 MB). */
  maxHeapMb?: number;
  /** What one PDF reader process may allocate (default 512 MB), enforced by the OS. */
  pdfMaxMemoryMb?: number;
}

function shuttingDown(cause?: unknown): FaxgateError {
  return new FaxgateError("SHUTTING_DOWN", "the reader threads are shut down", {
    temporary: true,
    ...(cause ? { cause } : {}),
  });
}

/** The pool's threads run tasks.ts, started as every thread of faxgate is (thread.ts). */
const TASKS = threadEntry(new URL("./tasks.js", import.meta.url));

export class ReaderPool implements InputReaders {
  private pool: Piscina | null = null;
  private closed = false;
  private readonly threads: number;
  private readonly maxHeapMb: number;
  readonly mailTimeoutMs: number;
  private readonly pdfTimeoutMs: number;
  private readonly pdfs: PdfProcessPool;

  constructor(opts: ReaderPoolOptions = {}) {
    this.threads = opts.threads ?? Math.max(1, Math.min(4, os.availableParallelism()));
    this.maxHeapMb = opts.maxHeapMb ?? 1024;
    this.mailTimeoutMs = opts.mailTimeoutMs ?? 120_000;
    this.pdfTimeoutMs = opts.pdfTimeoutMs ?? 60_000;
    this.pdfs = new PdfProcessPool({
      processes: this.threads,
      timeoutMs: this.pdfTimeoutMs,
      maxMemoryMb: opts.pdfMaxMemoryMb ?? 512,
    });
  }

  /** Threads start with the first mail or PDF: a daemon that has read nothing holds none. */
  private workers(): Piscina {
    if (this.closed) throw shuttingDown();
    this.pool ??= new Piscina({
      filename: TASKS.filename,
      workerData: TASKS.workerData,
      name: "default",
      // One thread stays up once started (pdfjs takes about a second to load in a new one); the
      // others leave after a minute without work.
      minThreads: 1,
      maxThreads: this.threads,
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: this.maxHeapMb },
    });
    return this.pool;
  }

  parseMail(messageFile: string, partsDir: string): Promise<ParsedMail> {
    return this.run({ kind: "parseMail", messageFile, partsDir }, this.mailTimeoutMs, "the message");
  }

  htmlText(html: string): Promise<string> {
    return this.run({ kind: "htmlText", html }, this.mailTimeoutMs, "the message");
  }

  async pdfPageTexts(data: Uint8Array): Promise<string[]> {
    if (this.closed) throw shuttingDown();
    try {
      return await this.pdfs.pageTexts(data);
    } catch (err) {
      if (this.closed) throw shuttingDown(err);
      if (err instanceof PdfReadLimitError && /longer than/.test(err.message))
        throw new ReadTimeoutError("the PDF", this.pdfTimeoutMs);
      throw err;
    }
  }

  private async run<K extends Task["kind"]>(
    task: Extract<Task, { kind: K }>,
    timeoutMs: number,
    what: string,
  ): Promise<TaskValues[K]> {
    const signal = AbortSignal.timeout(timeoutMs);
    let out: TaskOutcome<TaskValues[K]>;
    try {
      out = (await this.workers().run(task, { signal })) as TaskOutcome<TaskValues[K]>;
    } catch (err) {
      // cut off by close(): our own trouble, never the input's
      if (this.closed) throw shuttingDown(err);
      if (signal.aborted) throw new ReadTimeoutError(what, timeoutMs);
      // the worker itself died (out of its heap limit, ...): reported with the worker's reason
      throw err;
    }
    if (out.ok) return out.value;
    throw Object.assign(
      new Error(out.error.message),
      { name: out.error.name },
      out.error.code ? { code: out.error.code } : {},
    );
  }

  /** Stops the threads; a task still running is abandoned (its caller gets SHUTTING_DOWN). */
  async close(): Promise<void> {
    this.closed = true;
    await this.pdfs.close();
    const pool = this.pool;
    this.pool = null;
    await pool?.destroy();
  }
}

/**
 * The same readers on the calling thread, with no time limit: for tests and tools that build one
 * component alone. Loaded on first use, so the daemon's main thread never loads pdfjs.
 */
export const inProcessReaders: InputReaders = {
  parseMail: async (messageFile, partsDir) =>
    (await import("../intake/mail/mail-parse.js")).parseMail(messageFile, partsDir),
  htmlText: async (html) => (await import("../intake/mail/body-text.js")).bodyText({ text: "", html }),
  pdfPageTexts: async (data) => (await import("../intake/pdf/pdf-text.js")).pdfPageTexts(data),
  close: async () => undefined,
};
