// TIFF (the classic fax format) decoded with the small pure-JS UTIF and re-encoded as PNG pages,
// because PDF libraries cannot embed TIFF directly. One PNG per TIFF page.
import { createRequire } from "node:module";
import { encode as encodePng } from "@cantoo/pdf-lib/upng";

interface Ifd {
  width: number;
  height: number;
  [k: string]: unknown;
}

interface Utif {
  decode(buf: ArrayBuffer): Ifd[];
  decodeImage(buf: ArrayBuffer, ifd: Ifd, ifds?: Ifd[]): void;
  toRGBA8(ifd: Ifd): Uint8Array;
}

const require = createRequire(import.meta.url);
let utif: Utif | null = null;

export function tiffToPngs(bytes: Uint8Array): Uint8Array[] {
  utif ??= require("utif") as Utif;
  const buf = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  // only IFDs with pixel data are pages (thumbnails and EXIF sub-IFDs are skipped)
  const ifds = utif.decode(buf).filter((i) => i.t273 !== undefined || i.t324 !== undefined);
  const pngs: Uint8Array[] = [];
  for (const ifd of ifds) {
    utif.decodeImage(buf, ifd, ifds);
    if (!ifd.width || !ifd.height) continue;
    const rgba = utif.toRGBA8(ifd);
    const frame = rgba.buffer.slice(rgba.byteOffset, rgba.byteOffset + rgba.byteLength) as ArrayBuffer;
    pngs.push(new Uint8Array(encodePng([frame], ifd.width, ifd.height, 0)));
  }
  return pngs;
}
