// One description of a mail's content, rendered twice: as plain text and as HTML. Every value is
// escaped in one place here, so a fax number, file name or service error text can never inject
// markup into the HTML part.

export type Block =
  | { kind: "para"; text: string }
  | { kind: "heading"; text: string }
  | { kind: "fields"; rows: Array<[label: string, value: string | null | undefined]> }
  | { kind: "list"; items: string[] };

/**
 * Values from outside (file names, subjects, the CSID, service texts) may carry raw CR, LF and
 * other control characters: shown on one line, they can never forge lines in the mail.
 */
export function oneLineText(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, " ");
}

/** Every value of every block made safe once, before either rendering. */
function clean(blocks: Block[]): Block[] {
  return blocks.map((b): Block => {
    // paragraphs are sentences: a line break in one can only have come from a value in it
    if (b.kind === "para") return { kind: "para", text: oneLineText(b.text) };
    if (b.kind === "heading") return { kind: "heading", text: oneLineText(b.text) };
    if (b.kind === "list") return { kind: "list", items: b.items.map(oneLineText) };
    return {
      kind: "fields",
      rows: b.rows.map(([l, v]): [string, string | null | undefined] => [
        oneLineText(l),
        v == null ? v : oneLineText(v),
      ]),
    };
  });
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

function present(rows: Array<[string, string | null | undefined]>): Array<[string, string]> {
  return rows.filter((r): r is [string, string] => r[1] != null && r[1] !== "");
}

export function renderText(blocks: Block[]): string {
  const out: string[] = [];
  for (const b of clean(blocks)) {
    if (b.kind === "para") out.push(b.text, "");
    else if (b.kind === "heading") out.push(b.text, "-".repeat(Math.min(b.text.length, 72)), "");
    else if (b.kind === "list") out.push(...b.items.map((i) => `  - ${i}`), "");
    else {
      const rows = present(b.rows);
      const width = Math.max(0, ...rows.map(([l]) => l.length)) + 1;
      out.push(...rows.map(([l, v]) => `  ${`${l}:`.padEnd(width)} ${v}`), "");
    }
  }
  return `${out.join("\n").trimEnd()}\n`;
}

export function renderHtml(title: string, blocks: Block[]): string {
  const out: string[] = [];
  for (const b of clean(blocks)) {
    if (b.kind === "para") out.push(`<p>${escapeHtml(b.text)}</p>`);
    else if (b.kind === "heading") out.push(`<h3 style="margin:1.2em 0 0.4em">${escapeHtml(b.text)}</h3>`);
    else if (b.kind === "list") out.push(`<ul>${b.items.map((i) => `<li>${escapeHtml(i)}</li>`).join("")}</ul>`);
    else {
      const rows = present(b.rows)
        .map(
          ([l, v]) =>
            `<tr><th style="text-align:left;padding:2px 12px 2px 0;font-weight:normal;color:#555">${escapeHtml(l)}</th><td style="padding:2px 0">${escapeHtml(v)}</td></tr>`,
        )
        .join("");
      out.push(`<table style="border-collapse:collapse">${rows}</table>`);
    }
  }
  return [
    "<!DOCTYPE html>",
    `<html><head><meta charset="utf-8"><title>${escapeHtml(oneLineText(title))}</title></head>`,
    '<body style="font-family:sans-serif;font-size:14px;line-height:1.4">',
    ...out,
    "</body></html>",
    "",
  ].join("\n");
}
