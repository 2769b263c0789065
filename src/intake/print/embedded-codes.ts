// Fax instructions typed into the document itself, the way desktop fax drivers have always
// done it: "@@FAX +1 555 123 4567@@", "@@TO Acme Billing@@", "@@SUBJECT Invoice 42@@",
// "@@COVER on@@". A document naming different numbers on different pages is ambiguous (was it
// meant to be split?), so it is refused unless "@@ALL@@" says "send the whole thing to all".

export interface EmbeddedCodes {
  /** Raw numbers in order of appearance, duplicates removed. */
  fax: string[];
  /** The page (1-based) each raw number was first seen on. */
  faxPages: number[];
  to?: string;
  subject?: string;
  cover?: boolean;
  /** "@@ALL@@": every number gets the whole document, wherever the codes are. */
  all: boolean;
  /** Codes whose value could not be read, for the reason file. */
  problems: string[];
}

const CODE = /@@\s*(FAX|TO|SUBJECT|COVER|ALL)\b([^@]{0,200}?)@@/gi;

export function hasAnyCode(codes: EmbeddedCodes): boolean {
  return (
    codes.fax.length > 0 ||
    codes.to !== undefined ||
    codes.subject !== undefined ||
    codes.cover !== undefined ||
    codes.all
  );
}

/** Reads codes from the text of each page (a plain text file is one page per form feed). */
export function parseEmbeddedCodes(pages: string[]): EmbeddedCodes {
  const out: EmbeddedCodes = { fax: [], faxPages: [], all: false, problems: [] };
  pages.forEach((text, i) => {
    for (const m of text.matchAll(CODE)) {
      const kind = m[1]!.toUpperCase();
      const value = m[2]!.replace(/\s+/g, " ").trim();
      switch (kind) {
        case "FAX":
          if (!value) out.problems.push("@@FAX@@ without a number");
          else if (!out.fax.includes(value)) {
            out.fax.push(value);
            out.faxPages.push(i + 1);
          }
          break;
        case "TO":
          if (value) out.to ??= value;
          break;
        case "SUBJECT":
          if (value) out.subject ??= value;
          break;
        case "COVER": {
          const v = value.toLowerCase();
          if (v === "on" || v === "yes" || v === "true") out.cover ??= true;
          else if (v === "off" || v === "no" || v === "false") out.cover ??= false;
          else out.problems.push(`@@COVER ${value}@@ is not "on" or "off"`);
          break;
        }
        case "ALL":
          out.all = true;
          break;
      }
    }
  });
  return out;
}

/** Splits a plain text document into pages the way a printer would (form feed). */
export function textPages(text: string): string[] {
  return text.split("\f");
}

/** Non-null when the numbers are on different pages and nothing says what to do about it. */
export function ambiguity(codes: EmbeddedCodes): string | null {
  if (codes.all || codes.fax.length < 2) return null;
  const pages = new Set(codes.faxPages);
  if (pages.size < 2) return null;
  return `the document names different fax numbers on different pages (${codes.fax
    .map((n, i) => `${n} on page ${codes.faxPages[i]}`)
    .join(", ")}); put all @@FAX@@ codes on one page, or add @@ALL@@ to send the whole document to every number`;
}
