// patches/@zone-eu__mailsplit+chunks-joined-once.patch (ChunkedPassthrough keeps the chunks it
// holds in a list and joins them once) against mailsplit's own code, the installed file with that
// patch undone: random inputs cut at random (empty chunks, 1-byte chunks, chunks past the size,
// chunks that end exactly on it), with the default size and small random ones, must come out as
// the same chunks, byte for byte and boundary for boundary. Then the point of it: a chunk that
// alone reaches the size is passed on as it came, not copied.
import type { Transform } from "node:stream";
import { describe, expect, it } from "vitest";
import { fuzzStream } from "../helpers/fuzz.js";
import { feedAndEnd } from "../helpers/feed-stream.js";
import { loadInstalled, loadUnpatched } from "../helpers/unpatched.js";

type PassthroughClass = new (options?: { chunkSize?: number }) => Transform;

const PATCH = "@zone-eu__mailsplit+chunks-joined-once.patch";
const FILE = "lib/chunked-passthrough.js";
const upstream = loadUnpatched<PassthroughClass>("@zone-eu/mailsplit", FILE, PATCH);
const patched = loadInstalled<PassthroughClass>("@zone-eu/mailsplit", FILE);

/** The chunks the stream pushes for `input` written as these chunks. */
async function pass(Stream: PassthroughClass, input: Buffer[], chunkSize?: number): Promise<Buffer[]> {
  const out: Buffer[] = [];
  await feedAndEnd(new Stream(chunkSize ? { chunkSize } : {}), input, (b: Buffer) => out.push(b));
  return out;
}

describe("mailsplit's ChunkedPassthrough, patched against upstream", () => {
  it("pushes the same chunks as upstream for random inputs and cuts", async () => {
    const { seed, next } = fuzzStream();
    for (let round = 0; round < 300; round++) {
      const size = next() < 0.3 ? undefined : 1 + Math.floor(next() * 300);
      const limit = size ?? 64 * 1024;
      const chunks: Buffer[] = [];
      const count = Math.floor(next() * 40);
      for (let k = 0; k < count; k++) {
        const r = next();
        const n =
          r < 0.1
            ? 0
            : r < 0.3
              ? 1
              : r < 0.45
                ? limit
                : r < 0.6
                  ? limit + Math.floor(next() * limit)
                  : Math.floor(next() * limit);
        // (each chunk's own byte value, the first one random: boundaries show in the output)
        const chunk = Buffer.alloc(n, k & 0xff);
        if (n > 0) chunk[0] = Math.floor(next() * 256);
        chunks.push(chunk);
      }
      const a = await pass(upstream, chunks, size);
      const b = await pass(patched, chunks, size);
      const hex = (bs: Buffer[]) => bs.map((x) => x.toString("hex"));
      expect(hex(b), `seed ${seed}, round ${round}, size ${size}, ${chunks.length} chunks`).toEqual(hex(a));
    }
  });

  it("passes a chunk that alone reaches the size as it came, and joins smaller ones once", async () => {
    const big = Buffer.alloc(64 * 1024, 7);
    const [first] = await pass(patched, [big]);
    expect(first).toBe(big);
    const small = [Buffer.alloc(40 * 1024, 1), Buffer.alloc(30 * 1024, 2), Buffer.alloc(10, 3)];
    const out = await pass(patched, small);
    expect(out.map((b) => b.length)).toEqual([70 * 1024, 10]);
    expect(out[1]).toBe(small[2]);
  });
});
