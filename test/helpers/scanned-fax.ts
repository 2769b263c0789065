// A received fax as a fax machine makes one: text typeset, rasterised by Ghostscript at fax
// resolution (204x196 dpi by default), speckled with seeded noise, made black and white, and
// wrapped as a picture-only PDF (no text in it for anyone to find but OCR).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  concatTransformationMatrix,
  drawObject,
  PDFDocument,
  popGraphicsState,
  pushGraphicsState,
  StandardFonts,
} from "@cantoo/pdf-lib";
import { prng } from "./prng.js";

export interface ScanOptions {
  dpi?: [number, number];
  /** Share of pixels flipped at random (salt and pepper). */
  noise?: number;
  seed?: number;
}

/** A grey picture of `pdf`'s first page at `dpi`, from Ghostscript's PGM. */
export function rasterise(pdf: Uint8Array, dpi: [number, number]): { width: number; height: number; grey: Buffer } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "faxgate-scan-"));
  try {
    writeFileSync(path.join(dir, "in.pdf"), pdf);
    execFileSync("gs", [
      "-q",
      "-dNOPAUSE",
      "-dBATCH",
      "-dSAFER",
      "-dFirstPage=1",
      "-dLastPage=1",
      "-sDEVICE=pgmraw",
      `-r${dpi[0]}x${dpi[1]}`,
      `-sOutputFile=${path.join(dir, "out.pgm")}`,
      path.join(dir, "in.pdf"),
    ]);
    const pgm = readFileSync(path.join(dir, "out.pgm"));
    // P5 header: magic, optional comments, width height, maxval, one whitespace byte
    const fields: string[] = [];
    let i = 0;
    while (fields.length < 4) {
      while (/\s/.test(String.fromCharCode(pgm[i]!))) i++;
      if (pgm[i] === 0x23) {
        while (pgm[i] !== 0x0a) i++;
        continue;
      }
      let s = "";
      while (!/\s/.test(String.fromCharCode(pgm[i]!))) s += String.fromCharCode(pgm[i++]!);
      fields.push(s);
    }
    const [, w, h] = fields.map(Number);
    return { width: w!, height: h!, grey: pgm.subarray(i + 1, i + 1 + w! * h!) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A picture-only PDF of `grey` (one page, letter size whatever the resolution): a grey image XObject. */
export async function pictureToPdf(img: { width: number; height: number; grey: Buffer }): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const picture = doc.context.register(
    doc.context.flateStream(img.grey, {
      Type: "XObject",
      Subtype: "Image",
      Width: img.width,
      Height: img.height,
      ColorSpace: "DeviceGray",
      BitsPerComponent: 8,
    }),
  );
  const page = doc.addPage([612, 792]);
  const name = page.node.newXObject("Scan", picture);
  page.pushOperators(
    pushGraphicsState(),
    concatTransformationMatrix(612, 0, 0, 792, 0, 0),
    drawObject(name),
    popGraphicsState(),
  );
  return Buffer.from(await doc.save());
}

/** Speckles and thresholds a grey picture in place, as a fax line and a fax machine would. */
export function faxQuality(img: { grey: Buffer }, noise: number, seed: number): void {
  const rnd = prng(seed);
  for (let p = 0; p < img.grey.length; p++) {
    let v = img.grey[p]! < 160 ? 0 : 255;
    if (rnd() < noise) v = 255 - v;
    img.grey[p] = v;
  }
}

/** The lines typeset in Helvetica on a letter page. */
export async function typeset(lines: readonly string[], size = 16): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage([612, 792]);
  for (const [i, l] of lines.entries()) page.drawText(l, { x: 72, y: 700 - i * (size * 1.8), size, font });
  return Buffer.from(await doc.save());
}

/** A scanned-looking one-page fax of `lines`. */
export async function scannedFax(lines: readonly string[], o: ScanOptions = {}): Promise<Buffer> {
  const img = rasterise(await typeset(lines), o.dpi ?? [204, 196]);
  faxQuality(img, o.noise ?? 0.004, o.seed ?? 51);
  return pictureToPdf(img);
}
