// The one-page letter the spool bench drops by the thousand (bench/spool-throughput.bench.ts),
// also read by the '@' pre-check's test: pdf-lib, Helvetica, 30 lines, no '@'.
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";

/** The letter; copy `i` has "% copy i" appended after %%EOF, so that each copy is unique. */
export async function benchLetter(): Promise<(i: number) => Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage([612, 792]);
  for (let l = 0; l < 30; l++)
    page.drawText(`Line ${l} of a one-page business letter sent to a fax number`, {
      x: 50,
      y: 750 - l * 20,
      size: 11,
      font,
    });
  const base = Buffer.from(await doc.save());
  return (i) => Buffer.concat([base, Buffer.from(`\n% copy ${i}\n`)]);
}
