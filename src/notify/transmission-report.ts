// A fax machine's transmission report for one outbound job: one page a clerk can file as proof that
// a document was sent (or was not). The first page of the document itself is drawn reduced on it,
// embedded as a vector Form XObject (pdf-lib's embedPage), so no rasteriser is needed and the image
// is exactly what was handed to the service.
import { PDFDocument, StandardFonts, rgb, type PDFFont, type PDFPage } from "@cantoo/pdf-lib";
import { faxNumber } from "../format.js";
import { formatFaxNumber } from "../recipients/index.js";
import { failureWords } from "./outcome-mail.js";
import { formatDuration, formatTime } from "./time-format.js";
import type { Job, Recipient, StoredDocument } from "../store/index.js";

export interface ReportInput {
  job: Job;
  /** The account's IANA zone; every time on the report is given in it, with its name. */
  timeZone: string;
  /** Who sent it, as people know them: the user's name and address. */
  sender: { name: string; email?: string | null; faxCallerId?: string | null };
  /** smtp.defaultCountryCode: a caller id the service keeps without its country code is read with it */
  defaultCountryCode?: string;
  /** The bytes of a stored document (the store's readDocument). */
  readDocument: (doc: StoredDocument) => Promise<Uint8Array>;
  /** When the report was made (the clock's now). */
  now: Date;
  /** Draw the reduced first page (default); false where the fax's content may not go (a mailed report under notify.attachments). */
  pageImage?: boolean;
}

const W = 612;
const H = 792;
const MARGIN = 48;
/** The reduced first page's box, about a third of a page. */
const THUMB = { w: 170, h: 220 };
/** Recipients listed before "and N more": the report stays one page. */
const MAX_ROWS = 6;

/** Result words the way fax machines print them: OK for delivered, the reason otherwise. */
export function reportResult(r: Recipient): { ok: boolean; words: string; code: string | null } {
  const code = [r.resultCode, r.resultInfo].filter(Boolean).join(" ") || null;
  if (r.state === "delivered") return { ok: true, words: "OK", code };
  if (r.state === "failed" || r.state === "cancelled") return { ok: false, words: `FAILED: ${failureWords(r)}`, code };
  return { ok: false, words: `NOT FINISHED (${r.state})`, code };
}

/** Standard fonts encode WinAnsi only: anything else is shown as "?" rather than failing the report. */
function plain(s: string): string {
  return s.replace(/[\r\n\t]+/g, " ").replace(/[^\x20-\x7E\xA0-\xFF]/g, "?");
}

function fit(text: string, font: PDFFont, size: number, width: number): string {
  let t = plain(text);
  if (font.widthOfTextAtSize(t, size) <= width) return t;
  while (t.length > 1 && font.widthOfTextAtSize(`${t}...`, size) > width) t = t.slice(0, -1);
  return `${t}...`;
}

interface Fonts {
  font: PDFFont;
  bold: PDFFont;
  mono: PDFFont;
}

/** A bold name and its value in the fixed font, cut to the width. */
function label(page: PDFPage, f: Fonts, k: string, v: string | null, at: number, x: number, width: number): void {
  page.drawText(plain(k), { x, y: at, size: 9, font: f.bold });
  page.drawText(fit(v ?? "-", f.mono, 9, width - 110), { x: x + 110, y: at, size: 9, font: f.mono });
}

export async function renderTransmissionReport(input: ReportInput): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.setTitle(`Transmission report ${input.job.id}`);
  doc.setProducer("faxgate");
  doc.setCreationDate(input.now);
  const page = doc.addPage([W, H]);
  const f: Fonts = {
    font: await doc.embedFont(StandardFonts.Helvetica),
    bold: await doc.embedFont(StandardFonts.HelveticaBold),
    mono: await doc.embedFont(StandardFonts.Courier),
  };
  let y = drawTitle(page, f, input);
  y = await drawHead(doc, page, f, input, y);
  drawDestinations(page, f, input, y);
  drawVerdict(page, f, input.job);
  return doc.save();
}

/** The title and the report's time, over a rule: where the header fields start. */
function drawTitle(page: PDFPage, f: Fonts, input: ReportInput): number {
  let y = H - MARGIN;
  page.drawText("TRANSMISSION REPORT", { x: MARGIN, y: y - 18, size: 20, font: f.bold });
  page.drawText(plain(formatTime(input.now.toISOString(), input.timeZone) ?? ""), {
    x: W - MARGIN - 200,
    y: y - 14,
    size: 9,
    font: f.font,
    maxWidth: 200,
  });
  y -= 30;
  page.drawLine({ start: { x: MARGIN, y }, end: { x: W - MARGIN, y }, thickness: 1.5 });
  return y - 18;
}

/** The job's fields and, to their right, its first page reduced and framed: where the destinations start. */
async function drawHead(doc: PDFDocument, page: PDFPage, f: Fonts, input: ReportInput, top: number): Promise<number> {
  const { job, timeZone } = input;
  const sender = [input.sender.name, input.sender.email ? `<${input.sender.email}>` : null].filter(Boolean).join(" ");
  const rows: Array<[string, string | null]> = [
    ["Job", job.id],
    ["Sender", sender],
    // the service's caller id may lack the country code: read with the gateway's default one
    ["Sender number", faxNumber(input.sender.faxCallerId, input.defaultCountryCode)],
    ["Submitted", formatTime(job.createdAt, timeZone)],
    ["Time zone", timeZone],
    ["Subject", job.cover.subject ?? job.meta.origin?.subject ?? null],
    ["Documents", job.documents.map((d) => d.name).join(", ") || (job.cover.enabled ? "cover page only" : null)],
  ];
  let y = top;
  for (const [k, v] of rows) {
    label(page, f, k, v, y, MARGIN, W - 2 * MARGIN - THUMB.w - 20);
    y -= 15;
  }
  const box = { x: W - MARGIN - THUMB.w, y: top - THUMB.h + 9, w: THUMB.w, h: THUMB.h };
  if (input.pageImage === false) withheldPage(page, box, f.font);
  else await drawFirstPage(doc, page, box, job, input.readDocument, f.font);
  return Math.min(y, box.y) - 24;
}

/** One block per destination (at most MAX_ROWS, then how many more). */
function drawDestinations(page: PDFPage, f: Fonts, input: ReportInput, top: number): void {
  const { job, timeZone } = input;
  let y = top;
  page.drawLine({ start: { x: MARGIN, y: y + 10 }, end: { x: W - MARGIN, y: y + 10 }, thickness: 0.75 });
  const shown = job.recipients.slice(0, MAX_ROWS);
  for (const r of shown) {
    const res = reportResult(r);
    const to = r.name ? `${formatFaxNumber(r.number)} (${r.name})` : formatFaxNumber(r.number);
    page.drawText(fit(`Destination: ${to}`, f.bold, 11, W - 2 * MARGIN), { x: MARGIN, y, size: 11, font: f.bold });
    y -= 16;
    const wide = W - 2 * MARGIN;
    const pages =
      r.pages != null || r.pagesCount != null ? `${r.pages ?? 0} of ${r.pagesCount ?? r.pages ?? "?"}` : null;
    const detail: Array<[string, string | null]> = [
      ["Date/time", formatTime(r.finishedAt ?? r.sentAt ?? r.updatedAt, timeZone)],
      ["Pages sent", pages],
      ["Time per page", formatDuration(r.duration)],
      ["Result", res.words],
      ["Service result", res.code],
      ["Error", r.state !== "delivered" ? [r.errorCode, r.errorInfo].filter(Boolean).join(" ") || null : null],
      ["Message id", r.messageId],
    ];
    for (const [k, v] of detail) {
      if (v == null && (k === "Error" || k === "Service result")) continue;
      label(page, f, k, v, y, MARGIN + 12, wide - 12);
      y -= 13;
    }
    y -= 10;
  }
  if (job.recipients.length > shown.length) {
    page.drawText(
      `... and ${job.recipients.length - shown.length} more recipients (faxgate job ${job.id} lists them all)`,
      { x: MARGIN, y, size: 9, font: f.font },
    );
  }
}

/** The verdict over the whole job, at the foot of the page. */
function drawVerdict(page: PDFPage, f: Fonts, job: ReportInput["job"]): void {
  const delivered = job.recipients.filter((r) => r.state === "delivered").length;
  const verdict =
    job.recipients.length === 0
      ? "NOT SENT"
      : delivered === job.recipients.length
        ? "RESULT: OK"
        : delivered === 0
          ? "RESULT: FAILED"
          : `RESULT: ${delivered} OF ${job.recipients.length} DELIVERED`;
  page.drawLine({ start: { x: MARGIN, y: MARGIN + 30 }, end: { x: W - MARGIN, y: MARGIN + 30 }, thickness: 1.5 });
  page.drawText(verdict, { x: MARGIN, y: MARGIN + 10, size: 14, font: f.bold });
  page.drawText("faxgate", {
    x: W - MARGIN - f.font.widthOfTextAtSize("faxgate", 9),
    y: MARGIN + 12,
    size: 9,
    font: f.font,
    color: rgb(0.4, 0.4, 0.4),
  });
}

type Box = { x: number; y: number; w: number; h: number };

/** The thin black frame around the first page's box, drawn or withheld. */
function frame(page: PDFPage, box: Box): void {
  page.drawRectangle({
    x: box.x - 1,
    y: box.y - 1,
    width: box.w + 2,
    height: box.h + 2,
    borderWidth: 1,
    borderColor: rgb(0, 0, 0),
  });
}

/** The framed box with words instead of the page: the reader learns why there is no picture. */
function withheldPage(page: PDFPage, box: { x: number; y: number; w: number; h: number }, font: PDFFont): void {
  frame(page, box);
  const lines = [
    "First page not shown:",
    "this gateway keeps the",
    "fax's content out of mail",
    "(notify.attachments).",
  ];
  for (const [i, text] of lines.entries())
    page.drawText(text, {
      x: box.x + 8,
      y: box.y + box.h / 2 + 18 - i * 12,
      size: 8,
      font,
      color: rgb(0.35, 0.35, 0.35),
    });
}

async function drawFirstPage(
  doc: PDFDocument,
  page: PDFPage,
  box: { x: number; y: number; w: number; h: number },
  job: Job,
  read: (d: StoredDocument) => Promise<Uint8Array>,
  font: PDFFont,
): Promise<void> {
  frame(page, box);
  const note = (text: string): void => {
    page.drawText(text, {
      x: box.x + 8,
      y: box.y + box.h / 2,
      size: 8,
      font,
      color: rgb(0.35, 0.35, 0.35),
      maxWidth: box.w - 16,
    });
  };
  const first = job.documents[0];
  if (!first) return note(job.cover.enabled ? "cover page only" : "no document");
  try {
    const bytes = await read(first);
    const place = (w: number, h: number) => {
      const s = Math.min(box.w / w, box.h / h);
      return { x: box.x + (box.w - w * s) / 2, y: box.y + (box.h - h * s) / 2, width: w * s, height: h * s };
    };
    if (first.contentType === "application/pdf") {
      const src = await PDFDocument.load(bytes, { ignoreEncryption: true, updateMetadata: false });
      const [embedded] = await doc.embedPdf(src, [0]);
      page.drawPage(embedded!, place(embedded!.width, embedded!.height));
    } else if (first.contentType === "image/png" || first.contentType === "image/jpeg") {
      const img = first.contentType === "image/png" ? await doc.embedPng(bytes) : await doc.embedJpg(bytes);
      page.drawImage(img, place(img.width, img.height));
    } else {
      note(`first page: ${plain(first.name)}`);
    }
  } catch {
    // a document pdf-lib cannot read still gets its report, without the picture
    note("first page could not be drawn");
  }
}
