// What counts as reaching outside a document, for every format the stripper reads: a reference
// (URL, path), a field instruction, a spreadsheet formula, a style sheet. Each judge errs towards
// "outside": what it wrongly removes is a link or a live value nobody sees on a fax; what it
// wrongly keeps is a file of the gateway read for a stranger.

/** Field codes that read a file or URL (Word's INCLUDE is the old name of INCLUDETEXT). */
const FETCHING_FIELDS = new Set([
  "INCLUDEPICTURE",
  "INCLUDETEXT",
  "INCLUDE",
  "IMPORT",
  "LINK",
  "DDE",
  "DDEAUTO",
  "DATABASE",
]);

/**
 * The fetching field code named anywhere in an instruction, or null. Anywhere, not only first: a
 * field nested in another (`IF 1 = 1 "{INCLUDEPICTURE ...}"`) has its code in the middle, and a
 * reader that nests differently from us must still find nothing to fetch.
 */
export function fetchingField(instr: string): string | null {
  for (const w of instr.match(/[A-Za-z]+/g) ?? []) {
    const u = w.toUpperCase();
    if (FETCHING_FIELDS.has(u)) return u;
  }
  return null;
}

/** Spreadsheet functions that fetch a URL or another file's data, or build a reference to one. */
const FETCHING_FUNCTIONS = new Set(["WEBSERVICE", "FILTERXML", "DDE", "INDIRECT", "RTD", "CALL", "REGISTER"]);

/** Schemes a reader loads from; a value naming one inside quotes is a reference in a formula. */
const LOADING_SCHEME =
  /(?:file|https?|ftps?|sftp|smb|cifs|nfs|dav|davs|webdav|jar|zip|macro|slot|uno|private|service|ldaps?|gopher|imap|tftp|vnd\.sun\.star\.[a-z.]+):/i;

const QUOTED_SCHEME = new RegExp(`['"\\[(]\\s*${LOADING_SCHEME.source}`, "i");
const LEADING_SCHEME = new RegExp(`^${LOADING_SCHEME.source}`, "i");

/**
 * Why a spreadsheet formula reaches outside the document, or null: a fetching function (also with
 * a prefix, `_xlfn.WEBSERVICE`, `ORG.OPENOFFICE.WEBSERVICE`), a reference into another file
 * (`'file:///x'#$Sheet1.A1` in ODF, `[1]Sheet1!A1` or `'C:\[x.xlsx]S'!A1` in OOXML), a DDE
 * reference (`app|'topic'!item`).
 */
export function fetchingFormula(f: string): string | null {
  for (const m of f.matchAll(/([A-Za-z_][\w.]*)\s*\(/g)) {
    const name = m[1]!.split(".").pop()!.toUpperCase();
    if (FETCHING_FUNCTIONS.has(name)) return `a ${name} formula`;
  }
  // quoted names and paths: 'file:///x'#$Sheet1.A1 (ODF), '[1]S'!A1 and 'C:\d\[x.xlsx]S'!A1 (OOXML);
  // single quotes, which enclose sheet and file names, not "strings" ("/" as a separator is fine)
  if (
    /'\s*#|#\s*\$/.test(f) ||
    /\[\s*\d+\s*\]/.test(f) ||
    /\[[^\]]*[\\/][^\]]*\]/.test(f) ||
    /'\s*([a-z]:)?[\\/]/i.test(f) ||
    QUOTED_SCHEME.test(f)
  )
    return "a formula referring to another file";
  // a DDE reference (app|'topic'!item): no formula grammar uses '|' outside a string
  if (f.replace(/"[^"]*"/g, "").includes("|")) return "a DDE formula";
  return null;
}

/** Raster pictures in a data: URL are the document's own bytes; any other type can hold references. */
const RASTER_DATA = /^data:image\/(png|jpe?g|gif|bmp|webp|tiff?|x-icon)[;,]/i;

/**
 * A reference as a reader resolves it: ASCII whitespace and control characters removed (URL
 * parsers drop them: `fi\tle:` is `file:`), %-escapes decoded until nothing changes.
 */
export function normalizeRef(ref: string): string {
  let r = ref.replace(/[\u0000-\u0020\u007f]/g, "");
  for (let i = 0; i < 5; i++) {
    let d: string;
    try {
      d = decodeURIComponent(r);
    } catch {
      d = r.replace(/%([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    }
    if (d === r) break;
    r = d.replace(/[\u0000-\u0020\u007f]/g, "");
  }
  return r;
}

/**
 * A reference outside the package: a URL scheme (a data: URL only when it is a raster picture is
 * kept), an absolute or parent path, a UNC path.
 */
export function isExternal(ref: string): boolean {
  const r = normalizeRef(ref);
  if (r === "" || r.startsWith("#")) return false;
  if (/^data:/i.test(r)) return !RASTER_DATA.test(r);
  return /^[a-z][a-z0-9+.-]*:/i.test(r) || /^[/\\~]/.test(r) || r.includes("\\") || /(^|\/)\.\.(\/|$)/.test(r);
}

/**
 * A value that names a loading scheme at its start or inside quotes, or a UNC path: judged on every
 * attribute, whatever its name, so that an attribute nobody listed (`form:image-data`, a future
 * one) is caught too. Names of XML vocabularies (`http://schemas.openxmlformats.org/...`) are
 * identifiers, never loaded, and are passed by the caller.
 */
export function namesLoadingScheme(value: string): boolean {
  const r = normalizeRef(value);
  if (/^data:/i.test(r)) return !RASTER_DATA.test(r);
  return LEADING_SCHEME.test(r) || /^[a-z][a-z0-9+.-]*:\/\//i.test(r) || r.startsWith("\\\\") || QUOTED_SCHEME.test(r);
}

/** CSS as a reader sees it: comments gone, escapes (`\75rl(`, `\@import`) decoded. */
function cssPlain(css: string): string {
  return css
    .replace(/\/\*[\s\S]*?(\*\/|$)/g, "")
    .replace(/\\([0-9a-f]{1,6})\s?/gi, (_m, h: string) => {
      const c = parseInt(h, 16);
      return c > 0 && c <= 0x10ffff ? String.fromCodePoint(c) : "";
    })
    .replace(/\\([^\n])/g, "$1");
}

/**
 * Whether a style sheet or style value loads something outside the document: any `@import`, a
 * `url()`, `image-set()` or `src()` naming anything but a fragment or a raster data: URL, or a
 * quoted loading scheme.
 */
export function cssFetches(css: string): boolean {
  const c = cssPlain(css);
  if (/@import/i.test(c)) return true;
  for (const m of c.matchAll(/\b(?:url|src|image|image-set|-webkit-image-set)\s*\(\s*(['"]?)([^'")]*)\1/gi)) {
    const target = m[2]!.trim();
    if (target !== "" && !target.startsWith("#") && !RASTER_DATA.test(target)) return true;
  }
  return QUOTED_SCHEME.test(c);
}
