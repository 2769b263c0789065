// Hostile input is read off the main thread (as Postfix parses in separate processes): HTML bodies
// to text and stored mails' MIME on a few worker threads, printed PDFs' text layers in child
// processes (workers/off-thread.ts starts both), so the event loop keeps answering while they
// work, a file built to make a parser spin is stopped after a time limit, and one built to exhaust
// memory kills only its worker, never the daemon.
import os from "node:os";
import type { Piscina } from "piscina";
import { FaxgateError } from "../errors.js";
import { ChildLimitError, type ChildPool, childPool, threadPool } from "../workers/index.js";
import type { ParsedMail } from "./mail/mail-parse.js";
import { CODE_PAGES } from "./pdf/pdf-text.js";
import { ReadTimeoutError, type InputReaders } from "./readers.js";
import type { Task, TaskOutcome, TaskValues } from "./reader-tasks.js";

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

/** What the threads run (reader-tasks.ts) and the PDF reader child (pdf/pdf-text-child.ts). */
const TASKS = new URL("./reader-tasks.js", import.meta.url);
const PDF_CHILD = new URL("./pdf/pdf-text-child.js", import.meta.url);
/**
 * pdfjs, loaded by the child before its own module: from the sources (tsx) it is then not
 * transformed at every start (entry.mjs says why).
 */
const PDFJS = ["pdfjs-dist/legacy/build/pdf.mjs", "pdfjs-dist/legacy/build/pdf.worker.mjs"];

export class ReaderPool implements InputReaders {
  private pool: Piscina | null = null;
  private closed = false;
  private readonly threads: number;
  private readonly maxHeapMb: number;
  readonly mailTimeoutMs: number;
  private readonly pdfTimeoutMs: number;
  private readonly pdfs: ChildPool;

  constructor(opts: ReaderPoolOptions = {}) {
    this.threads = opts.threads ?? Math.max(1, Math.min(4, os.availableParallelism()));
    this.maxHeapMb = opts.maxHeapMb ?? 1024;
    this.mailTimeoutMs = opts.mailTimeoutMs ?? 120_000;
    this.pdfTimeoutMs = opts.pdfTimeoutMs ?? 60_000;
    // the child's one argument: how many pages it reads (codes live at the top of a document)
    this.pdfs = childPool(PDF_CHILD, [String(CODE_PAGES)], {
      name: "the PDF reader",
      what: "the PDF",
      processes: this.threads,
      timeoutMs: this.pdfTimeoutMs,
      maxMemoryMb: opts.pdfMaxMemoryMb ?? 512,
      // Starting a child costs about half a second of CPU (pdfjs loads); at 200 documents a
      // child that was a third of a print burst's PDF reading.
      requestsPerProcess: 1000,
      preload: PDFJS.map((p) => import.meta.resolve(p)),
    });
  }

  /** Threads start with the first mail or PDF: a daemon that has read nothing holds none. */
  private workers(): Piscina {
    if (this.closed) throw shuttingDown();
    // One thread stays up once started; the others leave after a minute without work.
    this.pool ??= threadPool(TASKS, { maxThreads: this.threads, idleTimeoutMs: 60_000, maxHeapMb: this.maxHeapMb });
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
      return (await this.pdfs.request<{ pages: string[] }>(data)).pages;
    } catch (err) {
      if (this.closed) throw shuttingDown(err);
      if (err instanceof ChildLimitError && /longer than/.test(err.message))
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
  parseMail: async (messageFile, partsDir) => (await import("./mail/mail-parse.js")).parseMail(messageFile, partsDir),
  htmlText: async (html) => (await import("./mail/body-text.js")).bodyText({ text: "", html }),
  pdfPageTexts: async (data) => (await import("./pdf/pdf-text.js")).pdfPageTexts(data),
  close: async () => undefined,
};
