// patches/libbase64+plain-decode.patch (line breaks taken out with replaceAll, a chunk of plain
// base64 letters decoded without a regular expression over it) against libbase64's own code, the
// installed file with that patch undone: random base64 bodies (random line lengths, CRLF, LF and
// lone CR, stray bytes of every value, base64url letters, padding at the end, in the middle and
// misplaced) cut into random chunks, 1-byte chunks and cuts around every line break, must give
// exactly the same decoded chunks and byte counts. The ESM build is held to the same. The byte
// path of the same patch (a chunk counted and decoded where it is, issue 54) is the one bodies as
// an encoder writes them take: those are checked the same way, and seen to take it.
import type { Transform } from "node:stream";
import { describe, expect, it } from "vitest";
import { prng } from "../helpers/prng.js";
import { importInstalled, loadInstalled, loadUnpatched } from "../helpers/unpatched.js";

type DecoderClass = new () => Transform & { inputBytes: number; outputBytes: number };
type ByteDecoder = { _decodeBytes(chunk: Buffer): boolean };

const PATCH = "libbase64+plain-decode.patch";
const upstream = loadUnpatched<{ Decoder: DecoderClass }>("libbase64", "dist/cjs/libbase64.js", PATCH).Decoder;
const patched = loadInstalled<{ Decoder: DecoderClass }>("libbase64", "dist/cjs/libbase64.js").Decoder;
const patchedEsm = (await importInstalled<{ Decoder: DecoderClass }>("libbase64", "dist/esm/libbase64.js")).Decoder;

/**
 * How many chunks the patched decoder offered its byte path while `counting` was on, and how many
 * it took there: its own method wrapped on the patched class, for one test only (`restore`).
 */
function byteDecodes(): { offered: number; taken: number; counting: boolean; restore(): void } {
  const proto = patched.prototype as unknown as ByteDecoder;
  const own = proto._decodeBytes;
  const tally = {
    offered: 0,
    taken: 0,
    counting: false,
    restore: () => {
      proto._decodeBytes = own;
    },
  };
  proto._decodeBytes = function (this: ByteDecoder, chunk: Buffer) {
    const ok = own.call(this, chunk);
    if (tally.counting) {
      tally.offered += 1;
      if (ok) tally.taken += 1;
    }
    return ok;
  };
  return tally;
}

/** Every chunk the decoder hands out, in order, then its byte counts. */
async function decode(Decoder: DecoderClass, chunks: Buffer[]): Promise<string[]> {
  const decoder = new Decoder();
  const out: string[] = [];
  decoder.on("data", (d: Buffer) => out.push(d.toString("hex")));
  const over = new Promise<void>((resolve, reject) => {
    decoder.on("end", resolve);
    decoder.on("error", reject);
  });
  for (const c of chunks) decoder.write(c);
  decoder.end();
  await over;
  out.push(`in ${decoder.inputBytes} out ${decoder.outputBytes}`);
  return out;
}

function randomBody(next: () => number): Buffer {
  const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!;
  const eol = pick(["\r\n", "\r\n", "\n", "mixed"]);
  const lineEnd = () => (eol === "mixed" ? pick(["\r\n", "\n", "\r", "\r\r\n", "\n\n"]) : eol);
  const segments = next() < 0.7 ? 1 : 1 + Math.floor(next() * 4);
  let text = "";
  for (let s = 0; s < segments; s++) {
    const size = next() < 0.2 ? Math.floor(next() * 8) : Math.floor(next() * (next() < 0.5 ? 300 : 80_000));
    const bytes = Buffer.alloc(size);
    for (let k = 0; k < size; k++) bytes[k] = Math.floor(next() * 256);
    let b64 = bytes.toString("base64");
    // padding cut short or doubled, or a segment with none, now and then
    if (next() < 0.1) b64 = b64.replace(/=+$/, pick(["", "=", "==", "==="]));
    text += b64;
  }
  const lineLength = pick([76, 76, 64, 72, 1 + Math.floor(next() * 120)]);
  const lines: string[] = [];
  for (let at = 0; at < text.length; at += lineLength) lines.push(text.slice(at, at + lineLength));
  const chars = [...lines.join("\u0000")].map((c) => (c === "\u0000" ? lineEnd() : c)).join("") + lineEnd();
  const out = Buffer.from(chars, "latin1");
  // stray bytes of any value (base64url letters, spaces, 8-bit bytes, NUL) in some bodies
  if (next() < 0.4) {
    const strays = Math.floor(next() * 5);
    for (let k = 0; k < strays && out.length; k++) {
      out[Math.floor(next() * out.length)] = pick([0x2d, 0x5f, 0x20, 0x09, 0x0d, 0x3d, 0x00, 0xff, 0x80]) as number;
    }
    if (next() < 0.3 && out.length) out[Math.floor(next() * out.length)] = Math.floor(next() * 256);
  }
  return out;
}

function chunkings(input: Buffer, next: () => number): Buffer[][] {
  const random: Buffer[] = [];
  for (let at = 0; at < input.length; ) {
    const size = 1 + Math.floor(next() * (next() < 0.3 ? 8 : next() < 0.5 ? 500 : 70_000));
    random.push(input.subarray(at, at + size));
    at += size;
  }
  // cut right before, inside and after line breaks
  const atBreaks: Buffer[] = [];
  let from = 0;
  for (let k = 0; k < input.length; k++) {
    if ((input[k] === 0x0a || input[k] === 0x0d) && next() < 0.3) {
      const cut = k + Math.floor(next() * 2);
      atBreaks.push(input.subarray(from, cut));
      from = cut;
    }
  }
  atBreaks.push(input.subarray(from));
  const out = [[input], random, atBreaks];
  if (input.length < 3000) out.push(Array.from({ length: input.length }, (_, k) => input.subarray(k, k + 1)));
  return out;
}

describe("libbase64's Decoder, patched against upstream", () => {
  it("decodes random bodies in random chunkings as upstream does", async () => {
    const seed = Number(process.env.FAXGATE_FUZZ_SEED ?? Date.now() % 100_000);
    const next = prng(seed);
    for (let round = 0; round < 300; round++) {
      const input = randomBody(next);
      for (const chunks of chunkings(input, next)) {
        const context = `seed ${seed}, round ${round}, ${chunks.length} chunks of ${input.length} bytes`;
        const expected = await decode(upstream, chunks);
        expect(await decode(patched, chunks), context).toEqual(expected);
        expect(await decode(patchedEsm, chunks), `${context} (ESM)`).toEqual(expected);
      }
    }
  });

  it("decodes bodies as an encoder writes them on the byte path, as upstream does", async () => {
    const seed = Number(process.env.FAXGATE_FUZZ_SEED ?? Date.now() % 100_000);
    const next = prng(seed);
    const bytePath = byteDecodes();
    try {
      for (let round = 0; round < 200; round++) {
        const size = next() < 0.2 ? Math.floor(next() * 10) : Math.floor(next() * 120_000);
        const bytes = Buffer.alloc(size);
        for (let k = 0; k < size; k++) bytes[k] = Math.floor(next() * 256);
        const b64 = bytes.toString("base64");
        const width = [76, 76, 64, 4, 1 + Math.floor(next() * 100)][Math.floor(next() * 5)]!;
        const eol = next() < 0.7 ? "\r\n" : "\n";
        const lines: string[] = [];
        for (let at = 0; at < b64.length; at += width) lines.push(b64.slice(at, at + width));
        const input = Buffer.from(lines.join(eol) + (next() < 0.5 ? eol : ""), "latin1");
        for (const chunks of chunkings(input, next)) {
          const context = `seed ${seed}, round ${round}, ${chunks.length} chunks of ${input.length} bytes`;
          const expected = await decode(upstream, chunks);
          // a body in one chunk takes the byte path, unless it has no letters or a line break
          // parts its padding (cut ones may not: a 1-byte chunk has no whole quartet)
          bytePath.counting = chunks.length === 1 && size > 0 && !/=\r?\n=/.test(input.toString("latin1"));
          expect(await decode(patched, chunks), context).toEqual(expected);
          bytePath.counting = false;
          expect(await decode(patchedEsm, chunks), `${context} (ESM)`).toEqual(expected);
        }
      }
    } finally {
      bytePath.restore();
    }
    expect(bytePath.offered).toBeGreaterThan(100);
    expect(bytePath.taken, `seed ${seed}`).toBe(bytePath.offered);
  });

  it("never cuts the output of lines of one length with mixed breaks, stray bytes and lone CRs", async () => {
    // The byte path writes at most the bytes its count of letters promises, so a line break
    // counted that is not one (a line feed's CR taken from the first line, a stray byte or a lone
    // CR before a line feed) would cut the output silently. Lines here are one length apart
    // (letters then CR LF, or one letter more then LF), as the byte path wants them.
    const seed = Number(process.env.FAXGATE_FUZZ_SEED ?? Date.now() % 100_000);
    const next = prng(seed);
    const bytePath = byteDecodes();
    try {
      for (let round = 0; round < 150; round++) {
        const size = 1 + Math.floor(next() * (next() < 0.5 ? 200 : 20_000));
        const bytes = Buffer.alloc(size);
        for (let k = 0; k < size; k++) bytes[k] = Math.floor(next() * 256);
        const b64 = bytes.toString("base64");
        const width = 2 + Math.floor(next() * 90);
        const crlfShare = next();
        let text = "";
        for (let at = 0; at < b64.length; ) {
          const crlf = next() < crlfShare;
          const line = b64.slice(at, at + (crlf ? width : width + 1));
          at += line.length;
          text += line + (at < b64.length || next() < 0.5 ? (crlf ? "\r\n" : "\n") : "");
        }
        const clean = Buffer.from(text, "latin1");
        // the same lines with bytes in place of letters: a space, NUL, 8-bit, "." or a lone CR
        const stray = Buffer.from(clean);
        for (let k = 1 + Math.floor(next() * 4); k > 0; k--) {
          const at = Math.floor(next() * stray.length);
          if (stray[at] === 0x0a || stray[at] === 0x0d || stray[at] === 0x3d) continue;
          stray[at] = [0x20, 0x00, 0xff, 0x2e, 0x0d][Math.floor(next() * 5)]!;
        }
        for (const input of [clean, stray]) {
          for (const chunks of chunkings(input, next)) {
            const context = `seed ${seed}, round ${round}, ${chunks.length} chunks of ${input.length} bytes`;
            const expected = await decode(upstream, chunks);
            bytePath.counting = input === clean && chunks.length === 1 && !/=\r?\n=/.test(text);
            expect(await decode(patched, chunks), context).toEqual(expected);
            bytePath.counting = false;
            expect(await decode(patchedEsm, chunks), `${context} (ESM)`).toEqual(expected);
            if (input === clean) expect(expected.slice(0, -1).join(""), context).toBe(bytes.toString("hex"));
          }
        }
      }
    } finally {
      bytePath.restore();
    }
    expect(bytePath.offered).toBeGreaterThan(100);
    expect(bytePath.taken, `seed ${seed}`).toBe(bytePath.offered);
  });

  it("treats every byte value as upstream does, at every place in a quartet", async () => {
    const body = Buffer.from("QUJDREVGR0hJSktM\r\nTU5PUFFSU1RVVldY\r\nWVo=\r\n", "latin1");
    for (let value = 0; value < 256; value++) {
      for (let at = 0; at <= body.length; at++) {
        const input = Buffer.concat([body.subarray(0, at), Buffer.from([value]), body.subarray(at)]);
        for (const chunks of [
          [input],
          [input.subarray(0, 7), input.subarray(7)],
          [input.subarray(0, 20), input.subarray(20)],
        ]) {
          const expected = await decode(upstream, chunks);
          expect(await decode(patched, chunks), `byte ${value} at ${at}`).toEqual(expected);
        }
      }
    }
  });
});
