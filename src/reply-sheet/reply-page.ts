// The reply sheet: one Letter page with the signed QR code and a line telling the recipient what
// to do with it. Appended as the fax's last page, so the recipient can fax it back in front of
// (or behind) their answer. The code is drawn large (error correction M, 4-module quiet zone):
// a 100 dpi fax line halves the vertical resolution and each module must survive as 2+ pixels.
import { PDFDocument, StandardFonts, rgb } from "@cantoo/pdf-lib";
import QRCode from "qrcode";

const PAGE_W = 612;
const PAGE_H = 792;
const QR_POINTS = 288; // 4 inches

export async function replySheetPage(code: string, opts: { reference?: string } = {}): Promise<Uint8Array> {
  const png = await QRCode.toBuffer(code, { errorCorrectionLevel: "M", margin: 4, scale: 8, type: "png" });
  const doc = await PDFDocument.create();
  const page = doc.addPage([PAGE_W, PAGE_H]);
  const font = await doc.embedFont(StandardFonts.HelveticaBold);
  const small = await doc.embedFont(StandardFonts.Helvetica);
  const title = "Fax your reply with this page";
  page.drawText(title, { x: (PAGE_W - font.widthOfTextAtSize(title, 24)) / 2, y: PAGE_H - 110, size: 24, font });
  const hint = "Put this page in front of your reply so it reaches the sender directly.";
  page.drawText(hint, {
    x: (PAGE_W - small.widthOfTextAtSize(hint, 12)) / 2,
    y: PAGE_H - 140,
    size: 12,
    font: small,
    color: rgb(0.2, 0.2, 0.2),
  });
  const image = await doc.embedPng(png);
  page.drawImage(image, {
    x: (PAGE_W - QR_POINTS) / 2,
    y: (PAGE_H - QR_POINTS) / 2 - 20,
    width: QR_POINTS,
    height: QR_POINTS,
  });
  if (opts.reference) page.drawText(`Ref. ${opts.reference}`, { x: 72, y: 72, size: 10, font: small });
  return doc.save();
}

/** The document with the reply sheet as its last page. */
export async function withReplySheet(
  pdf: Uint8Array,
  code: string,
  opts: { reference?: string } = {},
): Promise<Uint8Array> {
  const doc = await PDFDocument.load(pdf);
  const sheet = await PDFDocument.load(await replySheetPage(code, opts));
  const [page] = await doc.copyPages(sheet, [0]);
  doc.addPage(page!);
  return doc.save();
}
