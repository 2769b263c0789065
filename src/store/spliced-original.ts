// A mail's original kept without the base64 of the attachments the same job stores as documents
// (issue 54, docs/bench.md "A mail's attachment kept once"). A 100 KB PDF mail
// otherwise keeps its PDF twice, once as the document and once as 136 KB of base64 lines in the
// raw mail, and every byte kept is written to the WAL and again by the checkpoint. A run of
// lines is taken out only when encoding the stored document again, at the line length and line
// break found there, gives exactly the bytes it replaces; every read of the original puts the
// same bytes back, so the original stays the mail as received, byte for byte. Both backends
// (the document and the original live and die with their job's row).
import path from "node:path";
import { FaxgateError } from "../errors.js";

/** A run of base64 lines taken out of an original: where it was, and the document it encodes. */
export interface SplicedPart {
  /** offset in the whole original */
  at: number;
  /** the document's file, a row of the same job */
  file: string;
  /** characters a line (the last one may be shorter) */
  line: number;
  crlf: boolean;
}

/**
 * The name of the row an original's kept bytes are stored under: its own with this added, so a
 * release that does not know `spliced` (a gateway not yet upgraded) finds no row and fails,
 * instead of handing out the kept bytes as the original.
 */
const KEPT_SUFFIX = ".spliced";

/** The row (its file name) that holds a stored document's bytes, or an original's kept bytes. */
export const storedFile = (doc: { path: string; spliced?: readonly SplicedPart[] }): string =>
  path.basename(doc.path) + (doc.spliced ? KEPT_SUFFIX : "");

/** Documents smaller than this are left in the original: not worth a second read of it. */
const SMALLEST = 4096;
/** Base64 characters looked for first: 30 bytes, shorter than any line length encoders use (64, 72, 76). */
const NEEDLE_BYTES = 30;
/** Places a needle is tried at, for one document, before it is left in. */
const TRIES = 4;
/**
 * Base64 characters a piece of the work takes (a multiple of 4): a string of a piece stays far
 * under V8's large-object size (a 136 KB string costs about 180 us to make, most of it the allocation).
 */
const PIECE_CHARS = 32_768;
const [CR, LF, EQ, DASH, UNDERSCORE] = [0x0d, 0x0a, 0x3d, 0x2d, 0x5f];

/** Base64 characters for `bytes` bytes, padding included. */
const base64Chars = (bytes: number): number => 4 * Math.ceil(bytes / 3);

/** Bytes of a document in base64 lines (no break after the last). */
function encodedLength(bytes: number, line: number, crlf: boolean): number {
  const chars = base64Chars(bytes);
  return chars + (Math.ceil(chars / line) - 1) * (crlf ? 2 : 1);
}

/** `data` in base64 lines of `line` characters (a multiple of 4), as an encoder writes them. */
export function base64Lines(data: Uint8Array, line: number, crlf: boolean): Buffer {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out = Buffer.allocUnsafe(encodedLength(bytes.length, line, crlf));
  let o = 0;
  let col = 0;
  for (let from = 0; from < bytes.length; from += (PIECE_CHARS / 4) * 3) {
    const piece = bytes.subarray(from, from + (PIECE_CHARS / 4) * 3).toString("base64");
    for (let c = 0; c < piece.length; ) {
      if (col === line) {
        if (crlf) out[o++] = CR;
        out[o++] = LF;
        col = 0;
      }
      const take = Math.min(line - col, piece.length - c);
      o += out.write(take === piece.length ? piece : piece.slice(c, c + take), o, "latin1");
      c += take;
      col += take;
    }
  }
  return out;
}

/**
 * The original without the runs of base64 that encode `documents` exactly, and where they were;
 * null when there is none (the original is kept whole).
 */
export function spliceOut(
  original: Uint8Array,
  documents: ReadonlyArray<{ file: string; data: Uint8Array }>,
): { kept: Buffer; parts: SplicedPart[] } | null {
  const raw = Buffer.from(original.buffer, original.byteOffset, original.byteLength);
  const runs: Array<SplicedPart & { end: number }> = [];
  for (const d of documents) {
    if (d.data.length < SMALLEST) continue;
    const run = findRun(raw, d, runs);
    if (run) runs.push(run);
  }
  if (runs.length === 0) return null;
  runs.sort((a, b) => a.at - b.at);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const r of runs) {
    pieces.push(raw.subarray(from, r.at));
    from = r.end;
  }
  pieces.push(raw.subarray(from));
  return { kept: Buffer.concat(pieces), parts: runs.map(({ end: _, ...part }) => part) };
}

function findRun(
  raw: Buffer,
  d: { file: string; data: Uint8Array },
  taken: ReadonlyArray<{ at: number; end: number }>,
): (SplicedPart & { end: number }) | null {
  const doc = Buffer.from(d.data.buffer, d.data.byteOffset, d.data.byteLength);
  const needle = Buffer.from(doc.subarray(0, NEEDLE_BYTES).toString("base64"), "latin1");
  const chars = base64Chars(doc.length);
  for (let at = raw.indexOf(needle), tries = 0; at >= 0 && tries < TRIES; at = raw.indexOf(needle, at + 1), tries++) {
    const lf = raw.indexOf(LF, at);
    const crlf = lf > at && raw[lf - 1] === CR;
    // no line break inside the run: one line as long as the whole
    const line = lf < 0 || lf - at > chars ? chars : lf - at - (crlf ? 1 : 0);
    // a quartet split by a line break is left alone (no encoder writes one)
    if (line < needle.length || line % 4 !== 0) continue;
    const end = at + encodedLength(doc.length, line, crlf);
    if (end > raw.length || taken.some((t) => at < t.end && t.at < end)) continue;
    if (encodes(raw, at, end, doc, line, crlf)) return { at, file: d.file, line, crlf, end };
  }
  return null;
}

/**
 * Whether raw[at, end) is exactly `doc` as base64Lines writes it. Checked by decoding, which is
 * cheaper than encoding: line breaks where the encoder puts them and nowhere else, the padding
 * as the encoder writes it, no base64url letters, then the decoded bytes equal to the document.
 * Node's decoder skips any other byte and stops at "=", so a byte that is not a letter leaves the
 * decoded bytes short (the run's length is fixed by the document's); with the letters of the
 * standard alphabet only, each quartet is the only one for its three bytes, but for the last
 * quartet's unused bits, which are compared as encoded.
 */
function encodes(raw: Buffer, at: number, end: number, doc: Buffer, line: number, crlf: boolean): boolean {
  const eol = crlf ? 2 : 1;
  const step = line + eol;
  for (let b = at + line; b < end; b += step) if (raw[b + eol - 1] !== LF || (crlf && raw[b] !== CR)) return false;
  const pad = (3 - (doc.length % 3)) % 3;
  const eq = raw.indexOf(EQ, at);
  if (pad === 0 ? eq >= 0 && eq < end : eq !== end - pad || (pad === 2 && raw[end - 1] !== EQ)) return false;
  for (const url of [DASH, UNDERSCORE]) {
    const i = raw.indexOf(url, at);
    if (i >= 0 && i < end) return false;
  }
  const tail = doc.subarray(doc.length - (doc.length % 3 || 3)).toString("base64");
  if (raw.toString("latin1", end - 4, end) !== tail) return false;
  // decoded a piece at a time (a piece ends on a quartet; the line breaks in it are skipped)
  const scratch = pieceBuffer((PIECE_CHARS / 4) * 3);
  const chars = base64Chars(doc.length);
  const offset = (c: number): number => at + c + Math.floor(c / line) * eol;
  let o = 0;
  for (let c = 0; c < chars; c += PIECE_CHARS) {
    const piece = raw.toString("latin1", offset(c), c + PIECE_CHARS >= chars ? end : offset(c + PIECE_CHARS));
    const n = scratch.write(piece, 0, "base64");
    if (o + n > doc.length || doc.compare(scratch, 0, n, o, o + n) !== 0) return false;
    o += n;
  }
  return o === doc.length;
}

let scratchBytes: Buffer | null = null;
/** One buffer the pieces decode into, kept (each thread checks one run at a time). */
function pieceBuffer(bytes: number): Buffer {
  if (!scratchBytes || scratchBytes.length < bytes) scratchBytes = Buffer.allocUnsafeSlow(bytes);
  return scratchBytes;
}

/**
 * A stored document's bytes, read with `readRow` (a row of its job, by file name): an original
 * kept without its documents' base64 is put back together. A null from `readRow` for the
 * document's own row (a store that keeps it as a file instead) is handed back as it is.
 */
export async function readWhole<B extends Buffer | null>(
  doc: { path: string; bytes: number; spliced?: readonly SplicedPart[] },
  readRow: (file: string) => Promise<B>,
): Promise<B> {
  const kept = await readRow(storedFile(doc));
  if (!kept || !doc.spliced) return kept;
  const whole = await spliceIn(kept, doc.spliced, doc.bytes, async (file) => {
    const data = await readRow(file);
    if (!data)
      throw new FaxgateError("STORE_UNAVAILABLE", `a stored original's document ${JSON.stringify(file)} is missing`);
    return data;
  });
  return whole as B;
}

/**
 * The whole original again (`bytes` long): `kept` with each part's document encoded back where
 * it was. Throws when they do not fit together, rather than hand out other bytes as the original.
 */
export async function spliceIn(
  kept: Buffer,
  parts: readonly SplicedPart[],
  bytes: number,
  dataOf: (file: string) => Promise<Buffer>,
): Promise<Buffer> {
  const docs = await Promise.all(parts.map((p) => dataOf(p.file)));
  const out = Buffer.allocUnsafe(bytes);
  let k = 0;
  let o = 0;
  for (let i = 0; i < parts.length; i++) {
    const gap = parts[i]!.at - o;
    const run = base64Lines(docs[i]!, parts[i]!.line, parts[i]!.crlf);
    if (gap < 0 || k + gap > kept.length || o + gap + run.length > bytes) throw unfit();
    o += kept.copy(out, o, k, k + gap);
    k += gap;
    o += run.copy(out, o);
  }
  if (o + kept.length - k !== bytes) throw unfit();
  kept.copy(out, o, k);
  return out;
}

const unfit = (): FaxgateError =>
  new FaxgateError("STORE_UNAVAILABLE", "a stored original cannot be put back together: its parts do not fit");
