// A message is taken while it arrives, never held whole in memory unless it is small: a message
// and its parts that fit in a few hundred KB are held in memory and handed to the store as bytes
// (which keeps them in its database: no file, folder or fsync of their own); past that, each goes
// to a file in the message's work folder under <data>/incoming/, made only then. Bytes past the
// size limit are drained and dropped (the client is told 552 at the end, as SMTP requires). The
// same bytes can feed a second reader as they pass (the MIME parser: one pass over the message);
// the kept copy is what counts, so a reader that gives up or breaks never stops it.
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream, promises as fsp, type WriteStream } from "node:fs";
import path from "node:path";
import { Writable, type Readable } from "node:stream";
import { FaxgateError, describeError } from "../../errors.js";
import { FLUSH_ON_CLOSE } from "../../fs/atomic.js";
import { SMALL_DOCUMENT_BYTES } from "../../store/types.js";

export interface IncomingFile {
  path: string;
  /** The message, when it was small enough to be held (until its WorkDir is removed, HeldFile.data): no file at `path` then. */
  data: Buffer | null;
  bytes: number;
  /** sha256 hex of what was kept (for duplicate detection of mail without a Message-ID) */
  sha256: string;
  sizeExceeded: boolean;
}

/** What one message may hold in memory at once, itself and its parts together. */
export const MESSAGE_HOLD_BYTES = 2 * SMALL_DOCUMENT_BYTES;

/** The error of a message's stream that closed before its end (stream.pipeline's own code). */
export function prematureClose(what: string): Error {
  return Object.assign(new Error(`${what} closed before its end`), { code: "ERR_STREAM_PREMATURE_CLOSE" });
}

/**
 * One message's private work folder and what it may hold in memory. The folder is made the first
 * time one of the message's files must be written (a big message, a big part, a parse from the
 * file), so a small mail makes no file or folder at all.
 */
export class WorkDir {
  private made: Promise<void> | null;
  private left: number;
  private readonly files: HeldFile[] = [];

  /** `exists`: the folder is there already (a reader thread's parse of a stored message). */
  constructor(
    readonly path: string,
    holdBytes: number,
    exists = false,
  ) {
    this.left = holdBytes;
    this.made = exists ? Promise.resolve() : null;
  }

  /** A fresh name under `incomingDir` for one message (nothing is made yet). */
  static forMessage(incomingDir: string): WorkDir {
    return new WorkDir(
      path.join(incomingDir, `${Date.now().toString(36)}-${randomBytes(6).toString("hex")}`),
      MESSAGE_HOLD_BYTES,
    );
  }

  /** The folder on disk: made once, on the first ask. */
  ready(): Promise<void> {
    this.made ??= this.make();
    return this.made;
  }

  private async make(): Promise<void> {
    try {
      await fsp.mkdir(this.path, { mode: 0o700 });
    } catch (err) {
      try {
        // incoming/ itself is made at start; only if it went away is it made again
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        await fsp.mkdir(path.dirname(this.path), { recursive: true, mode: 0o750 });
        await fsp.mkdir(this.path, { mode: 0o700 });
      } catch (again) {
        throw new FaxgateError(
          "STORE_UNAVAILABLE",
          `cannot write to ${path.dirname(this.path)}: ${describeError(again)}`,
          { cause: again, temporary: true },
        );
      }
    }
  }

  /** Takes `bytes` of the message's memory; false when they do not fit (then they go to a file). */
  hold(bytes: number): boolean {
    if (bytes > this.left) return false;
    this.left -= bytes;
    return true;
  }

  release(bytes: number): void {
    this.left += bytes;
  }

  /**
   * A sink for one of the message's files (the message, a part), held in memory while it and the
   * message fit (SMALL_DOCUMENT_BYTES a file, MESSAGE_HOLD_BYTES a message). `flush`: a file it
   * becomes is fsynced as it is closed (fs/atomic.ts FLUSH_ON_CLOSE), while the rest of the
   * message still arrives.
   */
  file(name: string, flush: boolean): HeldFile {
    const f = new HeldFile(path.isAbsolute(name) ? name : path.join(this.path, name), this, flush);
    this.files.push(f);
    return f;
  }

  /** Writes bytes held in memory to their file, for a reader that needs one (a parse from the file). */
  async writeOut(file: string, data: Uint8Array): Promise<void> {
    await this.ready();
    await fsp.writeFile(file, data, { mode: 0o600, flag: "wx" });
  }

  /**
   * The message is done: what its files held is given back to be reused (the bytes they handed
   * out with it), and the folder, if it was made, removed: usually already emptied by the store
   * (a plain rmdir), else whole.
   */
  async remove(): Promise<void> {
    for (const f of this.files) f.release();
    if (!this.made) return;
    await this.made.catch(() => undefined);
    try {
      await fsp.rmdir(this.path);
    } catch {
      await fsp.rm(this.path, { recursive: true, force: true }).catch(() => undefined);
    }
  }
}

/**
 * Held bytes live in buffers of a few sizes (16 KB doubling up to SMALL_DOCUMENT_BYTES), taken
 * from free lists and given back when the message is done, so that a small mail allocates no
 * memory of its own for what it holds. Kept as the chunks they came in (and joined at the end),
 * they were new Buffers every mail, alive long enough for V8 to count them against the old
 * generation, and that set off its full collections: 58 in 1,700 small mails against 11 with
 * nothing held (docs/bench.md).
 */
const SIZES = [16, 8, 4, 2, 1].map((d) => SMALL_DOCUMENT_BYTES / d);
/** Free buffers kept of each size, 4 MB each at most; past that, given ones are left to the collector. */
const FREE_BYTES_PER_SIZE = 4 * 1024 * 1024;
const freeBuffers: Buffer[][] = SIZES.map(() => []);
/**
 * In shared memory, so that the store's intake thread reads a small mail's bytes where they are
 * (store/sqlite/intake-writer.ts). Copied for it, each mail allocated its 173 KB anew: the process
 * spent 0.6 to 0.8 ms more CPU a mail (V8's collector threads, the main thread) and accepted
 * 502-532 mails a second against 606-645 (docs/bench.md).
 */
const takeBuffer = (size: number): Buffer =>
  freeBuffers[size]!.pop() ?? Buffer.from(new SharedArrayBuffer(SIZES[size]!));
const giveBuffer = (size: number, b: Buffer): void => {
  if ((freeBuffers[size]!.length + 1) * SIZES[size]! <= FREE_BYTES_PER_SIZE) freeBuffers[size]!.push(b);
};

/**
 * One file of a message, held in memory until it is too big for that (WorkDir.file), then
 * written to its file: what was held first, then the rest as it comes. Once finished, `data()`
 * is the bytes if they were held (null if they went to the file) and `bytes` their count.
 */
export class HeldFile extends Writable {
  /** What is held: the first `held` bytes of `buf`, one of SIZES[size]. */
  private buf: Buffer | null = null;
  private size = -1;
  private held = 0;
  private released = false;
  private out: WriteStream | null = null;
  bytes = 0;

  constructor(
    readonly path: string,
    private readonly dir: WorkDir,
    private readonly flush: boolean,
  ) {
    super();
  }

  /**
   * The bytes, when they were held; null when they are in the file at `path`. Held bytes are a
   * view of memory that is reused once the message's WorkDir is removed: whoever takes them must
   * be done with them by then (the store copies them into its database as it commits). They are
   * shared memory: posted to another thread, they are not copied, and that thread too must be done
   * with them by then (the store's intake thread answers first).
   */
  data(): Buffer | null {
    if (this.out) return null;
    if (this.released) throw new Error(`${this.path}: the message is done, its bytes are gone`);
    return this.buf ? this.buf.subarray(0, this.held) : Buffer.alloc(0);
  }

  /** True when the bytes went to the file and it was fsynced as it closed. */
  flushed(): boolean {
    return this.out !== null && this.flush && FLUSH_ON_CLOSE;
  }

  /** The held memory back to the free lists (WorkDir.remove): nothing may read or write it after. */
  release(): void {
    this.released = true;
    this.giveBack();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    if (this.released) {
      done(new Error(`${this.path}: written after its message was done`));
      return;
    }
    this.bytes += chunk.length;
    if (!this.out && this.held + chunk.length <= SMALL_DOCUMENT_BYTES && this.keep(chunk)) {
      done();
      return;
    }
    if (this.out) this.put(chunk, done);
    else this.spill().then(() => this.put(chunk, done), done);
  }

  /**
   * Base64 letters (whole quartets; line ends are skipped) decoded and written. While the bytes
   * are held and nothing is queued before them, they are decoded straight into the held memory,
   * without a Buffer of their own; else into a new Buffer, written as any chunk. Returns the
   * decoded bytes, to be looked at at once: a view of held memory moves when it grows.
   */
  writeBase64(letters: string): Buffer {
    const at = this.held;
    const most = Math.ceil((letters.length * 3) / 4);
    if (
      !this.out &&
      !this.released &&
      !this.writableEnded &&
      this.writableLength === 0 &&
      at + most <= SMALL_DOCUMENT_BYTES &&
      this.room(at + most)
    ) {
      const n = this.buf!.write(letters, at, "base64");
      this.held += n;
      this.bytes += n;
      return this.buf!.subarray(at, at + n);
    }
    const bytes = Buffer.from(letters, "base64");
    this.write(bytes);
    return bytes;
  }

  /** Copies `chunk` in; false (nothing kept) when the message may not hold that much more. */
  private keep(chunk: Buffer): boolean {
    const need = this.held + chunk.length;
    if (!this.room(need)) return false;
    chunk.copy(this.buf!, this.held);
    this.held = need;
    return true;
  }

  /** A held buffer of at least `need` bytes (a bigger one if need be); false when the message may not hold that much. */
  private room(need: number): boolean {
    if (this.buf && need <= this.buf.length) return true;
    let size = this.size + 1;
    while (SIZES[size]! < need) size++;
    if (!this.dir.hold(SIZES[size]! - (this.buf?.length ?? 0))) return false;
    const bigger = takeBuffer(size);
    if (this.buf) {
      this.buf.copy(bigger, 0, 0, this.held);
      giveBuffer(this.size, this.buf);
    }
    this.buf = bigger;
    this.size = size;
    return true;
  }

  private giveBack(): void {
    if (!this.buf) return;
    this.dir.release(this.buf.length);
    giveBuffer(this.size, this.buf);
    this.buf = null;
    this.held = 0;
  }

  private put(chunk: Buffer, done: (err?: Error | null) => void): void {
    if (this.out!.write(chunk)) done();
    else this.out!.once("drain", () => done());
  }

  /** To the file from here on: what was held is written first, and its memory given back. */
  private async spill(): Promise<void> {
    await this.dir.ready();
    // destroyed while the folder was made (the client gone): no file is opened to be left open
    if (this.destroyed || this.released) throw new Error(`${this.path}: closed before it was written`);
    const out = createWriteStream(this.path, { mode: 0o600, flush: this.flush && FLUSH_ON_CLOSE });
    out.on("error", (err) => this.destroy(err));
    this.out = out;
    const { buf, size, held } = this;
    if (!buf) return;
    this.dir.release(buf.length);
    this.buf = null;
    this.held = 0;
    // reused only once the file has it (a failed write may still hold it)
    out.write(buf.subarray(0, held), (err) => {
      if (!err) giveBuffer(size, buf);
    });
  }

  override _final(done: (err?: Error | null) => void): void {
    const out = this.out;
    if (!out) {
      done();
      return;
    }
    out.once("close", () =>
      done(out.writableFinished ? null : (out.errored ?? new Error(`${this.path} was closed before it was written`))),
    );
    out.end();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    // a finished file is destroyed too (autoDestroy): what it holds is its result, until release()
    if (!this.writableFinished) {
      this.out?.destroy();
      this.giveBack();
    }
    done(err);
  }
}

/**
 * The message from `stream`, kept in `dir` as message.eml (held in memory while it is small).
 * The chunks are handed on by hand, not through stream.pipeline and a Transform: for a message
 * of a few chunks those cost more than the chunks themselves (the pipeline's AbortController, the
 * DOMException its end makes, a listener set on each stream), and their objects outlive the young
 * generation, so each message left more for V8's full collections (docs/bench.md). What pipeline
 * promised still holds: an error of either stream, or the client gone before the message's end,
 * destroys both and rejects.
 */
export async function writeIncoming(
  stream: Readable,
  dir: WorkDir,
  maxBytes: number,
  tap?: Writable,
): Promise<IncomingFile> {
  const hash = createHash("sha256");
  let bytes = 0;
  let total = 0;
  // the tap's own trouble is its reader's to report (it rejects its own result): here it only
  // stops being fed
  let tapOpen = tap !== undefined;
  const closeTap = (): void => {
    tapOpen = false;
  };
  tap?.on("error", closeTap).once("close", closeTap);
  // A file it becomes is not fsynced here: the store fsyncs it together with the job's other new
  // files and folders (one wait for the disk, not one more before theirs), or reads it into
  // PostgreSQL.
  const out = dir.file("message.eml", false);
  try {
    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const fail = (err: Error): void => {
        if (settled) return;
        settled = true;
        stream.off("data", onData);
        stream.destroy();
        out.destroy();
        reject(err);
      };
      // chunks waited on: the file's drain, the reader's drain (or its end)
      let waits = 0;
      const resume = (): void => {
        if (--waits === 0 && !settled) stream.resume();
      };
      const onData = (chunk: Buffer): void => {
        total += chunk.length;
        if (bytes >= maxBytes) {
          // past the limit the message is refused: its reader has nothing more to do
          if (tapOpen) tap!.destroy();
          return;
        }
        const keep = chunk.length + bytes > maxBytes ? chunk.subarray(0, maxBytes - bytes) : chunk;
        bytes += keep.length;
        hash.update(keep);
        if (tapOpen && !tap!.destroyed && !tap!.write(keep)) {
          // the reader is behind: wait for it (backpressure reaches the client's socket), or for its end
          waits += 1;
          const go = (): void => {
            tap!.off("drain", go).off("close", go).off("error", go);
            resume();
          };
          tap!.on("drain", go).on("close", go).on("error", go);
        }
        if (!out.write(keep)) {
          waits += 1;
          out.once("drain", resume);
        }
        if (waits > 0) stream.pause();
      };
      stream.on("data", onData);
      stream.once("end", () => {
        if (tapOpen) tap!.end();
        out.end();
      });
      stream.on("error", fail);
      stream.once("close", () => {
        if (!stream.readableEnded) fail(prematureClose("the message (the client went away)"));
      });
      out.on("error", fail);
      out.once("close", () => {
        if (settled) return;
        if (out.writableFinished) {
          settled = true;
          resolve();
        } else fail(new Error(`${out.path} was closed before it was written`));
      });
    });
  } catch (err) {
    if (tapOpen) tap!.destroy();
    throw err;
  }
  const exceeded = total > maxBytes || (stream as Readable & { sizeExceeded?: boolean }).sizeExceeded === true;
  return { path: out.path, data: out.data(), bytes, sha256: hash.digest("hex"), sizeExceeded: exceeded };
}
