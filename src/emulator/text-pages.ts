// Plain text as fax pages: monospace, wrapped at word boundaries, page breaks on form feeds and
// full pages. Standard PDF fonts only know WinAnsi, so anything else becomes "?" instead of a crash.

const WIN_ANSI_EXTRA = new Set("€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ");

export function toWinAnsi(s: string): string {
  let out = "";
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0x3f;
    if ((c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c <= 0xff) || WIN_ANSI_EXTRA.has(ch)) out += ch;
    else out += "?";
  }
  return out;
}

/** Decodes bytes as UTF-8, or Latin-1 when they are not valid UTF-8. */
export function decodeText(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes).replace(/^\uFEFF/, "");
  } catch {
    return Buffer.from(bytes).toString("latin1");
  }
}

function expandTabs(line: string): string {
  let out = "";
  for (const ch of line) {
    if (ch === "\t") out += " ".repeat(8 - (out.length % 8));
    else out += ch;
  }
  return out;
}

function wrapLine(line: string, width: number): string[] {
  if (line.length <= width) return [line];
  const out: string[] = [];
  let rest = line;
  while (rest.length > width) {
    let cut = rest.lastIndexOf(" ", width);
    if (cut <= 0) cut = width;
    out.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).replace(/^ /, "");
  }
  out.push(rest);
  return out;
}

/** Splits text into pages of at most `linesPerPage` lines of at most `width` characters. */
export function paginateText(text: string, width: number, linesPerPage: number): string[][] {
  const pages: string[][] = [];
  let page: string[] = [];
  const sections = text.replace(/\r\n?/g, "\n").split("\f");
  sections.forEach((section, i) => {
    if (i > 0) {
      pages.push(page);
      page = [];
    }
    const lines = section.split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    for (const raw of lines) {
      const clean = toWinAnsi(expandTabs(raw).replace(/[\x00-\x1f\x7f]/g, " "));
      for (const l of wrapLine(clean, width)) {
        if (page.length >= linesPerPage) {
          pages.push(page);
          page = [];
        }
        page.push(l);
      }
    }
  });
  pages.push(page);
  return pages;
}
