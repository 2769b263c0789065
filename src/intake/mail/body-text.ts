// The readable text of a mail's body: its text part, or its HTML part turned into text.
import { convert } from "html-to-text";

export function bodyText(mail: { text: string; html: string }): string {
  if (mail.text.trim()) return mail.text.trim();
  if (mail.html.trim()) {
    try {
      return convert(mail.html, {
        wordwrap: false,
        selectors: [
          { selector: "img", format: "skip" },
          { selector: "a", options: { ignoreHref: true } },
        ],
      }).trim();
    } catch {
      return "";
    }
  }
  return "";
}

// Lines that open the boilerplate a mail program or a company appends: a confidentiality notice
// is no note to the fax's recipient, and on a cover page it is the sender's footer, twice.
const DISCLAIMER = [
  /^\W*(confidentiality|privacy|legal)\s+(notice|statement|disclaimer|warning)\b/i,
  /^\W*disclaimer\W*$/i,
  /^\W*disclaimer:/i,
  /^\W*(this|the)\s+(e-?mail|message|communication|transmission)\b.{0,80}\b(confidential|privileged|intended (only|solely) for)\b/i,
  /^\W*the information (contained )?in this (e-?mail|message|communication|transmission)\b/i,
  /^\W*if you (have )?received this (e-?mail|message|communication|transmission) in error\b/i,
  /^\W*sent from my (iphone|ipad|android|phone|mobile|blackberry|galaxy)/i,
];

/**
 * The mail's text as a cover page's notes: without the signature (from a "-- " line, the
 * separator of RFC 3676) and without a trailing disclaimer block.
 */
export function coverNotes(text: string): string {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  let end = lines.findIndex((l) => l === "-- " || l === "--");
  if (end < 0) end = lines.length;
  const disclaimer = lines.slice(0, end).findIndex((l) => DISCLAIMER.some((re) => re.test(l)));
  // only a block after some text: a mail that is all notice keeps its words
  if (disclaimer > 0 && lines.slice(0, disclaimer).some((l) => l.trim() !== "")) end = disclaimer;
  return lines.slice(0, end).join("\n").trim();
}
