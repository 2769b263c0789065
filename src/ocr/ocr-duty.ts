// The OCR duty: received faxes whose text is pending are read one by one per slot, users taking
// turns (the one served longest ago goes first), never on the SMTP or webhook path: the fax was
// kept and routed before its row was ever claimed. With OCR off it still runs the steps before
// the text (the look for a reply code) in the same slots, and reads nothing. Each run ends in read, unreadable, tried again
// later, or given up; a run killed with the daemon is claimed again when its lease ends.
// With ocr.sent the same slots read sent faxes too (sent-text.ts), after the received faxes
// waiting: a received fax's routing may wait for its text, a sent fax's text is for search only.
import { EventEmitter } from "node:events";
import type { Clock } from "../clock.js";
import { systemClock } from "../clock.js";
import { describeError, isFaxgateError } from "../errors.js";
import { childLog, type Logger } from "../log/index.js";
import { type Jitter, retryDelayMs } from "../retry-schedule.js";
import {
  type Db,
  type QueueStore,
  type ReceivedStore,
  claimSentText,
  claimText,
  queueSentTexts,
  type SentText,
  sentTextFailed,
  sentTextRead,
  sentTextUnreadable,
  stateOnce,
  type ReceivedText,
  textFailed,
  textNotRead,
  textRead,
  textUnreadable,
} from "../store/index.js";
import type { OcrOutcome } from "./ocr-run.js";

/** What the duty needs of a reader (OcrRunner, or a test's stand-in at the same door). */
export interface TextReader {
  read(pdf: Uint8Array, how?: ReadHow): Promise<OcrOutcome>;
}

/** How a document is read: `whole`, every page OCRed (a sent fax's text PDF too); `image`, a picture. */
export interface ReadHow {
  whole?: boolean;
  image?: boolean;
}

export interface OcrDutyOptions {
  store: Pick<ReceivedStore, "readReceivedDocument"> & { readonly sql: Db };
  /** Null when OCR is off and the duty only runs the steps before it (the look for a reply code). */
  reader: TextReader | null;
  concurrency: number;
  attempts: number;
  /** Longest one run may take; a lease a little longer. */
  timeoutMs: number;
  logger: Logger;
  clock?: Clock;
  /** Between looks for work when nothing pokes the duty (a gateway sharing the queue may have kept one). */
  idleMs?: number;
  /** Tries again after 1, 5, 30 minutes... (the last repeats). */
  retryMs?: readonly number[];
  /**
   * Sent faxes' text too (ocr.sent, with a reader): the documents of each job sent since the
   * option was first on, read from the queue's store.
   */
  sent?: { jobs: Pick<QueueStore, "getJob" | "readDocument"> } | null;
}

/** kv key: when sent faxes' text was first read here (jobs sent before it are not read). */
const SENT_SINCE = "ocr.sent.since";

/** OCR's tries come back on the steps as they are: one reader per slot, nothing to spread. */
const EXACT: Jitter = { spread: [1, 1] };

/** The text of a fax is known (read, unreadable or given up): content rules may route it now. */
export interface TextKnown {
  faxId: string;
  state: "done" | "unreadable" | "failed" | "pending";
}

export class OcrDuty extends EventEmitter<{ known: [TextKnown]; idle: [] }> {
  private readonly clock: Clock;
  private running = false;
  private readonly workers: Promise<void>[] = [];
  private wake: (() => void) | null = null;
  /** When each user was last given a slot (a count of turns). */
  private readonly lastServed = new Map<string, number>();
  private turns = 0;
  /** Steps run on each fax's document before its text is read (the look for a reply code). */
  private readonly before: Array<(faxId: string, pdf: Uint8Array) => Promise<void>> = [];
  /** The sweep that queues sent jobs' texts: when sent faxes are read from, and its last look. */
  private sentSince: string | null = null;
  private lastSweep = 0;

  constructor(private readonly o: OcrDutyOptions) {
    super();
    this.clock = o.clock ?? systemClock;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    for (let i = 0; i < this.o.concurrency; i++) this.workers.push(this.work());
  }

  /**
   * A step for each fax's document, run in the same slot before OCR (the look for a reply code,
   * inbound/reply-routing.ts): off the webhook path, bounded by the step itself. Its failure is
   * logged and OCR goes on.
   */
  beforeText(step: (faxId: string, pdf: Uint8Array) => Promise<void>): void {
    this.before.push(step);
  }

  /** A fax was queued: a waiting slot looks now. */
  poke(): void {
    this.wake?.();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await Promise.all(this.workers.splice(0));
  }

  /** The user served longest ago among those with due work (new users first, in queue order). */
  private pick = (users: string[]): string => {
    let best = users[0]!;
    let last = Infinity;
    for (const u of users) {
      const served = this.lastServed.get(u) ?? 0;
      if (served < last) {
        last = served;
        best = u;
      }
    }
    this.lastServed.set(best, ++this.turns);
    if (this.lastServed.size > 10_000) this.lastServed.clear();
    return best;
  };

  private async work(): Promise<void> {
    while (this.running) {
      let job: ReceivedText | null = null;
      try {
        job = await claimText(this.o.store.sql, { leaseMs: this.o.timeoutMs + 60_000, pick: this.pick });
      } catch (err) {
        this.o.logger.error({ err: describeError(err) }, "OCR could not claim work");
      }
      if (!job && this.o.sent && this.o.reader) {
        const sent = await this.claimSent().catch((err: unknown) => {
          this.o.logger.error({ err: describeError(err) }, "OCR could not claim a sent fax's text");
          return null;
        });
        if (sent) {
          await this.readSent(sent);
          continue;
        }
      }
      if (!job) {
        // all due work is done, sent faxes swept too (tests wait for this)
        this.emit("idle");
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, this.o.idleMs ?? 5000);
          function done() {
            clearTimeout(t);
            resolve();
          }
          const prev = this.wake;
          this.wake = () => {
            prev?.();
            done();
          };
        });
        this.wake = null;
        continue;
      }
      await this.readOne(job);
    }
  }

  private async readOne(job: ReceivedText): Promise<void> {
    const log = childLog(this.o.logger, { received: job.faxId });
    const db = this.o.store.sql;
    const started = this.clock.now();
    try {
      const pdf = await this.o.store.readReceivedDocument(job.faxId);
      if (!pdf) {
        await textUnreadable(db, job.faxId, "it has no document");
        return this.known(job.faxId, "unreadable");
      }
      for (const step of this.before)
        await step(job.faxId, pdf).catch((err: unknown) =>
          log.error({ err: describeError(err) }, "a step before OCR failed; the fax is routed by the rules"),
        );
      if (!this.o.reader) {
        await textNotRead(db, job.faxId);
        return this.known(job.faxId, "unreadable");
      }
      const out = await this.o.reader.read(pdf);
      if (out.kind === "unreadable") {
        await textUnreadable(db, job.faxId, out.why);
        log.info({ why: out.why }, "OCR found no text; the fax is kept as it came");
        return this.known(job.faxId, "unreadable");
      }
      await textRead(db, job.faxId, { body: out.text, pdf: out.pdf, pages: out.pages });
      log.info({ pages: out.pages, ms: this.clock.now() - started }, "OCR text read");
      this.known(job.faxId, "done");
    } catch (err) {
      const retryAt = await this.failed(err, job.attempts, log, "OCR failed", (why, at) =>
        textFailed(db, job.faxId, why, at),
      );
      this.known(job.faxId, retryAt ? "pending" : "failed");
    }
  }

  /** Queues the texts of jobs sent since the last look, then claims one (whose turn it is). */
  private async claimSent(): Promise<SentText | null> {
    const db = this.o.store.sql;
    const now = this.clock.now();
    const since = this.sentSince ?? (await stateOnce(db, SENT_SINCE, new Date(now).toISOString()));
    this.sentSince = since;
    // a minute back: a job another gateway finished a moment before its clock said; the
    // jobs_updated index keeps the look small, the unique job_id queues each once
    const changedSince = this.lastSweep ? new Date(this.lastSweep - 60_000).toISOString() : since;
    this.lastSweep = now;
    await queueSentTexts(db, { since, changedSince });
    return claimSentText(db, { leaseMs: this.o.timeoutMs + 60_000, pick: this.pick });
  }

  /**
   * A sent fax's text: the job's documents as the gateway sent them to the service, in order
   * (a PDF or picture read by OCR, every page; plain text taken as it is). The service's cover
   * page and the reply sheet are made for the send and are not read.
   */
  private async readSent(job: SentText): Promise<void> {
    const log = childLog(this.o.logger, { job: job.jobId });
    const db = this.o.store.sql;
    const started = this.clock.now();
    try {
      const sent = await this.o.sent!.jobs.getJob(job.jobId);
      if (!sent || sent.documents.length === 0) {
        await sentTextUnreadable(db, job.jobId, "it has no document");
        return;
      }
      const texts: string[] = [];
      let pages = 0;
      let why = "no words were found on its pages";
      for (const d of sent.documents) {
        const bytes = await this.o.sent!.jobs.readDocument(d).catch((err: NodeJS.ErrnoException) => {
          if (err.code === "ENOENT") return null;
          throw err;
        });
        if (!bytes) {
          why = "its documents are no longer kept";
          continue;
        }
        if (d.contentType === "text/plain") {
          const text = bytes.toString("utf8");
          pages += text.split("\f").length;
          if (/[\p{L}\p{N}]{2,}/u.test(text)) texts.push(text.trim());
          continue;
        }
        const out = await this.o.reader!.read(bytes, { whole: true, image: d.contentType.startsWith("image/") });
        if (out.kind === "unreadable") {
          why = out.why;
          continue;
        }
        pages += out.pages;
        texts.push(out.text);
      }
      if (texts.length === 0) {
        await sentTextUnreadable(db, job.jobId, why);
        log.info({ why }, "OCR found no text in a sent fax");
        return;
      }
      await sentTextRead(db, job.jobId, { body: texts.join("\f"), pages });
      log.info({ pages, ms: this.clock.now() - started }, "OCR text of a sent fax read");
    } catch (err) {
      await this.failed(err, job.attempts, log, "OCR of a sent fax failed", (why, at) =>
        sentTextFailed(db, job.jobId, why, at),
      );
    }
  }

  /**
   * A run (a received or a sent fax's) that threw: tried again on the schedule while the error
   * is temporary and tries are left, else given up. `store` keeps the outcome; when it cannot,
   * the lease ends and the run comes again. The time of the next try, null when given up.
   */
  private async failed(
    err: unknown,
    attempts: number,
    log: Logger,
    what: string,
    store: (why: string, retryAt: Date | null) => Promise<unknown>,
  ): Promise<Date | null> {
    const temporary = !isFaxgateError(err) || err.temporary;
    const last = !temporary || attempts >= this.o.attempts;
    const why = isFaxgateError(err) ? err.message : describeError(err);
    const steps = this.o.retryMs ?? [60_000, 300_000, 1_800_000];
    const retryAt = last ? null : new Date(this.clock.now() + retryDelayMs(steps, attempts, EXACT));
    await store(why, retryAt).catch((e: unknown) =>
      log.error({ err: describeError(e) }, "OCR outcome could not be stored; the lease will end and it runs again"),
    );
    log.warn({ attempt: attempts, why, retryAt: retryAt?.toISOString() ?? null }, what);
    return retryAt;
  }

  private known(faxId: string, state: TextKnown["state"]): void {
    this.emit("known", { faxId, state });
  }
}
