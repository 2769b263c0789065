// What an uploaded document really is, from its first bytes, as the service would judge it. The
// emulator's own copy (the product has its own sniffing): the two must be free to disagree, as the
// product and the real service can.
import { open } from "node:fs/promises";

const startsWith = (b: Buffer, bytes: number[] | string): boolean =>
  b.subarray(0, bytes.length).equals(typeof bytes === "string" ? Buffer.from(bytes, "latin1") : Buffer.from(bytes));

const MAGIC: Array<[(b: Buffer) => boolean, string]> = [
  [(b) => b.subarray(0, 1024).includes("%PDF-"), "application/pdf"],
  [(b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), "image/png"],
  [(b) => startsWith(b, [0xff, 0xd8, 0xff]), "image/jpeg"],
  [(b) => startsWith(b, "II*\0") || startsWith(b, "MM\0*"), "image/tiff"],
  [(b) => startsWith(b, "PK\x03\x04"), "application/zip"],
  [(b) => startsWith(b, [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]), "application/x-ole-storage"],
  [(b) => startsWith(b, "{\\rtf"), "application/rtf"],
  [(b) => startsWith(b, [0x1f, 0x8b, 0x08]), "application/gzip"],
  [(b) => startsWith(b, "GIF87a") || startsWith(b, "GIF89a"), "image/gif"],
];

/** Types the emulated service takes, by content. */
export const FAXABLE_TYPES = new Set(["application/pdf", "image/tiff", "image/png", "image/jpeg", "text/plain"]);

function looksLikeText(b: Buffer): boolean {
  if (b.length === 0 || b.includes(0)) return false;
  let control = 0;
  for (const c of b) if (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0c) control += 1;
  return control / b.length < 0.01;
}

export function sniffBuffer(head: Buffer): string | null {
  for (const [test, type] of MAGIC) if (test(head)) return type;
  return looksLikeText(head) ? "text/plain" : null;
}

/** The first bytes of a file, enough to tell its type. */
export async function readHead(file: string, bytes = 4096): Promise<Buffer> {
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}
