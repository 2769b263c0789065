// A decompression bomb small on disk: one page whose content stream is `mb` MB of spaces in one
// flate stream. A full-flush deflate block of 1 MB does not refer to what came before, so it is
// made once and repeated (2.6 GB decoded from 2.7 MB, built in milliseconds). pdfjs does not check
// the stream's Adler-32, so it is left zero.
import { constants, deflateRawSync } from "node:zlib";

export function pdfBomb(mb: number): Buffer {
  const block = deflateRawSync(Buffer.alloc(1 << 20, 0x20), { finishFlush: constants.Z_FULL_FLUSH, level: 9 });
  const stream = Buffer.concat([
    Buffer.from([0x78, 0xda]),
    ...Array.from({ length: mb }, () => block),
    Buffer.from([0x03, 0x00]),
    Buffer.alloc(4),
  ]);
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
  ];
  const parts: Buffer[] = [Buffer.from("%PDF-1.4\n")];
  let at = parts[0]!.length;
  const offsets: number[] = [];
  const add = (b: Buffer) => {
    parts.push(b);
    at += b.length;
  };
  objects.forEach((o, i) => {
    offsets.push(at);
    add(Buffer.from(`${i + 1} 0 obj\n${o}\nendobj\n`));
  });
  offsets.push(at);
  add(Buffer.from(`4 0 obj\n<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`));
  add(stream);
  add(Buffer.from("\nendstream\nendobj\n"));
  const xref = at;
  add(
    Buffer.from(
      `xref\n0 5\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`,
    ),
  );
  return Buffer.concat(parts);
}
