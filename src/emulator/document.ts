// Builds the fax document the service would transmit: an optional generated cover page, then each
// attachment in order (PDF pages copied, images one per page, text typeset). The type is decided
// by the file's content first and its declared type second, so a renamed .docx is still refused.
import { readFile } from "node:fs/promises";
import { PDFDocument, StandardFonts, rgb, type PDFFont, type PDFPage } from "@cantoo/pdf-lib";
import { FAXABLE_TYPES, readHead, sniffBuffer } from "./file-type.js";
import { invalid } from "./api-error.js";
import { decodeText, paginateText, toWinAnsi } from "./text-pages.js";
import { tiffToPngs } from "./tiff.js";

const PAGE_W = 612;
const PAGE_H = 792;
const MARGIN = 54;

export interface AttachmentIn {
  path: string;
  filename: string;
  mimetype: string;
}

export interface CoverInfo {
  coverPageName: string;
  to: string;
  toNumber: string;
  from: string;
  callerId: string;
  subject: string;
  notes: string;
  date: string;
  recipientCompany?: string;
  recipientPhone?: string;
  senderCompany?: string;
  senderPhone?: string;
}

/** The faxable type of a file, or an InvalidInputError that names the type found. */
export async function attachmentType(a: AttachmentIn): Promise<string> {
  const head = await readHead(a.path);
  if (head.length === 0) throw invalid(`attachment "${a.filename}" is empty`);
  const sniffed = sniffBuffer(head);
  if (sniffed && FAXABLE_TYPES.has(sniffed)) return sniffed;
  const declared = a.mimetype && a.mimetype !== "application/octet-stream" ? a.mimetype : null;
  const named =
    declared && sniffed && declared !== sniffed
      ? `${declared} (content: ${sniffed})`
      : (declared ?? sniffed ?? "unknown binary data");
  throw invalid(
    `attachment "${a.filename}" is of type ${named}, which cannot be faxed (PDF, TIFF, PNG, JPEG or plain text only)`,
  );
}

export async function buildFaxDocument(
  cover: CoverInfo | null,
  attachments: AttachmentIn[],
): Promise<{ pdf: Uint8Array; pages: number }> {
  const types = [];
  for (const a of attachments) types.push(await attachmentType(a));
  const doc = await PDFDocument.create();
  doc.setProducer("faxgate emulator");
  doc.setCreationDate(new Date(0));
  const courier = await doc.embedFont(StandardFonts.Courier);

  for (let i = 0; i < attachments.length; i++) {
    const a = attachments[i];
    const type = types[i];
    const bytes = new Uint8Array(await readFile(a.path));
    try {
      if (type === "application/pdf") await addPdf(doc, bytes);
      else if (type === "image/png" || type === "image/jpeg") await addImage(doc, bytes, type);
      else if (type === "image/tiff") for (const png of tiffToPngs(bytes)) await addImage(doc, png, "image/png");
      else addText(doc, courier, decodeText(bytes));
    } catch (err) {
      if ((err as { name?: string }).name === "ApiError") throw err;
      throw invalid(`attachment "${a.filename}" (${type}) cannot be read: ${(err as Error).message.slice(0, 120)}`);
    }
  }
  let out = doc;
  if (cover) {
    // the cover says how many pages follow, so it is drawn last and put first
    out = await PDFDocument.create();
    out.setProducer("faxgate emulator");
    out.setCreationDate(new Date(0));
    drawCover(
      out,
      await out.embedFont(StandardFonts.Helvetica),
      await out.embedFont(StandardFonts.HelveticaBold),
      cover,
      doc.getPageCount(),
    );
    if (doc.getPageCount() > 0) for (const p of await out.copyPages(doc, doc.getPageIndices())) out.addPage(p);
  }
  if (out.getPageCount() === 0) throw invalid("the fax has no pages");
  const pdf = await out.save();
  return { pdf, pages: out.getPageCount() };
}

async function addPdf(doc: PDFDocument, bytes: Uint8Array): Promise<void> {
  const src = await PDFDocument.load(bytes, { ignoreEncryption: true, updateMetadata: false });
  const n = src.getPageCount();
  if (n === 0) throw new Error("the PDF has no pages");
  const pages = await doc.copyPages(src, src.getPageIndices());
  for (const p of pages) doc.addPage(p);
}

async function addImage(doc: PDFDocument, bytes: Uint8Array, type: string): Promise<void> {
  const img = type === "image/png" ? await doc.embedPng(bytes) : await doc.embedJpg(bytes);
  const page = doc.addPage([PAGE_W, PAGE_H]);
  const maxW = PAGE_W - 2 * 36;
  const maxH = PAGE_H - 2 * 36;
  const scale = Math.min(maxW / img.width, maxH / img.height, 4);
  const w = img.width * scale;
  const h = img.height * scale;
  page.drawImage(img, { x: (PAGE_W - w) / 2, y: (PAGE_H - h) / 2, width: w, height: h });
}

function addText(doc: PDFDocument, font: PDFFont, text: string): void {
  const size = 10;
  const lineH = 12;
  const width = Math.floor((PAGE_W - 2 * MARGIN) / (size * 0.6));
  const perPage = Math.floor((PAGE_H - 2 * MARGIN) / lineH);
  for (const lines of paginateText(text, width, perPage)) {
    const page = doc.addPage([PAGE_W, PAGE_H]);
    lines.forEach((l, i) => {
      if (l) page.drawText(l, { x: MARGIN, y: PAGE_H - MARGIN - size - i * lineH, size, font });
    });
  }
}

function wrapProportional(text: string, font: PDFFont, size: number, width: number): string[] {
  const out: string[] = [];
  for (const para of text
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((p) => toWinAnsi(p.replace(/\t/g, " ")))) {
    let line = "";
    for (const word of para.split(" ")) {
      const cand = line ? `${line} ${word}` : word;
      if (font.widthOfTextAtSize(cand, size) <= width) {
        line = cand;
        continue;
      }
      if (line) out.push(line);
      // hard-break a word wider than the line, measuring one character at a time
      let w = "";
      let wWidth = 0;
      for (const ch of word) {
        const cw = font.widthOfTextAtSize(ch, size);
        if (wWidth + cw > width && w) {
          out.push(w);
          w = "";
          wWidth = 0;
        }
        w += ch;
        wWidth += cw;
      }
      line = w;
    }
    out.push(line);
  }
  return out;
}

/** Draws the cover page(s) into an empty document; returns how many pages it used. */
function drawCover(doc: PDFDocument, font: PDFFont, bold: PDFFont, c: CoverInfo, attachmentPages: number): number {
  let page: PDFPage = doc.addPage([PAGE_W, PAGE_H]);
  let used = 1;
  let y = PAGE_H - MARGIN;
  const text = (s: string, x: number, size: number, f: PDFFont = font) =>
    page.drawText(toWinAnsi(s), { x, y, size, font: f, color: rgb(0, 0, 0) });
  text("FAX", MARGIN, 36, bold);
  y -= 16;
  text(c.coverPageName, MARGIN + 90, 11);
  y -= 36;
  page.drawLine({ start: { x: MARGIN, y: y + 20 }, end: { x: PAGE_W - MARGIN, y: y + 20 }, thickness: 1.5 });
  const rows: Array<[string, string]> = [
    ["Date", c.date],
    ["To", c.to],
    ["Fax", c.toNumber],
  ];
  if (c.recipientCompany) rows.push(["Company", c.recipientCompany]);
  if (c.recipientPhone) rows.push(["Phone", c.recipientPhone]);
  rows.push(["From", c.from]);
  if (c.senderCompany) rows.push(["Company", c.senderCompany]);
  if (c.senderPhone) rows.push(["Phone", c.senderPhone]);
  rows.push(["Caller ID", c.callerId], ["Subject", c.subject], ["Pages", String(attachmentPages + 1)]);
  for (const [label, value] of rows) {
    text(`${label}:`, MARGIN, 12, bold);
    text(value.slice(0, 90), MARGIN + 80, 12);
    y -= 20;
  }
  y -= 10;
  page.drawLine({ start: { x: MARGIN, y: y + 14 }, end: { x: PAGE_W - MARGIN, y: y + 14 }, thickness: 0.75 });
  if (c.notes) {
    y -= 6;
    text("Notes:", MARGIN, 12, bold);
    y -= 18;
    for (const line of wrapProportional(c.notes, font, 11, PAGE_W - 2 * MARGIN)) {
      if (y < MARGIN) {
        page = doc.addPage([PAGE_W, PAGE_H]);
        used++;
        y = PAGE_H - MARGIN;
      }
      if (line) text(line, MARGIN, 11);
      y -= 14;
    }
  }
  return used;
}
