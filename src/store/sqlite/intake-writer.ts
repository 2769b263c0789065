// Intake's commits on a worker thread of their own, so SMTP sessions do not wait on the main
// thread while a new job's rows and documents are written. Jobs that arrive while it works are
// committed together, each in its own savepoint; the thread then fdatasyncs the WAL and checks the
// data folder is still writable before it answers, so a job is on disk when its caller hears back.
// The thread gets plain data (SQL text and parameters), and the main thread runs the same requests
// itself (runRequest) when the thread cannot. Figures: docs/bench.md, "Why the store writes the
// way it does".
import path from "node:path";
import type { Worker } from "node:worker_threads";
import type Database from "better-sqlite3";
import type { Logger } from "../../log/index.js";
import { type Spliced, type Statement, spliceRequest, type WriteRequest } from "../sql/enqueue.js";
import { appendLedgerSync } from "../sql/ledger.js";
import { startDbThread } from "./db-thread.js";

/** A job's commit, as ../sql/enqueue.ts builds it for both stores (plain data: SQL text and parameters). */
export type { Statement, WriteRequest } from "../sql/enqueue.js";

/** Why the WAL could not be flushed after a commit: its fdatasync, or the data folder's access(W_OK). */
export interface FlushFailure {
  step: "sync" | "access";
  code?: string;
  message: string;
}

/**
 * The guard's row, when it found one (a duplicate); otherwise the statements were run, with the
 * original kept as `spliced` says when the request asked for it and a run was found. `flushed`:
 * the thread flushed the WAL after the commit (false when the main thread committed it); when that
 * failed, `notFlushed` says why (the commit stands).
 */
export interface WriteOutcome {
  found?: Record<string, unknown>;
  spliced?: Spliced;
  flushed: boolean;
  notFlushed?: FlushFailure;
}

/**
 * The thread stopped before it answered: the request may have been committed or not. The caller
 * keeps what the job's rows would point to (its documents' folder) and answers "try again"; the
 * retry finds a committed job by its dedupe key, and a folder no job names is swept later.
 */
export class CommitUncertainError extends Error {}

/** Jobs committed in one transaction at most: bounds how long the main connection may wait. */
export const MAX_BATCH = 32;

/** A request as the thread gets it (intake-thread.ts). */
export interface Envelope extends WriteRequest {
  seq: number;
}

/** The thread's answer to one request. */
export interface Answer {
  seq: number;
  ok: boolean;
  found?: Record<string, unknown>;
  spliced?: Spliced;
  notFlushed?: FlushFailure;
  error?: string;
}

/** The thread's answers to a batch, with the batch's byte buffers moved back for the next requests. */
export interface Answers {
  answers: Answer[];
  spent: ArrayBuffer[];
}

const THREAD = new URL("./intake-thread.js", import.meta.url);

/**
 * Buffers that went to the thread and came back once their bytes were committed, kept by size (a
 * power of two) for the next requests. A new buffer's pages are faulted in and zeroed, and V8
 * counts it against the heap: that was most of a copy's cost, and it brought collections sooner
 * (docs/bench.md, "Buffers that come back").
 */
export class SpareBuffers {
  private readonly bySize = new Map<number, ArrayBuffer[]>();
  private held = 0;

  constructor(private readonly maxBytes = SPARE_BYTES) {}

  /** A buffer of at least `bytes` (its size a power of two, 4 KiB or more). */
  take(bytes: number): ArrayBuffer {
    const size = sizeFor(bytes);
    const kept = this.bySize.get(size)?.pop();
    if (!kept) return new ArrayBuffer(size);
    this.held -= size;
    return kept;
  }

  /** Keeps a buffer back from the thread, while the ones kept stay under their bound. */
  give(b: ArrayBuffer): void {
    const size = b.byteLength;
    if (size !== sizeFor(size) || this.held + size > this.maxBytes) return;
    let list = this.bySize.get(size);
    if (!list) this.bySize.set(size, (list = []));
    list.push(b);
    this.held += size;
  }

  /** Bytes kept now. */
  get bytes(): number {
    return this.held;
  }
}

/** What spare buffers may hold: the documents of some 40 mails of 100 KB. */
const SPARE_BYTES = 8 * 1024 * 1024;

const sizeFor = (bytes: number): number => Math.max(4096, 2 ** Math.ceil(Math.log2(Math.max(bytes, 1))));

/**
 * The request as posted. Bytes are copied once into buffers of their own (spare ones, come back
 * from the thread), which are then moved to the thread, not copied again (a view into a bigger
 * buffer would otherwise take the whole of it along; the caller keeps its own, which it may
 * reuse, and which the fallback below needs). docs/bench.md measures this against the thread
 * reading a file.
 */
function envelope(seq: number, r: WriteRequest, spare: SpareBuffers): { message: Envelope; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  const own = ([text, params]: Statement): Statement => [
    text,
    params.map((p) => {
      if (!(p instanceof Uint8Array)) return p;
      const copy = new Uint8Array(spare.take(p.byteLength), 0, p.byteLength);
      copy.set(p);
      transfer.push(copy.buffer as ArrayBuffer);
      return copy;
    }),
  ];
  return {
    message: {
      seq,
      ...(r.guard ? { guard: r.guard } : {}),
      statements: r.statements.map(own),
      ...(r.ledger ? { ledger: r.ledger } : {}),
      ...(r.splice ? { splice: r.splice } : {}),
    },
    transfer,
  };
}

/** A request's statements on the main connection, inside the caller's transaction: the thread's work, without it. */
export function runRequest(sql: (text: string) => Database.Statement, r: WriteRequest): WriteOutcome {
  if (r.guard) {
    const row = sql(r.guard[0]).get(...r.guard[1]) as Record<string, unknown> | undefined;
    if (row) return { found: row, flushed: false };
  }
  const cut = spliceRequest(r);
  for (const [text, params] of cut?.statements ?? r.statements) sql(text).run(...params);
  for (const fields of r.ledger ?? []) appendLedgerSync(sql, fields);
  return cut ? { spliced: cut.spliced, flushed: false } : { flushed: false };
}

export class IntakeWriter {
  private worker: Worker | null = null;
  private failed = false;
  private closed = false;
  private seq = 0;
  /** The thread has its connection: from here on, a request it was given may have been committed. */
  private ready = false;
  private readonly waiting = new Map<
    number,
    { resolve: (o: WriteOutcome) => void; reject: (e: Error) => void; request: WriteRequest }
  >();
  private quietWaiters: Array<() => void> = [];
  /** Byte buffers back from the thread, for the next requests' copies. */
  readonly spare = new SpareBuffers();

  /**
   * `inThread`: runs a request on the main connection, for when the thread cannot (committed
   * without waiting for the disk; the store flushes it).
   */
  constructor(
    private readonly file: string,
    private readonly log: Logger,
    private readonly inThread: (r: WriteRequest) => WriteOutcome,
  ) {}

  /**
   * Commits the request on the thread, which then flushes the WAL (see WriteOutcome; on the main
   * connection when the thread cannot). Bytes among its parameters reach the thread as
   * envelope() says. Rejects with the statement's error, or the commit's; with
   * CommitUncertainError when the thread stopped before it answered.
   */
  run(request: WriteRequest): Promise<WriteOutcome> {
    const worker = this.thread();
    if (!worker) return this.runHere(request);
    const seq = ++this.seq;
    const { message, transfer } = envelope(seq, request, this.spare);
    return new Promise<WriteOutcome>((resolve, reject) => {
      if (this.waiting.size === 0) worker.ref();
      this.waiting.set(seq, { resolve, reject, request });
      worker.postMessage(message, transfer);
    });
  }

  private runHere(request: WriteRequest): Promise<WriteOutcome> {
    try {
      return Promise.resolve(this.inThread(request));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Resolves when no request is under way (the checkpoint thread's restart of the WAL waits for it). */
  quiet(): Promise<void> {
    if (this.waiting.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.quietWaiters.push(resolve));
  }

  /** The thread now, before it is needed (the daemon: its descriptors open from the start). */
  start(): void {
    this.thread();
  }

  /** The thread, started if need be; null when it cannot run (the main connection commits then). */
  private thread(): Worker | null {
    if (this.failed || this.closed) return null;
    if (this.worker) return this.worker;
    try {
      return (this.worker = this.spawn());
    } catch (err) {
      this.fallBack(err);
      return null;
    }
  }

  private spawn(): Worker {
    const w = startDbThread(THREAD, this.file, 10_000, { dataDir: path.dirname(this.file) }, (err) => {
      // (while closing, only if requests are still waiting for it)
      if (!this.closed || this.waiting.size > 0) this.fallBack(err);
    });
    w.on("message", (m: Answers | "ready") => this.answered(w, m));
    return w;
  }

  private answered(w: Worker, m: Answers | "ready"): void {
    if (m === "ready") {
      this.ready = true;
      return;
    }
    for (const b of m.spent) this.spare.give(b);
    for (const a of m.answers) {
      const waiter = this.waiting.get(a.seq);
      if (!waiter) continue;
      this.waiting.delete(a.seq);
      if (a.ok) {
        const outcome: WriteOutcome = { flushed: true };
        if (a.found) outcome.found = a.found;
        if (a.spliced) outcome.spliced = a.spliced;
        if (a.notFlushed) outcome.notFlushed = a.notFlushed;
        waiter.resolve(outcome);
      } else waiter.reject(new Error(a.error ?? "the commit failed"));
    }
    if (this.waiting.size === 0) {
      w.unref();
      this.settleQuiet();
    }
  }

  private settleQuiet(): void {
    const waiters = this.quietWaiters;
    this.quietWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /**
   * The thread cannot help: the main connection commits from now on. Requests given to a thread
   * that never opened its connection are run here. Those it had once it had are failed, not run
   * again: it may have committed them before it stopped, and their callers answer "try again",
   * whose retry the dedupe key recognises.
   */
  private fallBack(err: unknown): void {
    if (this.failed) return;
    this.failed = true;
    const w = this.worker;
    this.worker = null;
    if (!this.closed)
      this.log.warn({ err: (err as Error)?.message ?? String(err) }, "intake's commits are back on the main thread");
    void w?.terminate();
    const lost = new CommitUncertainError(
      `the intake writer thread stopped: ${(err as Error)?.message ?? String(err)}`,
    );
    const waiters = [...this.waiting.values()];
    this.waiting.clear();
    for (const waiter of waiters) {
      if (this.ready) waiter.reject(lost);
      // (should it have been committed after all, its job's id is taken, and that too is uncertain)
      else this.runHere(waiter.request).then(waiter.resolve, () => waiter.reject(lost));
    }
    this.settleQuiet();
  }

  /** Once the requests under way are answered: the thread's end. Requests from here on are run here. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.quiet();
    const w = this.worker;
    this.worker = null;
    if (!w) return;
    const exited = new Promise<void>((resolve) => w.once("exit", () => resolve()));
    w.postMessage("close");
    const timer = setTimeout(() => void w.terminate(), 5000);
    await exited.finally(() => clearTimeout(timer));
  }
}
