// Which parts of a mail become fax pages. An allow-list by declared type *and* by content (a
// ".pdf" that is a zip is refused); parts people do not mean to fax (signatures, vCards,
// invitations, winmail.dat, small inline logos) are left out with a reason the user is told.
import path from "node:path";
import { headOf, looksLikeText, sniffBuffer } from "../documents/file-type.js";

/**
 * `meant`: the sender attached it to be faxed, so leaving it out sends less than they meant (the
 * mail is refused unless intake.partial is `send`); false for what is not a document at all
 * (signatures, contact cards, invitations, small inline logos), which is dropped quietly.
 */
export type PartDecision = { use: true; contentType: string } | { use: false; reason: string; meant: boolean };

export interface PartInfo {
  path: string;
  filename: string;
  contentType: string;
  bytes: number;
  inline: boolean;
  /** The file's first bytes (HEAD_BYTES), when the parser kept them as it wrote: not read again. */
  head?: Uint8Array;
}

type Family = "pdf" | "tiff" | "png" | "jpeg" | "text" | "ooxml" | "ole" | "odf" | "rtf";

const BY_EXT: Record<string, { family: Family; type: string }> = {
  ".pdf": { family: "pdf", type: "application/pdf" },
  ".tif": { family: "tiff", type: "image/tiff" },
  ".tiff": { family: "tiff", type: "image/tiff" },
  ".png": { family: "png", type: "image/png" },
  ".jpg": { family: "jpeg", type: "image/jpeg" },
  ".jpeg": { family: "jpeg", type: "image/jpeg" },
  ".txt": { family: "text", type: "text/plain" },
  ".text": { family: "text", type: "text/plain" },
  // text in other clothes: typeset as plain text like .txt
  ".csv": { family: "text", type: "text/plain" },
  ".tsv": { family: "text", type: "text/plain" },
  ".md": { family: "text", type: "text/plain" },
  ".log": { family: "text", type: "text/plain" },
  ".docx": { family: "ooxml", type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document" },
  ".xlsx": { family: "ooxml", type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" },
  ".pptx": { family: "ooxml", type: "application/vnd.openxmlformats-officedocument.presentationml.presentation" },
  ".doc": { family: "ole", type: "application/msword" },
  ".xls": { family: "ole", type: "application/vnd.ms-excel" },
  ".ppt": { family: "ole", type: "application/vnd.ms-powerpoint" },
  ".odt": { family: "odf", type: "application/vnd.oasis.opendocument.text" },
  ".ods": { family: "odf", type: "application/vnd.oasis.opendocument.spreadsheet" },
  ".odp": { family: "odf", type: "application/vnd.oasis.opendocument.presentation" },
  ".rtf": { family: "rtf", type: "application/rtf" },
};

/** The extension a declared MIME type stands for in the table above (e.g. for an office part named without one), or null. */
export function extensionForType(type: string): string | null {
  const t = type.toLowerCase();
  if (t === "text/rtf") return ".rtf";
  for (const [ext, v] of Object.entries(BY_EXT)) if (v.type === t) return ext;
  return null;
}

const BY_TYPE: Record<string, Family> = {
  "application/pdf": "pdf",
  "application/x-pdf": "pdf",
  "image/tiff": "tiff",
  "image/png": "png",
  "image/jpeg": "jpeg",
  "image/jpg": "jpeg",
  "image/pjpeg": "jpeg",
  "text/plain": "text",
  "text/csv": "text",
  "text/x-csv": "text",
  "application/csv": "text",
  "text/comma-separated-values": "text",
  "text/tab-separated-values": "text",
  "text/markdown": "text",
  "text/x-log": "text",
  "application/msword": "ole",
  "application/vnd.ms-excel": "ole",
  "application/vnd.ms-powerpoint": "ole",
  "application/rtf": "rtf",
  "text/rtf": "rtf",
  "application/vnd.oasis.opendocument.text": "odf",
  "application/vnd.oasis.opendocument.spreadsheet": "odf",
  "application/vnd.oasis.opendocument.presentation": "odf",
};
for (const v of Object.values(BY_EXT)) if (v.family === "ooxml") BY_TYPE[v.type] = "ooxml";

const SNIFFED: Record<string, Family> = {
  "application/pdf": "pdf",
  "image/tiff": "tiff",
  "image/png": "png",
  "image/jpeg": "jpeg",
  "text/plain": "text",
  "application/rtf": "rtf",
};

const FAMILY_TYPE: Record<Family, string> = {
  pdf: "application/pdf",
  tiff: "image/tiff",
  png: "image/png",
  jpeg: "image/jpeg",
  text: "text/plain",
  ooxml: "application/octet-stream",
  ole: "application/octet-stream",
  odf: "application/octet-stream",
  rtf: "application/rtf",
};

const LABEL: Record<string, string> = {
  "application/zip": "a ZIP archive",
  "application/x-ole-storage": "an old Office file",
  "application/gzip": "a gzip archive",
  "image/gif": "a GIF image",
  "application/pdf": "a PDF",
  "image/png": "a PNG image",
  "image/jpeg": "a JPEG image",
  "image/tiff": "a TIFF image",
  "text/plain": "plain text",
  "application/rtf": "an RTF document",
};

const ALLOWED = "PDF, TIFF, PNG, JPEG, plain text and office documents";

/** Does the content match the family the part claims? zip for OOXML/ODF, OLE for old Office. */
function contentMatches(family: Family, sniffed: string | null, head: Buffer): boolean {
  switch (family) {
    case "ooxml":
    case "odf":
      return sniffed === "application/zip";
    case "ole":
      return sniffed === "application/x-ole-storage";
    case "rtf":
      return sniffed === "application/rtf";
    case "text":
      return sniffed === "text/plain" || (sniffed === null && looksLikeText(head));
    default:
      return SNIFFED[sniffed ?? ""] === family;
  }
}

/** Left out before any content is read: parts that are not meant as pages. */
export function leftOutByKind(p: PartInfo, inlineImageMinBytes: number): string | null {
  const name = p.filename.toLowerCase();
  const ext = path.extname(name);
  const type = p.contentType;
  if ([".p7s", ".p7m", ".asc", ".sig"].includes(ext) || /pkcs7-signature|pgp-signature|pgp-keys/.test(type)) {
    return "a digital signature, not a document";
  }
  if (ext === ".vcf" || /^text\/(x-)?vcard/.test(type)) return "a contact card (vCard), not a document";
  if (ext === ".ics" || type === "text/calendar" || type === "application/ics")
    return "a calendar invitation, not a document";
  if (name === "winmail.dat" || type === "application/ms-tnef" || type === "application/vnd.ms-tnef") {
    return "Outlook rich-text data (winmail.dat) cannot be faxed; send the files as ordinary attachments";
  }
  if (p.inline && type.startsWith("image/") && p.bytes < inlineImageMinBytes) {
    return `an inline picture under ${inlineImageMinBytes} bytes (a logo or signature image)`;
  }
  return null;
}

/** winmail.dat wraps the files the sender attached: leaving it out loses them. */
const WRAPS_FILES = /winmail\.dat/;

export async function classifyPart(p: PartInfo, inlineImageMinBytes: number): Promise<PartDecision> {
  const kind = leftOutByKind(p, inlineImageMinBytes);
  if (kind) return { use: false, reason: kind, meant: WRAPS_FILES.test(kind) };
  if (p.bytes === 0) return { use: false, reason: "the attachment is empty", meant: true };

  const head = await headOf(p);
  const sniffed = sniffBuffer(head);
  const byExt = BY_EXT[path.extname(p.filename.toLowerCase())];
  const claimed: Family | undefined = BY_TYPE[p.contentType] ?? byExt?.family;

  if (claimed) {
    if (!contentMatches(claimed, sniffed, head)) {
      const seen = LABEL[sniffed ?? ""] ?? "something else";
      return {
        use: false,
        meant: true,
        reason: `it is declared as ${p.contentType === "application/octet-stream" ? path.extname(p.filename) : p.contentType} but its content is ${seen}`,
      };
    }
    const type =
      byExt && byExt.family === claimed
        ? byExt.type
        : FAMILY_TYPE[claimed] === "application/octet-stream"
          ? p.contentType
          : FAMILY_TYPE[claimed];
    return { use: true, contentType: type };
  }
  // No type we know was declared (octet-stream without a useful name): the content decides,
  // but only for formats with a strong signature.
  const fam = SNIFFED[sniffed ?? ""];
  if (fam && fam !== "text" && fam !== "rtf") return { use: true, contentType: FAMILY_TYPE[fam] };
  const what =
    sniffed === "image/gif" ? "GIF images" : `${p.contentType} (${LABEL[sniffed ?? ""] ?? "unknown content"})`;
  return { use: false, meant: true, reason: `${what} cannot be faxed; only ${ALLOWED}` };
}
