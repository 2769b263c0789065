// Warm LibreOffices kept started and unused, so that mails sent back to back each find one ready
// while the one a document used is replaced (issue 54 item 4; its bench row is
// bench/office-convert.bench.ts). With one LibreOffice only, each mail waited for the
// replacement's start, and one document per LibreOffice was slower than a cold conversion. The
// pool holds `size` instances that no document has touched; a document takes the first one that
// is ready, and when that is its last document (`restartAfter`, 1 by default) its replacement is
// started at once, while the document converts.
import type { WarmInstance } from "./warm-converter.js";

export interface WarmPoolOptions {
  /** Instances kept started and unused. */
  size: number;
  /** Documents one instance takes before it is replaced. */
  restartAfter: number;
  /** Prepares and starts one instance in its sandbox; null when it could not be prepared. */
  start: () => Promise<WarmInstance | null>;
}

interface Entry {
  started: Promise<WarmInstance | null>;
  /** Set once `started` settled and the instance said ready: the one to take first. */
  ready: boolean;
}

export class WarmPool {
  private readonly entries: Entry[] = [];
  /** Taken instances that come back after their document (they have documents left). */
  private readonly lent = new Set<WarmInstance>();
  private closed = false;

  constructor(private readonly o: WarmPoolOptions) {}

  /** Starts instances until the pool holds its size (counting those that come back). */
  fill(): void {
    while (!this.closed && this.entries.length + this.lent.size < this.o.size) {
      const entry: Entry = { started: this.o.start(), ready: false };
      void entry.started.then((w) =>
        w?.ready.then(
          () => {
            entry.ready = true;
          },
          () => undefined,
        ),
      );
      this.entries.push(entry);
    }
  }

  /**
   * An instance ready for one document, taken out of the pool; or why none could start (the
   * caller converts cold then). One that ended while idle is no document's fault: it is replaced
   * and the next one tried.
   */
  async take(): Promise<WarmInstance | Error> {
    for (;;) {
      this.fill();
      if (this.closed || this.entries.length === 0) return new Error("the warm converters are closed");
      // a ready one first; else the one started first, the likeliest to be ready soon
      const i = Math.max(
        0,
        this.entries.findIndex((e) => e.ready),
      );
      const [entry] = this.entries.splice(i, 1);
      const w = await entry!.started;
      if (!w) {
        this.fill();
        return new Error("it could not be prepared");
      }
      const started: true | Error = await w.ready.then(
        () => true as const,
        (err: Error) => err,
      );
      if (started !== true || !w.alive) {
        void w.stop();
        if (started !== true) {
          this.fill();
          return started;
        }
        continue;
      }
      // its last document: the replacement starts now, while this one converts
      if (w.used + 1 < this.o.restartAfter) this.lent.add(w);
      this.fill();
      return w;
    }
  }

  /** After its document: an instance with documents left comes back when `ok`; else it ends. */
  giveBack(w: WarmInstance, ok: boolean): void {
    const back = this.lent.delete(w);
    if (back && ok && w.alive && !this.closed && w.used < this.o.restartAfter) {
      // it is ready and warm: the next document takes it first
      this.entries.unshift({ started: Promise.resolve(w), ready: true });
      return;
    }
    void w.stop();
    this.fill();
  }

  /** True when every instance in the pool can take a document; false when one could not start. */
  async allReady(): Promise<boolean> {
    const all = await Promise.all(
      this.entries.map(async (e) => {
        const w = await e.started;
        return w
          ? w.ready.then(
              () => true,
              () => false,
            )
          : false;
      }),
    );
    return all.length > 0 && all.every(Boolean);
  }

  /** Ends every instance in the pool (those lent end with their document: the caller stops them). */
  async close(): Promise<void> {
    this.closed = true;
    const entries = this.entries.splice(0);
    for (const e of entries) await (await e.started)?.stop();
    for (const w of this.lent) await w.stop();
    this.lent.clear();
  }
}
