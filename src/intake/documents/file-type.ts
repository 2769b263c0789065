// What a document really is, from its first bytes (a ".pdf" that is a zip is not a PDF).
// Shared by the CLI, SMTP intake and the spool so they agree on what can be faxed.
import { open } from "node:fs/promises";
import path from "node:path";

export interface FileType {
  contentType: string;
  /** the fax service accepts it */
  faxable: boolean;
  reason?: string;
}

const MAGIC: Array<[RegExp | ((b: Buffer) => boolean), string]> = [
  [(b) => b.subarray(0, 1024).includes("%PDF-"), "application/pdf"],
  [(b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), "image/png"],
  [(b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff, "image/jpeg"],
  [
    (b) =>
      b.subarray(0, 4).equals(Buffer.from("II*\0", "latin1")) ||
      b.subarray(0, 4).equals(Buffer.from("MM\0*", "latin1")),
    "image/tiff",
  ],
  [(b) => b.subarray(0, 4).equals(Buffer.from("PK\x03\x04", "latin1")), "application/zip"],
  [
    (b) => b.subarray(0, 8).equals(Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1])),
    "application/x-ole-storage",
  ],
  [(b) => b.subarray(0, 5).toString("latin1") === "{\\rtf", "application/rtf"],
  [(b) => b.subarray(0, 3).equals(Buffer.from([0x1f, 0x8b, 0x08])), "application/gzip"],
  [
    (b) => b.subarray(0, 6).toString("latin1") === "GIF87a" || b.subarray(0, 6).toString("latin1") === "GIF89a",
    "image/gif",
  ],
];

/** Types the fax service takes, by content. */
export const FAXABLE_TYPES = new Set(["application/pdf", "image/tiff", "image/png", "image/jpeg", "text/plain"]);

/** True when the bytes look like text a person wrote: UTF-8 (or Latin-1) without control junk. */
export function looksLikeText(b: Buffer): boolean {
  if (b.length === 0) return false;
  if (b.includes(0)) return false;
  let control = 0;
  for (const c of b) if (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0c) control += 1;
  return control / b.length < 0.01;
}

export function sniffBuffer(head: Buffer): string | null {
  for (const [test, type] of MAGIC) {
    if (typeof test === "function" ? test(head) : test.test(head.toString("latin1"))) return type;
  }
  return looksLikeText(head) ? "text/plain" : null;
}

/** How many first bytes of a file tell its type. */
export const HEAD_BYTES = 4096;

/**
 * The first HEAD_BYTES of a file as it is written, copied into one array of their own (a slice
 * would keep a whole chunk alive). A copy a chunk, joined and copied again element by element at
 * the end, was three allocations and 10 us a part on the main thread (issue 54, docs/bench.md).
 */
export class Head {
  private readonly buf = new Uint8Array(HEAD_BYTES);
  private n = 0;

  add(c: Uint8Array): void {
    if (this.n >= HEAD_BYTES) return;
    const take = c.subarray(0, HEAD_BYTES - this.n);
    this.buf.set(take, this.n);
    this.n += take.length;
  }

  /** A plain Uint8Array, as it arrives from a reader thread. */
  bytes(): Uint8Array {
    return this.n === HEAD_BYTES ? this.buf : this.buf.slice(0, this.n);
  }
}

/** The first bytes of a file, enough to tell its type. */
export async function readHead(file: string, bytes = HEAD_BYTES): Promise<Buffer> {
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/**
 * A part's first bytes: those its parser kept while writing it (a Uint8Array once it has crossed
 * from a reader thread), else read from the file.
 */
export async function headOf(part: { path: string; head?: Uint8Array }): Promise<Buffer> {
  return part.head ? Buffer.from(part.head.buffer, part.head.byteOffset, part.head.byteLength) : readHead(part.path);
}

export async function sniffFileType(file: string): Promise<FileType> {
  const head = await readHead(file);
  if (head.length === 0)
    return { contentType: "application/octet-stream", faxable: false, reason: "the file is empty" };
  const type = sniffBuffer(head);
  if (type && FAXABLE_TYPES.has(type)) return { contentType: type, faxable: true };
  const ext = path.extname(file).toLowerCase() || "(no extension)";
  return {
    contentType: type ?? "application/octet-stream",
    faxable: false,
    reason: `${ext} files of type ${type ?? "unknown"} cannot be faxed (PDF, TIFF, PNG, JPEG or plain text only)`,
  };
}
