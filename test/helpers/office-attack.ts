// Office documents that reach outside themselves, built by hand as an attacker would write them,
// plus what they reach for: a canary PDF outside the job and an HTTP listener on 127.0.0.x that
// records every request (and answers with the canary, as a hostile server would).
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { PDFDocument, StandardFonts } from "@cantoo/pdf-lib";
import { strToU8, zipSync } from "fflate";
import { findExecutable } from "../../src/fs/executable.js";

export const HAVE_PDFTOTEXT = findExecutable("pdftotext") !== null;

/** The text of a PDF, as pdftotext reads it. */
export function pdfText(pdf: Uint8Array, dir: string): string {
  const f = path.join(dir, `text-${Math.random().toString(36).slice(2)}.pdf`);
  writeFileSync(f, pdf);
  return execFileSync("pdftotext", ["-layout", f, "-"], { encoding: "utf8" });
}

/** A one-page PDF carrying `text` (the secret an attacker wants faxed back to them). */
export async function canaryPdf(text: string): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([612, 792]);
  page.drawText(text, { x: 72, y: 700, size: 24, font: await doc.embedFont(StandardFonts.Helvetica) });
  return doc.save();
}

export interface Listener {
  url: string;
  requests: string[];
  close(): Promise<void>;
}

/** An HTTP server on a random 127.0.0.x that logs each request and answers with `body`. */
export async function listener(body: Uint8Array): Promise<Listener> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers["user-agent"] ?? ""}`);
    res.writeHead(200, { "content-type": "application/pdf", "content-length": body.length });
    res.end(body);
  });
  const host = `127.0.0.${2 + Math.floor(Math.random() * 250)}`;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
const R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const REL = "http://schemas.openxmlformats.org/package/2006/relationships";

export interface Rel {
  id: string;
  type: string;
  target: string;
  external?: boolean;
}

/** A .docx: `body` is the inside of <w:body>, `rels` the document part's relationships. */
export function docx(body: string, rels: Rel[] = []): Uint8Array {
  const relXml = rels
    .map(
      (r) =>
        `<Relationship Id="${r.id}" Type="${R}/${r.type}" Target="${r.target}"${r.external ? ' TargetMode="External"' : ""}/>`,
    )
    .join("");
  return zipSync({
    "[Content_Types].xml": strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
    ),
    "_rels/.rels": strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="${REL}"><Relationship Id="rId1" Type="${R}/officeDocument" Target="word/document.xml"/></Relationships>`,
    ),
    "word/_rels/document.xml.rels": strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="${REL}">${relXml}</Relationships>`,
    ),
    "word/document.xml": strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="${W}" xmlns:r="${R}" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><w:body><w:p><w:r><w:t>Visible body text</w:t></w:r></w:p>${body}<w:sectPr/></w:body></w:document>`,
    ),
  });
}

/** A picture whose blip is a link (`r:link`) or an embed (`r:embed`) to relationship `rid`. */
export function docxPicture(rid: string, attr: "r:link" | "r:embed" = "r:link"): string {
  const cx = 5_000_000;
  const cy = 6_000_000;
  return `<w:p><w:r><w:drawing><wp:inline><wp:extent cx="${cx}" cy="${cy}"/><wp:docPr id="1" name="Picture 1"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="0" name="p"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip ${attr}="${rid}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="${cx}" cy="${cy}"/></a:xfrm><a:prstGeom prst="rect"/></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>`;
}

/** A field both as w:fldSimple and as a complex field (w:fldChar + w:instrText). */
export function docxField(instr: string): string {
  const esc = instr.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
  return (
    `<w:p><w:fldSimple w:instr="${esc}"><w:r><w:t>old</w:t></w:r></w:fldSimple></w:p>` +
    `<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve">${esc}</w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>old</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>`
  );
}

const ODF_NS =
  'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"';

/** An image frame in ODF pointing at `href`. */
export function odfImage(href: string): string {
  return `<text:p><draw:frame draw:name="img" text:anchor-type="as-char" svg:width="15cm" svg:height="18cm"><draw:image xlink:href="${href}" xlink:type="simple" xlink:show="embed" xlink:actuate="onLoad"/></draw:frame></text:p>`;
}

/** A section whose content is taken from `href`. */
export function odfSection(href: string): string {
  return `<text:section text:name="S1"><text:section-source xlink:href="${href}" xlink:type="simple" xlink:show="embed" text:filter-name=""/><text:p>old</text:p></text:section>`;
}

/** An .odt: `body` is the inside of <office:text>. */
export function odt(body: string): Uint8Array {
  return zipSync({
    mimetype: [strToU8("application/vnd.oasis.opendocument.text"), { level: 0 }],
    "META-INF/manifest.xml": strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>',
    ),
    "content.xml": strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><office:document-content ${ODF_NS} office:version="1.2"><office:body><office:text><text:p>Visible body text</text:p>${body}</office:text></office:body></office:document-content>`,
    ),
  });
}

/** A flat .fodt (one XML file): `body` is the inside of <office:text>. */
export function fodt(body: string): Uint8Array {
  return strToU8(
    `<?xml version="1.0" encoding="UTF-8"?><office:document ${ODF_NS} office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.text"><office:body><office:text><text:p>Visible body text</text:p>${body}</office:text></office:body></office:document>`,
  );
}

/** An RTF document with `body` after a visible paragraph. */
export function rtf(body: string): Uint8Array {
  return Buffer.from(
    `{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Helvetica;}}\\f0\\fs24 Visible body text\\par\n${body}\\par}`,
    "latin1",
  );
}

/** An RTF field (INCLUDEPICTURE, INCLUDETEXT...) with `instr` as its instruction. */
export function rtfField(instr: string): string {
  return `{\\field{\\*\\fldinst { ${instr.replace(/\\/g, "\\\\")} }}{\\fldrslt {old}}}`;
}

const SML = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";

/**
 * An .xlsx with one sheet: A1 says "Visible body text", then one row per cell of `cells` (the
 * inside of <row>, with `@` for the cell's own reference). `externalLink`, when given, is the
 * target of an externalLink part the formulas can name as `[1]`.
 */
export function xlsx(cells: string[], o: { externalLink?: string; parts?: Record<string, string> } = {}): Uint8Array {
  const ext = o.externalLink !== undefined;
  const rows = cells.map((c, i) => `<row r="${i + 2}">${c.replace(/@/g, `A${i + 2}`)}</row>`).join("");
  return zipSync({
    "[Content_Types].xml": strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>${ext ? '<Override PartName="/xl/externalLinks/externalLink1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.externalLink+xml"/>' : ""}</Types>`,
    ),
    "_rels/.rels": strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="${REL}"><Relationship Id="rId1" Type="${R}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
    ),
    "xl/workbook.xml": strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="${SML}" xmlns:r="${R}"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets>${ext ? '<externalReferences><externalReference r:id="rId2"/></externalReferences>' : ""}</workbook>`,
    ),
    "xl/_rels/workbook.xml.rels": strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="${REL}"><Relationship Id="rId1" Type="${R}/worksheet" Target="worksheets/sheet1.xml"/>${ext ? `<Relationship Id="rId2" Type="${R}/externalLink" Target="externalLinks/externalLink1.xml"/>` : ""}</Relationships>`,
    ),
    "xl/worksheets/sheet1.xml": strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="${SML}" xmlns:r="${R}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>Visible body text</t></is></c></row>${rows}</sheetData></worksheet>`,
    ),
    ...(ext
      ? {
          "xl/externalLinks/externalLink1.xml": strToU8(
            `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><externalLink xmlns="${SML}" xmlns:r="${R}"><externalBook r:id="rId1"><sheetNames><sheetName val="Sheet1"/></sheetNames></externalBook></externalLink>`,
          ),
          "xl/externalLinks/_rels/externalLink1.xml.rels": strToU8(
            `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="${REL}"><Relationship Id="rId1" Type="${R}/externalLinkPath" Target="${o.externalLink}" TargetMode="External"/></Relationships>`,
          ),
        }
      : {}),
    ...Object.fromEntries(Object.entries(o.parts ?? {}).map(([k, v]) => [k, strToU8(v)])),
  });
}

/** An .ods with one sheet: "Visible body text", then one row per cell of `cells` (the inside of <table:table-row>). */
export function ods(cells: string[], o: { before?: string } = {}): Uint8Array {
  return zipSync({
    mimetype: [strToU8("application/vnd.oasis.opendocument.spreadsheet"), { level: 0 }],
    "META-INF/manifest.xml": strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>',
    ),
    "content.xml": strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><office:document-content ${ODF_NS} xmlns:of="urn:oasis:names:tc:opendocument:xmlns:of:1.2" office:version="1.2"><office:body><office:spreadsheet>${o.before ?? ""}<table:table table:name="Sheet1"><table:table-row><table:table-cell office:value-type="string"><text:p>Visible body text</text:p></table:table-cell></table:table-row>${cells.map((c) => `<table:table-row>${c}</table:table-row>`).join("")}</table:table></office:spreadsheet></office:body></office:document-content>`,
    ),
  });
}
