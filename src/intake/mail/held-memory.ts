// Speed machinery for held mail (incoming-file.ts), in a module of its own beside its bench row:
// the buffers a small mail is held in are reused from one message to the next, one set per mail
// door, never shared with another thread (the store copies what it keeps as it commits). Without
// reuse each held file took a new buffer at every size it grew through (16 KB doubling to 256 KB),
// some 0.7 MB a mail with a 100 KB PDF, and V8 counts that memory toward its full collections:
// the daemon bench's "100 KB PDF attachment" row spent 15-18 ms of CPU a mail against 10-14 with
// reuse (docs/bench.md, "The receive path through stream.pipeline", 28 Nov 2026).
import { SMALL_DOCUMENT_BYTES } from "../../store/index.js";

/** The sizes held memory comes in, smallest first: 16 KB doubling up to SMALL_DOCUMENT_BYTES. */
export const HELD_SIZES = [16, 8, 4, 2, 1].map((d) => SMALL_DOCUMENT_BYTES / d);

/** Free buffers kept of each size, 4 MB each at most; past that, given ones are left to the collector. */
const FREE_BYTES_PER_SIZE = 4 * 1024 * 1024;

export class HeldMemory {
  private readonly free: Buffer[][] = HELD_SIZES.map(() => []);

  /** A buffer of HELD_SIZES[size] bytes, reused when one is free. Its bytes are not cleared. */
  take(size: number): Buffer {
    return this.free[size]!.pop() ?? Buffer.allocUnsafeSlow(HELD_SIZES[size]!);
  }

  /** `b` is no longer read or written by anyone: the next message may have it. */
  give(size: number, b: Buffer): void {
    if ((this.free[size]!.length + 1) * HELD_SIZES[size]! <= FREE_BYTES_PER_SIZE) this.free[size]!.push(b);
  }
}
