// A Content-Disposition header for a file name of any script (RFC 6266): a header carries only
// Latin-1, so a name outside it (Cyrillic, CJK, an emoji) in a plain filename="..." makes Node
// refuse the whole answer (ERR_INVALID_CHAR). The name goes in filename*=UTF-8''... (RFC 8187),
// with an ASCII filename="..." beside it for the few clients that read only that one.

/** `inline` or `attachment` with the name, safe for any name a sender chose. */
export function contentDisposition(kind: "inline" | "attachment", name: string): string {
  const clean = name.replace(/[\u0000-\u001f\u007f]/g, "").trim() || "document";
  return `${kind}; filename="${asciiFallback(clean)}"; filename*=UTF-8''${encodeRfc8187(clean)}`;
}

/** Accents dropped (é -> e), anything else outside printable ASCII and the quoting characters -> _. */
function asciiFallback(name: string): string {
  return name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^\x20-\x7e]|["\\%]/g, "_");
}

/** Percent-encoding of every byte outside RFC 8187's attr-char. */
function encodeRfc8187(name: string): string {
  return encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
