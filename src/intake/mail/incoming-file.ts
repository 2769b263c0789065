// A message is taken while it arrives, never held whole in memory unless it is small: a message
// and its parts that fit in a few hundred KB are held in memory and handed to the store as bytes
// (which keeps them in its database: no file, folder or fsync of their own); past that, each goes
// to a file in the message's work folder under <data>/incoming/, made only then. Bytes past the
// size limit are drained and dropped (the client is told 552 at the end, as SMTP requires). The
// same bytes can feed a second reader as they pass (the MIME parser: one pass over the message);
// the kept copy is what counts, so a reader that gives up or breaks never stops it.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream, promises as fsp, type WriteStream } from "node:fs";
import path from "node:path";
import { Transform, type TransformCallback, Writable, type Readable } from "node:stream";
import { FaxgateError, describeError } from "../../errors.js";
import { FLUSH_ON_CLOSE, pipeChain } from "../../fs/index.js";
import { SMALL_DOCUMENT_BYTES } from "../../store/index.js";
import { pooledRandomBytes } from "../../random-pool.js";
import { sha256Hex } from "../../sha256.js";
import { HELD_SIZES, type HeldMemory } from "./held-memory.js";

export interface IncomingFile {
  path: string;
  /** The message, when it was small enough to be held (until its WorkDir is removed, HeldFile.data): no file at `path` then. */
  data: Buffer | null;
  bytes: number;
  sizeExceeded: boolean;
}

/**
 * sha256 hex of what was kept, for the duplicate check of mail without a Message-ID: taken only
 * when such a mail asks (from the held bytes, else from the file, before the store moves it).
 * Hashing every message as it passed was 2-3% of the daemon's main thread under the bench's
 * 100 KB rows, whose mails, like nearly all, carry a Message-ID (docs/bench.md, issue 54).
 */
export async function keptSha256(kept: IncomingFile): Promise<string> {
  if (kept.data) return sha256Hex(kept.data);
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(kept.path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** What one message may hold in memory at once, itself and its parts together. */
export const MESSAGE_HOLD_BYTES = 2 * SMALL_DOCUMENT_BYTES;

/**
 * One message's private work folder and what it may hold in memory. The folder is made the first
 * time one of the message's files must be written (a big message, a big part, a parse from the
 * file), so a small mail makes no file or folder at all.
 */
export class WorkDir {
  private made: Promise<void> | null;
  private left: number;
  private readonly files: HeldFile[] = [];
  /** Buffers `scratch` took from `memory`, with their HELD_SIZES index. */
  private readonly taken: Array<[number, Buffer]> = [];

  /**
   * `memory`: where held bytes are taken from and given back to (the mail door's, held-memory.ts).
   * `exists`: the folder is there already (a reader thread's parse of a stored message).
   */
  constructor(
    readonly path: string,
    holdBytes: number,
    readonly memory: HeldMemory,
    exists = false,
  ) {
    this.left = holdBytes;
    this.made = exists ? Promise.resolve() : null;
  }

  /** A fresh name under `incomingDir` for one message (nothing is made yet). */
  static forMessage(incomingDir: string, memory: HeldMemory): WorkDir {
    return new WorkDir(
      path.join(incomingDir, `${Date.now().toString(36)}-${pooledRandomBytes(6).toString("hex")}`),
      MESSAGE_HOLD_BYTES,
      memory,
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
   * `bytes` of the mail door's reused memory, for bytes the mail makes rather than receives (its
   * text page), while they fit the message's share; null otherwise (then a new buffer does). Good
   * until remove(): the store copies what it keeps as it commits. A new buffer of 100 KB lived
   * through the commit, was promoted, and its memory outside the heap counted toward V8's next
   * full collection (docs/bench.md, "Text a finished parser held").
   */
  scratch(bytes: number): Buffer | null {
    const size = HELD_SIZES.findIndex((s) => s >= bytes);
    if (size < 0 || !this.hold(HELD_SIZES[size]!)) return null;
    const buf = this.memory.take(size);
    this.taken.push([size, buf]);
    return buf.subarray(0, bytes);
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
    for (const [size, buf] of this.taken.splice(0)) this.memory.give(size, buf);
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
 * One file of a message, held in memory until it is too big for that (WorkDir.file), then
 * written to its file: what was held first, then the rest as it comes. Once finished, `data()`
 * is the bytes if they were held (null if they went to the file) and `bytes` their count.
 */
export class HeldFile extends Writable {
  /** What is held: the first `held` bytes of `buf`, of HELD_SIZES[size]. */
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
   * view of memory that is reused once the message's WorkDir is removed: whoever takes them is
   * done with them by then (the store copies them, also for its intake thread, as it commits).
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

  /** The message is done (WorkDir.remove): its memory is given back, nothing may read or write it after. */
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
    if (!this.out && this.keep(chunk)) {
      done();
      return;
    }
    if (this.out) this.put(chunk, done);
    else this.spill().then(() => this.put(chunk, done), done);
  }

  /** Copies `chunk` in; false (nothing kept) when the file or the message may not hold that much more. */
  private keep(chunk: Buffer): boolean {
    const need = this.held + chunk.length;
    if (need > SMALL_DOCUMENT_BYTES) return false;
    if (!this.buf || need > this.buf.length) {
      const size = HELD_SIZES.findIndex((s) => s >= need);
      if (!this.dir.hold(HELD_SIZES[size]! - (this.buf?.length ?? 0))) return false;
      const bigger = this.dir.memory.take(size);
      if (this.buf) {
        this.buf.copy(bigger, 0, 0, this.held);
        this.dir.memory.give(this.size, this.buf);
      }
      this.buf = bigger;
      this.size = size;
    }
    chunk.copy(this.buf, this.held);
    this.held = need;
    return true;
  }

  private giveBack(): void {
    if (!this.buf) return;
    this.dir.release(this.buf.length);
    this.dir.memory.give(this.size, this.buf);
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
      if (!err) this.dir.memory.give(size, buf);
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
 * What the message's bytes pass through on their way to its file: counted, cut at the
 * size limit (the rest is drained and dropped: the client hears 552 at the end), and fed to a
 * second reader (`tap`, the MIME parser) as they pass. The tap's own trouble is its reader's to
 * report (it rejects its own result): here it only stops being fed, never stops the kept copy.
 */
class Keeper extends Transform {
  bytes = 0;
  total = 0;
  private tapOpen: boolean;

  constructor(
    private readonly maxBytes: number,
    private readonly tap?: Writable,
  ) {
    super();
    this.tapOpen = tap !== undefined;
    const closeTap = (): void => {
      this.tapOpen = false;
    };
    tap?.on("error", closeTap).once("close", closeTap);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.total += chunk.length;
    if (this.bytes >= this.maxBytes) {
      // past the limit the message is refused: its reader has nothing more to do
      this.stopTap();
      done();
      return;
    }
    const keep = chunk.length + this.bytes > this.maxBytes ? chunk.subarray(0, this.maxBytes - this.bytes) : chunk;
    this.bytes += keep.length;
    const tap = this.tap;
    if (!this.tapOpen || !tap || tap.destroyed || tap.write(keep)) {
      done(null, keep);
      return;
    }
    // the reader is behind: wait for it (backpressure reaches the client's socket), or for its end
    const go = (): void => {
      tap.off("drain", go).off("close", go).off("error", go);
      done(null, keep);
    };
    tap.on("drain", go).on("close", go).on("error", go);
  }

  override _flush(done: TransformCallback): void {
    if (this.tapOpen) this.tap!.end();
    done();
  }

  stopTap(): void {
    if (this.tapOpen) this.tap!.destroy();
    this.tapOpen = false;
  }
}

/** The message from `stream`, kept in `dir` as message.eml (held in memory while it is small). */
export async function writeIncoming(
  stream: Readable,
  dir: WorkDir,
  maxBytes: number,
  tap?: Writable,
): Promise<IncomingFile> {
  const keeper = new Keeper(maxBytes, tap);
  // A file it becomes is not fsynced here: the store fsyncs it together with the job's other new
  // files and folders (one wait for the disk, not one more before theirs), or reads it into
  // PostgreSQL.
  const out = dir.file("message.eml", false);
  try {
    await pipeChain(stream, keeper, out);
  } catch (err) {
    keeper.stopTap();
    throw err;
  }
  const exceeded = keeper.total > maxBytes || (stream as Readable & { sizeExceeded?: boolean }).sizeExceeded === true;
  return { path: out.path, data: out.data(), bytes: keeper.bytes, sizeExceeded: exceeded };
}
