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
export const DISCLAIMER = [
  /^\W*(confidentiality|privacy|legal)\s+(notice|statement|disclaimer|warning)\b/i,
  /^\W*disclaimer\W*$/i,
  /^\W*disclaimer:/i,
  /^\W*(this|the)\s+(e-?mail|message|communication|transmission)\b.{0,80}\b(confidential|privileged|intended (only|solely) for)\b/i,
  /^\W*the information (contained )?in this (e-?mail|message|communication|transmission)\b/i,
  /^\W*if you (have )?received this (e-?mail|message|communication|transmission) in error\b/i,
  /^\W*sent from my (iphone|ipad|android|phone|mobile|blackberry|galaxy)/i,
];

/**
 * Whether a line opens such boilerplate: the expressions of DISCLAIMER as one, tried once a line
 * instead of seven times (each starts with `^\W*`, taken once in front of their alternation:
 * the same lines match). On the lines a 100 KB text mail's notes are read from, seven tries a
 * line were most of coverNotes' time (docs/bench.md, "one expression a line").
 */
const OPENS_DISCLAIMER = new RegExp(
  `^\\W*(?:${DISCLAIMER.map((re) => {
    if (!re.source.startsWith("^\\W*") || re.flags !== "i")
      throw new Error(`DISCLAIMER: ${re} must start with ^\\W* and be /i`);
    return `(?:${re.source.slice(4)})`;
  }).join("|")})`,
  "i",
);

/**
 * The mail's text as a cover page's notes: without the signature (from a "-- " line, the
 * separator of RFC 3676) and without a trailing disclaimer block. `atMost`: once the notes are
 * known to be longer than that many characters the rest is not read, and what is returned is the
 * notes' exact beginning, still longer than `atMost` (a 100 KB text-only mail is a page, not
 * notes, and its lines are not each tried against every disclaimer).
 */
export function coverNotes(text: string, atMost = Number.POSITIVE_INFINITY): string {
  const src = text.includes("\r\n") ? text.replace(/\r\n/g, "\n") : text;
  let kept = 0;
  let firstText = -1;
  let disclaimerSeen = false;
  for (let pos = 0; ; ) {
    const nl = src.indexOf("\n", pos);
    const end = nl < 0 ? src.length : nl;
    const line = src.slice(pos, end);
    if (line === "-- " || line === "--") break;
    // only the first notice line counts, and only after some text: a mail that is all notice keeps its words
    if (!disclaimerSeen && OPENS_DISCLAIMER.test(line)) {
      disclaimerSeen = true;
      if (firstText >= 0) break;
    }
    kept = end;
    const content = line.trimEnd();
    if (content.trim() !== "") {
      if (firstText < 0) firstText = pos + (line.length - line.trimStart().length);
      if (pos + content.length - firstText > atMost) break;
    }
    if (nl < 0) break;
    pos = nl + 1;
  }
  return src.slice(0, kept).trim();
}
