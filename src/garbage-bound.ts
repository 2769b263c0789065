// Mail streamed through the receiver leaves Buffers that are garbage a moment later: the socket's
// chunks, smtp-server's copy of each chunk, the MIME splitter's pieces, the base64 decoder's
// output. V8 frees a Buffer's memory only when a full collection finds it dead (they live long
// enough in the streams to leave the young generation), and left to itself it runs one for them
// only once they have grown by about 64 MB since the last. Measured on the built daemon, 20 mails
// of 25 MB at once (before mail-parse.ts held mailparser's streams to a chunk): Buffers peaked at
// 101 MB, of which at most 38 MB were alive at any moment, and the process grew by 0.21 of the
// mail. So the receiver reports the bytes it takes in, and every few megabytes this looks at what
// the Buffers hold: more than `budgetBytes` over what was alive after the last collection, and a
// full collection runs now. What stays resident is then about the live streaming buffers plus the
// budget, whatever the mail's size.
//
// Only a message past FROM_MESSAGE_BYTES counts, one that streams to files: small mails' Buffers
// mostly die young and V8's own collections keep pace with them. Counting those too, under
// smtp-source (20 sessions, 100 KB mails) the bound forced a full collection every 500 to 700
// mails, each marking the whole heap on the main thread and V8's helper threads, and the receiver
// spent 0.2 ms more CPU a mail and accepted 8 to 15% fewer (docs/bench.md).
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SMALL_DOCUMENT_BYTES } from './store/types.js';

export interface GarbageBoundOptions {
  /** Garbage allowed over the last collection's live Buffers before collecting (default DEFAULT_BUDGET_BYTES). */
  budgetBytes?: number;
  /** How often the Buffers' memory is looked at, in bytes taken in (default 2 MB). */
  checkEveryBytes?: number;
  /** A message's bytes count once it has taken in more than this (default FROM_MESSAGE_BYTES). */
  fromMessageBytes?: number;
  /** Bytes held by Buffers and ArrayBuffers now (default: process.memoryUsage().arrayBuffers). */
  bufferBytes?: () => number;
  /** A full collection (default: V8's gc, see fullCollection()); null: this does nothing. */
  collect?: (() => void) | null;
}

/**
 * 16 MB, from the figures in docs/bench.md ("The memory row: mailparser's buffering and a garbage
 * bound"): a full collection stops the main thread for about 45 ms. At 16 MB the 20 x 25 MB burst
 * grows the daemon by 0.08 to 0.09 of the mail instead of 0.13 to 0.15 (with mailparser's streams
 * held to a chunk, mail-parse.ts), for a tenth to a third more time, and 2,000 mails of 100 KB see
 * 3 collections. Smaller budgets were measured before that change: at 4 MB small mail was accepted
 * a fifth slower (63 collections).
 */
export const DEFAULT_BUDGET_BYTES = 16 * 1024 * 1024;
/** A message bigger than intake holds in memory (incoming-file.ts): its bytes count, a smaller one's do not. */
export const FROM_MESSAGE_BYTES = SMALL_DOCUMENT_BYTES;

export class GarbageBound {
  private readonly budget: number;
  private readonly every: number;
  private readonly from: number;
  private readonly bufferBytes: () => number;
  private readonly collect: (() => void) | null;
  private sinceCheck = 0;
  /** what the Buffers held right after the last collection (alive then) */
  private floor: number;
  /** collections run so far (for the tests) */
  collections = 0;

  constructor(opts: GarbageBoundOptions = {}) {
    this.budget = opts.budgetBytes ?? DEFAULT_BUDGET_BYTES;
    this.every = opts.checkEveryBytes ?? 2 * 1024 * 1024;
    this.from = opts.fromMessageBytes ?? FROM_MESSAGE_BYTES;
    this.bufferBytes = opts.bufferBytes ?? (() => process.memoryUsage().arrayBuffers);
    this.collect = opts.collect === undefined ? fullCollection() : opts.collect;
    this.floor = this.collect ? this.bufferBytes() : 0;
  }

  /**
   * `bytes` more were taken in (and will soon be garbage), which make `messageBytes` of their
   * message so far. Bound, so it can be handed on as a callback.
   */
  readonly took = (bytes: number, messageBytes: number): void => {
    if (!this.collect || messageBytes <= this.from) return;
    this.sinceCheck += Math.min(bytes, messageBytes - this.from);
    if (this.sinceCheck < this.every) return;
    this.sinceCheck = 0;
    const now = this.bufferBytes();
    // Fewer Buffers than at the last collection: V8 collected meanwhile, or its sweeper thread had
    // not yet freed all that the last collection found dead when it was looked at; the floor is now.
    if (now < this.floor) this.floor = now;
    if (now - this.floor <= this.budget) return;
    this.collect();
    this.collections += 1;
    this.floor = this.bufferBytes();
  };
}

let collector: (() => void) | null | undefined;

/**
 * V8's full collection, made available without starting node with --expose-gc: the flag set at
 * run time exposes `gc` in contexts created afterwards, and it is taken from one such context, then
 * the flag is unset again. If `gc` is exposed already (node --expose-gc, or the flag set by someone
 * else), that one is taken and the flag left alone. Null if this V8 will not give it.
 * (test/smtp/garbage-bound.test.ts checks that it frees what it should, and that the flag is left
 * as it was found.)
 */
export function fullCollection(): (() => void) | null {
  if (collector !== undefined) return collector;
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === 'function') return (collector = own as () => void);
  const fromNewContext = (): (() => void) | null => runInNewContext('typeof gc === "function" ? gc : null') as (() => void) | null;
  try {
    collector = fromNewContext();
    if (!collector) {
      v8.setFlagsFromString('--expose-gc');
      try {
        collector = fromNewContext();
      } finally {
        v8.setFlagsFromString('--no-expose-gc');
      }
    }
  } catch {
    collector = null;
  }
  return collector;
}
