// pipeChain keeps what the mail path relied on from stream.pipeline: each case runs against both,
// with real streams, and must come out the same; the listeners it adds are gone once it settles.
import { PassThrough, Readable, Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, expect, it } from "vitest";
import { pipeChain } from "../../src/fs/index.js";

type Chain = typeof pipeChain;

/** A sink that keeps what it is given; fails its nth write with `failAt.err` when asked. */
function sink(failAt?: { n: number; err: Error }): Writable & { got: Buffer[] } {
  const got: Buffer[] = [];
  let n = 0;
  const w = new Writable({
    write(chunk: Buffer, _enc, cb) {
      if (failAt && ++n === failAt.n) return cb(failAt.err);
      got.push(chunk);
      cb();
    },
  });
  return Object.assign(w, { got });
}

const upper = (): Transform =>
  new Transform({
    transform(chunk: Buffer, _enc, cb) {
      cb(null, Buffer.from(chunk.toString().toUpperCase()));
    },
  });

/** Settles the chain's promise into its outcome, so a test can look at the streams after. */
const outcome = (p: Promise<void>): Promise<unknown> =>
  p.then(
    () => "resolved",
    (err: unknown) => err,
  );

const EVENTS = ["error", "close", "end", "finish", "data", "drain", "unpipe", "prefinish", "readable"];
const listeners = (streams: Array<Readable | Writable>): number[][] =>
  streams.map((s) => EVENTS.map((e) => s.listenerCount(e)));

describe.each([
  ["stream.pipeline", pipeline as unknown as Chain],
  ["pipeChain", pipeChain],
])("%s", (_name, chain) => {
  it("carries every byte through each stream, in order, and resolves once the last has finished", async () => {
    const source = Readable.from(["ab", "cd", "ef"].map((s) => Buffer.from(s)));
    const out = sink();
    await chain(source, upper(), out);
    expect(Buffer.concat(out.got).toString()).toBe("ABCDEF");
    expect(out.writableFinished).toBe(true);
    expect(out.closed).toBe(true);
  });

  it("an error in the first stream destroys the others with it and rejects with it", async () => {
    const source = new PassThrough();
    const mid = upper();
    const out = sink();
    const p = outcome(chain(source, mid, out));
    source.write("part of it");
    const boom = new Error("source broke");
    source.destroy(boom);
    expect(await p).toBe(boom);
    for (const s of [mid, out]) {
      expect(s.destroyed).toBe(true);
      expect(s.errored).toBe(boom);
    }
  });

  it("an error in a middle stream destroys the source and the sink with it", async () => {
    const boom = new Error("transform broke");
    const source = new PassThrough();
    const mid = new Transform({
      transform(_chunk, _enc, cb) {
        cb(boom);
      },
    });
    const out = sink();
    const p = outcome(chain(source, mid, out));
    source.write("x");
    expect(await p).toBe(boom);
    expect(source.destroyed).toBe(true);
    expect(source.errored).toBe(boom);
    expect(out.errored).toBe(boom);
    // settled only once every stream is closed, as pipeline does
    expect(source.closed && mid.closed && out.closed).toBe(true);
  });

  it("an error in the last stream destroys the ones before it, even a source still open", async () => {
    const boom = new Error("disk full");
    const source = new PassThrough();
    const mid = upper();
    const out = sink({ n: 2, err: boom });
    const p = outcome(chain(source, mid, out));
    source.write("one");
    source.write("two");
    expect(await p).toBe(boom);
    expect(source.errored).toBe(boom);
    expect(mid.errored).toBe(boom);
    expect(Buffer.concat(out.got).toString()).toBe("ONE");
  });

  it("a source closed without an error before its end (a client gone mid-DATA) is a premature close", async () => {
    const source = new PassThrough();
    const mid = upper();
    const out = sink();
    const p = outcome(chain(source, mid, out));
    source.write("half a message");
    source.destroy();
    const err = (await p) as NodeJS.ErrnoException;
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe("ERR_STREAM_PREMATURE_CLOSE");
    expect(mid.destroyed && out.destroyed).toBe(true);
    expect(out.writableFinished).toBe(false);
  });

  it("a sink closed before the end is a premature close, and the source is destroyed", async () => {
    const source = new PassThrough();
    const out = sink();
    const p = outcome(chain(source, out));
    source.write("x");
    out.destroy();
    expect(((await p) as NodeJS.ErrnoException).code).toBe("ERR_STREAM_PREMATURE_CLOSE");
    expect(source.destroyed).toBe(true);
  });

  it("an async consumer last reads every object, and the chain resolves after it", async () => {
    const source = Readable.from(["a", "b", "c"]);
    const objects = new Transform({
      readableObjectMode: true,
      transform(chunk: Buffer, _enc, cb) {
        cb(null, { text: chunk.toString() });
      },
    });
    const seen: string[] = [];
    await chain(source, objects, async (items: AsyncIterable<unknown>) => {
      for await (const item of items) seen.push((item as { text: string }).text);
    });
    expect(seen).toEqual(["a", "b", "c"]);
  });

  it("a stream that fails in its consumer's stead rejects the consumer's chain with that error", async () => {
    const source = new PassThrough();
    const objects = new PassThrough({ objectMode: true });
    const boom = new Error("parser broke");
    const p = outcome(
      chain(source, objects, async (items: AsyncIterable<unknown>) => {
        for await (const _ of items);
      }),
    );
    source.write("x");
    objects.destroy(boom);
    expect(await p).toBe(boom);
    expect(source.errored).toBe(boom);
  });
});

// Node 20's pipeline rejects here with an AbortError of its own (the consumer's loop destroys the
// stream it read, and that is reported first); pipeChain gives the consumer's error, which then
// names the reason a message is kept as corrupt.
describe("pipeChain's consumer", () => {
  it("a consumer that throws rejects with its error and destroys the streams before it", async () => {
    const source = new PassThrough();
    const objects = new PassThrough({ objectMode: true });
    const boom = new Error("hostile part");
    const p = outcome(
      pipeChain(source, objects, async (items: AsyncIterable<unknown>) => {
        for await (const _ of items) throw boom;
      }),
    );
    source.write("first");
    expect(await p).toBe(boom);
    expect(source.destroyed).toBe(true);
    expect(objects.destroyed).toBe(true);
  });
});

describe("pipeChain's listeners", () => {
  it("takes off every listener it added, after success", async () => {
    const source = new PassThrough();
    const mid = upper();
    const out = sink();
    const before = listeners([source, mid, out]);
    const p = pipeChain(source, mid, out);
    source.end("all of it");
    await p;
    expect(listeners([source, mid, out])).toEqual(before);
  });

  it("takes off every listener it added, after an error, and leaves no error unhandled", async () => {
    const source = new PassThrough();
    const mid = upper();
    const out = sink({ n: 1, err: new Error("disk full") });
    const before = listeners([source, mid, out]);
    const p = outcome(pipeChain(source, mid, out));
    source.write("x");
    await p;
    // a stream destroyed with an error emits it after a tick: an unhandled one would fail the run
    await new Promise((r) => setImmediate(r));
    expect(listeners([source, mid, out])).toEqual(before);
  });

  it("keeps its watch on a stream that emitted 'error' itself, so a second one is not uncaught", async () => {
    const source = new PassThrough();
    const mid = new PassThrough();
    const out = sink();
    const p = outcome(pipeChain(source, mid, out));
    const boom = new Error("parser broke");
    // as mailparser does: the event, without destroying the stream
    mid.emit("error", boom);
    expect(await p).toBe(boom);
    expect(() => mid.emit("error", new Error("late"))).not.toThrow();
  });

  it("with a consumer, leaves only what the consumer's own loop leaves", async () => {
    const readAll = async (items: AsyncIterable<unknown>): Promise<void> => {
      for await (const _ of items);
    };
    // the same loop over a lone stream: what Node's async iterator itself leaves on it
    const alone = new PassThrough({ objectMode: true });
    alone.end("a");
    await readAll(alone);
    const source = Readable.from(["a", "b"]);
    const objects = new PassThrough({ objectMode: true });
    const before = listeners([source]);
    await pipeChain(source, objects, readAll);
    expect(listeners([source])).toEqual(before);
    expect(listeners([objects])).toEqual(listeners([alone]));
  });
});
