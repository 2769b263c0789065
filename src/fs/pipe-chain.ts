// stream.pipeline without its per-call AbortController: Node 20's pipeline makes one for every
// call and aborts it when the call ends, which builds a DOMException with its stack; a mail runs
// two or three pipelines on the main thread (docs/bench.md, "stream.pipeline's AbortController off
// the mail path", issue 54).
// pump (mafintosh) has no controller but destroys without the error, closes fs streams instead
// of destroying them, and reports a premature close without ERR_STREAM_PREMATURE_CLOSE, so this is
// pipeline's contract on .pipe() and stream.finished (both public): every stream destroyed with the
// first error of any of them (a real error wins over a premature close, as in pipeline), settled
// once every stream has ended or closed, and the listeners it added taken off then.
import { finished, type Duplex, type Readable, type Writable } from "node:stream";

/** The last step as a function: reads the stream before it (as pipeline's async consumer). */
export type ChainConsumer = (source: AsyncIterable<unknown>) => Promise<unknown>;

const PREMATURE = "ERR_STREAM_PREMATURE_CLOSE";

/** Pipes source through each stream into the last; resolves when all have finished, else rejects with the first error. */
export function pipeChain(...steps: [Readable, ...Duplex[], Writable | ChainConsumer]): Promise<void> {
  const last = steps[steps.length - 1];
  const consumer = typeof last === "function" ? last : null;
  const streams = (consumer ? steps.slice(0, -1) : steps) as Array<Readable & Writable>;
  return new Promise<void>((resolve, reject) => {
    let error: unknown;
    let pending = streams.length + (consumer ? 1 : 0);
    const open = streams.map(() => true);
    const cleanups: Array<() => void> = [];
    const report = (i: number, err?: unknown): void => {
      if (i >= 0) open[i] = false;
      if (err && (!error || (error as { code?: unknown }).code === PREMATURE)) error = err;
      if (error)
        for (let j = 0; j < streams.length; j++)
          if (open[j] && !streams[j]!.destroyed) streams[j]!.destroy(error as Error);
      if (--pending > 0) return;
      // A stream that emitted 'error' itself without being destroyed (mailparser does) may emit
      // again: its listeners stay, as pipeline's do, so that a late error is not an uncaught one.
      for (let j = 0; j < streams.length; j++) if (streams[j]!.destroyed) cleanups[j]!();
      if (error) reject(error);
      else resolve();
    };
    const n = streams.length;
    for (let i = 0; i < n; i++) {
      // the first stream is watched as a reader, the last (unless a consumer follows) as a writer
      const opts = { readable: i < n - 1 || consumer !== null, writable: i > 0 };
      cleanups.push(finished(streams[i]!, opts, (err) => report(i, err)));
    }
    for (let i = 0; i < n - 1; i++) streams[i]!.pipe(streams[i + 1]!);
    if (consumer) {
      let ran: Promise<unknown>;
      try {
        ran = consumer(streams[n - 1]!);
      } catch (err) {
        ran = Promise.reject(err);
      }
      ran.then(
        () => report(-1),
        (err: unknown) => report(-1, err),
      );
    }
  });
}
