// Removes what an office document names outside itself before LibreOffice sees it: a linked
// picture, an included text, a linked section or sheet, an OLE or DDE link, an external cell
// reference, a WEBSERVICE formula, a style sheet import, an altChunk or subdocument is the sender
// choosing a file or URL for the gateway to read and fax back to them. What the document carries
// inside itself is kept; click-only hyperlinks of ODF and SVG are kept (never fetched).
// The kind is decided by content, not by name, because LibreOffice detects the format by content
// too: a zip (OOXML, ODF), a flat XML file (.fodt, Word 2003 XML) or RTF. Binary formats (.doc,
// .xls, .ppt) are not rewritten: the hardened profile and the sandbox are their protection.
// XML is read by a strict tokenizer that refuses what it cannot read, so no tag a parser would
// see escapes the judging; relationship parts go through an XML parser and are written anew
// (strip-rels.ts); RTF is read token by token (strip-rtf.ts).
import { strToU8, unzipSync, zipSync, type Zippable } from "fflate";
import { RelsError, isRelsPart, stripRels } from "./strip-rels.js";
import { RtfError, stripRtf } from "./strip-rtf.js";
import {
  cssFetches,
  fetchingField,
  fetchingFormula,
  isExternal,
  namesLoadingScheme,
  normalizeRef,
} from "./strip-judge.js";

export interface StripResult {
  data: Uint8Array;
  /** What was removed, by kind ("an external relationship (image)", "an INCLUDEPICTURE field"). */
  removed: string[];
  /** What the document is to the stripper: 'zip', 'xml', 'rtf' or 'binary' (left as it is). */
  kind: "zip" | "xml" | "rtf" | "binary";
}

/** The reason a document could not be rewritten (it is then refused, never converted as is). */
export class StripError extends Error {}

/** Unpacked size a package may reach: a zip bomb is refused before it fills the daemon's memory. */
const MAX_UNPACKED = 256 * 1024 * 1024;
/** Packages inside packages (an embedded .docx, an altChunk) are rewritten too, to this depth. */
const MAX_DEPTH = 3;

export function stripExternalReferences(data: Uint8Array): StripResult {
  const removed: string[] = [];
  const kind = kindOf(data);
  try {
    return { data: kind === "binary" ? data : stripBytes(data, kind, removed, 0), removed, kind };
  } catch (err) {
    if (err instanceof RtfError || err instanceof RelsError) throw new StripError(err.message);
    throw err;
  }
}

function kindOf(b: Uint8Array): StripResult["kind"] {
  if (b[0] === 0x50 && b[1] === 0x4b && b[2] === 0x03 && b[3] === 0x04) return "zip";
  const head = Buffer.from(b.subarray(0, 64))
    .toString("latin1")
    .replace(/^\ufeff|^\xef\xbb\xbf/, "")
    .trimStart();
  if (head.startsWith("{\\rtf")) return "rtf";
  if (head.startsWith("<")) return "xml";
  return "binary";
}

/** One document of a known kind, stripped (the bytes as they were when nothing was removed). */
function stripBytes(b: Uint8Array, kind: StripResult["kind"], removed: string[], depth: number): Uint8Array {
  if (kind === "zip") {
    if (depth > MAX_DEPTH) throw new StripError("it nests packages too deeply");
    return stripZip(b, removed, depth);
  }
  const before = removed.length;
  if (kind === "xml") {
    const x = readXml(b);
    const quiet = { changed: false };
    const text = stripXml(x.text, removed, depth, quiet);
    return removed.length > before || quiet.changed ? x.write(text) : b;
  }
  if (kind === "rtf") {
    const text = stripRtf(Buffer.from(b).toString("latin1"), removed);
    return removed.length > before ? Buffer.from(text, "latin1") : b;
  }
  return b;
}

/**
 * XML as text for the patterns below, and the way back to bytes. Read byte for byte (latin1), so
 * that whatever the declared encoding (UTF-8, ISO-8859-1...) every byte not rewritten is written
 * back as it was; the patterns are all ASCII. UTF-16 would hide them: it is read and written as UTF-8.
 */
function readXml(b: Uint8Array): { text: string; write: (text: string) => Uint8Array } {
  if ((b[0] === 0xff && b[1] === 0xfe) || (b[0] === 0xfe && b[1] === 0xff)) {
    const body = Buffer.from(b.subarray(2));
    if (b[0] === 0xfe) body.swap16();
    const text = body.toString("utf16le").replace(/(<\?xml[^>]*encoding\s*=\s*["'])utf-16(le|be)?(["'])/i, "$1UTF-8$3");
    return { text, write: (t) => strToU8(t) };
  }
  return { text: Buffer.from(b).toString("latin1"), write: (t) => Buffer.from(t, "latin1") };
}

function stripZip(data: Uint8Array, removed: string[], depth: number): Uint8Array {
  let total = 0;
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(data, {
      filter: (f) => {
        total += f.originalSize;
        if (f.originalSize > MAX_UNPACKED || total > MAX_UNPACKED)
          throw new StripError(`it unpacks to more than ${MAX_UNPACKED / 1_048_576} MB`);
        return true;
      },
    });
  } catch (err) {
    if (err instanceof StripError) throw err;
    throw new StripError("its zip structure could not be read");
  }
  const out: Zippable = {};
  for (const [name, bytes] of Object.entries(entries)) {
    if (name.endsWith("/")) continue;
    const inner = kindOf(bytes);
    // relationship parts are always written anew: the reader sees only what was judged
    const b = isRelsPart(name) ? relsPart(bytes, inner, name, removed) : stripBytes(bytes, inner, removed, depth + 1);
    // ODF wants its mimetype entry stored, not compressed
    out[name] =
      name === "mimetype"
        ? [b, { level: 0 }]
        : [b, { level: /\.(png|jpe?g|gif|tiff?|emf|wmf|bin|zip)$/i.test(name) ? 0 : 1 }];
  }
  // the package is written anew from what was read: LibreOffice sees only these entries
  return zipSync(out);
}

/** A relationship part as UTF-8 (OPC allows UTF-8 and UTF-16), rebuilt by strip-rels.ts. */
function relsPart(b: Uint8Array, kind: StripResult["kind"], name: string, removed: string[]): Uint8Array {
  let text = "";
  if (kind === "xml") {
    const utf16 = (b[0] === 0xff && b[1] === 0xfe) || (b[0] === 0xfe && b[1] === 0xff);
    const body = Buffer.from(utf16 ? b.subarray(2) : b);
    if (b[0] === 0xfe) body.swap16();
    text = body.toString(utf16 ? "utf16le" : "utf8").replace(/^\ufeff/, "");
    // no DTD or entity in a relationship part either; comments and CDATA read as a parser reads them
    text = normalizeXml(text, []);
  }
  return strToU8(stripRels(text, name, removed));
}

// ---- XML (OOXML parts, ODF parts, SVG, flat ODF, Word 2003 XML) ----

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function unescapeXml(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (m, e: string) => {
    if (e[0] === "#") {
      const code = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : "";
    }
    return ENTITIES[e] ?? m;
  });
}

const escapeText = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

const localName = (qname: string): string => qname.slice(qname.indexOf(":") + 1);

/** An XML name, as loosely as any reader takes one (non-ASCII letters included). */
const NAME = `[^\\s<>/=!?"'&]+`;
/** A start (or empty) tag; '<' cannot stand in an attribute value, which keeps this linear. */
const START = new RegExp(`<(${NAME})((?:\\s+${NAME}\\s*=\\s*(?:"[^"<]*"|'[^'<]*'))*)\\s*(/?)>`, "y");
const END = new RegExp(`</(${NAME})\\s*>`, "y");
const ATTR = new RegExp(`(${NAME})\\s*=\\s*(?:"([^"<]*)"|'([^'<]*)')`, "g");

interface Attr {
  name: string;
  /** The value with entities decoded, to judge it. */
  value: string;
  /** The value as written (quotes and entities included), to write it back unchanged. */
  raw: string;
}

function parseAttrs(s: string): Attr[] {
  return [...s.matchAll(ATTR)].map((m) => ({
    name: m[1]!,
    value: unescapeXml(m[2] ?? m[3] ?? ""),
    raw: m[0].slice(m[0].indexOf("=") + 1).trim(),
  }));
}

function renderTag(name: string, attrs: Attr[], selfClosing: string): string {
  return `<${name}${attrs.map((a) => ` ${a.name}=${a.raw}`).join("")}${selfClosing}>`;
}

/**
 * The XML as a parser reads it, in the shape the judging below needs: comments gone (they could
 * split an instruction a parser joins), CDATA turned into the escaped text it stands for, no
 * processing instruction after the prolog (and no xml-stylesheet one at all). Every '<' must
 * start something this reads; anything else is refused, never passed on half-read. An internal
 * DTD subset can define entities that expand into anything (or read files, XXE): refused; a bare
 * DOCTYPE (old OpenOffice manifests) is dropped.
 */
function normalizeXml(xml: string, removed: string[]): string {
  const out: string[] = [];
  let i = 0;
  let inProlog = true;
  for (;;) {
    const lt = xml.indexOf("<", i);
    if (lt < 0) {
      out.push(xml.slice(i));
      return out.join("");
    }
    out.push(xml.slice(i, lt));
    if (xml.startsWith("<!--", lt)) {
      const end = xml.indexOf("-->", lt + 4);
      if (end < 0) throw new StripError("its XML has an unclosed comment");
      i = end + 3;
    } else if (xml.startsWith("<![CDATA[", lt)) {
      const end = xml.indexOf("]]>", lt + 9);
      if (end < 0) throw new StripError("its XML has an unclosed CDATA section");
      out.push(escapeText(xml.slice(lt + 9, end)));
      i = end + 3;
    } else if (xml.startsWith("<?", lt)) {
      const end = xml.indexOf("?>", lt + 2);
      if (end < 0) throw new StripError("its XML could not be read");
      const pi = xml.slice(lt, end + 2);
      if (/^<\?xml-stylesheet/i.test(pi)) removed.push("a style sheet instruction");
      else if (inProlog) out.push(pi);
      i = end + 2;
    } else if (/^<!DOCTYPE\b/i.test(xml.slice(lt, lt + 10))) {
      const bare = /<!DOCTYPE\b[^[<>]*>/iy;
      bare.lastIndex = lt;
      if (!bare.exec(xml)) throw new StripError("it declares XML entities");
      removed.push("a document type declaration");
      i = bare.lastIndex;
    } else if (xml.startsWith("<!", lt)) {
      throw new StripError("it declares XML entities");
    } else {
      END.lastIndex = lt;
      START.lastIndex = lt;
      const m = END.exec(xml) ?? START.exec(xml);
      if (!m) throw new StripError("its XML could not be read");
      inProlog = false;
      out.push(m[0]);
      i = lt + m[0].length;
    }
  }
}

const VML_SHAPES = /^(shape|rect|roundrect|oval|line|polyline|curve|arc|group)$/;

/** A hyperlink target that is only a click away, never fetched. */
const SAFE_LINK = /^\s*(https?|mailto|ftp):/i;

/** Attributes whose value is a reference by definition (ODF, SVG, XHTML, VML, OOXML connections). */
const URL_ATTRS = new Set([
  "href",
  "src",
  "image-data",
  "codebase",
  "archive",
  "data",
  "poster",
  "srcset",
  "action",
  "formaction",
  "background",
  "base",
  "url",
  "sourceFile",
  "odcFile",
  "lowsrc",
  "dynsrc",
  "longdesc",
  "cite",
  "manifest",
]);

/** Attributes (by local name) that hold a formula or a cell range, which may name another file. */
const FORMULA_ATTR = /formula|condition|expression|range|address|^ref$|^sqref$/i;

/** Elements whose text is a spreadsheet formula (SpreadsheetML cells, names, rules; chart series). */
const FORMULA_ELEMENTS = new Set(["f", "formula", "formula1", "formula2", "definedName"]);

/** Names of XML vocabularies: identifiers, never loaded (graphicData uri, xmlns, Type...). */
const VOCABULARY =
  /^(https?:\/\/(schemas\.openxmlformats\.org|schemas\.microsoft\.com|purl\.oclc\.org|purl\.org|www\.w3\.org|openoffice\.org|www\.openoffice\.org|docs\.oasis-open\.org|schemas\.libreoffice\.org|ns\.adobe\.com)\/|urn:)/i;

/**
 * ODF document settings that would override the profile's "never update links". LibreOffice
 * writes it into every document, so its removal is not reported (it is not the sender's doing).
 */
const LINK_SETTINGS = new Set(["LinkUpdateMode"]);

interface Open {
  name: string;
  local: string;
  attrs: Attr[];
  /** Index in the output where this element's start tag is. */
  at: number;
  /** The element's text, while it has no child element. */
  text: string | null;
}

function stripXml(input: string, removed: string[], depth: number, quiet: { changed: boolean }): string {
  let xml = normalizeXml(input, removed);
  xml = stripFields(xml, removed);
  // an SVG picture (or XHTML) resolves a relative reference against where it came from: in it only
  // a fragment (#id) or a raster data: URL is its own. Known by its root element, not by a
  // namespace declared somewhere (LibreOffice declares XHTML's in every content.xml).
  const root = /^(?:\ufeff|\xef\xbb\xbf)?(?:\s|<\?[\s\S]*?\?>)*<([^\s/>]+)/.exec(xml)?.[1];
  const svg = root !== undefined && /^(svg|html)$/i.test(localName(root));
  const out: string[] = [];
  const stack: Open[] = [];
  let i = 0;
  for (;;) {
    const lt = xml.indexOf("<", i);
    const text = xml.slice(i, lt < 0 ? undefined : lt);
    out.push(text);
    const top = stack.at(-1);
    if (top && top.text !== null) top.text += text;
    if (lt < 0) break;
    if (xml.startsWith("<?", lt)) {
      const end = xml.indexOf("?>", lt) + 2;
      out.push(xml.slice(lt, end));
      i = end;
      continue;
    }
    END.lastIndex = lt;
    const end = END.exec(xml);
    if (end) {
      i = END.lastIndex;
      const open = stack.pop();
      if (open) {
        const content = contentRule(open, removed, depth);
        if (content !== null) quiet.changed = true;
        if (content === "drop") {
          out.length = open.at;
          continue;
        }
        if (content !== null) {
          out.length = open.at + 1;
          out.push(content);
        }
      }
      out.push(end[0]);
      continue;
    }
    START.lastIndex = lt;
    const m = START.exec(xml)!;
    i = START.lastIndex;
    const [whole, name, attrText, selfClosing] = m as unknown as [string, string, string, string];
    if (top) top.text = null;
    const local = localName(name);
    const attrs = attrText ? parseAttrs(attrText) : [];
    const kept = judgeAttrs(local, attrs, svg, removed);
    out.push(kept === attrs ? whole : renderTag(name, kept, selfClosing));
    if (!selfClosing) stack.push({ name, local, attrs: kept, at: out.length - 1, text: "" });
  }
  return out.join("");
}

/** An element's new content when its text reaches outside, "drop" to remove it whole, else null. */
function contentRule(e: Open, removed: string[], depth: number): string | "drop" | null {
  if (e.text === null) return null;
  const text = unescapeXml(e.text);
  // a cell keeps the value it was saved with; only the formula that would fetch goes
  if (FORMULA_ELEMENTS.has(e.local)) {
    const why = fetchingFormula(text);
    if (!why) return null;
    removed.push(why);
    return "drop";
  }
  // a style sheet (SVG, XHTML in a foreignObject) that imports or loads anything
  if (e.local === "style" && cssFetches(text)) {
    removed.push("an external reference in a style sheet");
    return "";
  }
  if (e.local === "config-item" && LINK_SETTINGS.has(e.attrs.find((a) => localName(a.name) === "name")?.value ?? ""))
    return "drop";
  // pictures and objects carried as base64 in flat XML are documents too (an SVG with a link)
  if (e.local === "binary-data") {
    const bytes = Buffer.from(text.replace(/\s+/g, ""), "base64");
    const kind = kindOf(bytes);
    if (kind === "binary") return null;
    const before = removed.length;
    const stripped = stripBytes(bytes, kind, removed, depth + 1);
    return removed.length > before ? Buffer.from(stripped).toString("base64") : null;
  }
  return null;
}

/** The attributes kept (the same array when none goes). */
function judgeAttrs(local: string, attrs: Attr[], svg: boolean, removed: string[]): Attr[] {
  let changed = false;
  const drop = (why: string): false => {
    removed.push(why);
    changed = true;
    return false;
  };
  // OOXML relationships outside a relationship part (flat OPC): an outside target goes
  if (local === "Relationship") {
    const target = attrs.find((a) => a.name === "Target")?.value ?? "";
    const mode = attrs.find((a) => a.name === "TargetMode")?.value.trim() ?? "";
    if ((mode !== "" && mode !== "Internal") || isExternal(target)) {
      const type = attrs.find((a) => a.name === "Type")?.value ?? "";
      removed.push(`an external relationship (${type.split("/").pop() || "of no type"})`);
      return attrs
        .map((a) => (a.name === "Target" ? { ...a, value: "NULL", raw: '"NULL"' } : a))
        .filter((a) => a.name !== "TargetMode");
    }
    return attrs;
  }
  const kept = attrs.filter((a) => {
    const an = localName(a.name);
    if (a.name === "xmlns" || a.name.startsWith("xmlns:")) return true;
    if (URL_ATTRS.has(an)) {
      const ref = normalizeRef(a.value);
      const outside = svg ? ref !== "" && !ref.startsWith("#") && isExternalInSvg(ref) : isExternal(a.value);
      if (!outside) return true;
      // hyperlinks: ODF, SVG and XHTML <a>, and a VML shape's own (unprefixed) href; any other
      // reference (draw:image, text:section-source, form:image-data, v:imagedata, <use>...) is loaded
      const isLink = local === "a" || (a.name === "href" && VML_SHAPES.test(local));
      if (isLink && SAFE_LINK.test(a.value)) return true;
      return drop(`an external reference (${local})`);
    }
    // ODF DDE sources: the application/topic/item triple names another program's data
    if (/^dde-(application|topic|item)$/.test(an) || /^dde(Service|Topic)$/.test(an))
      return drop(`a DDE link (${local})`);
    // Word 2003 XML and OOXML fields written as an attribute
    if (an === "instr") {
      const code = fetchingField(a.value);
      return code ? drop(`a ${code} field`) : true;
    }
    if ((an === "style" || /url\s*\(|@import|\\/i.test(a.value)) && cssFetches(a.value))
      return drop(`an external reference in a style (${local})`);
    if (FORMULA_ATTR.test(an) || /^\s*(of|oooc|ooow|msoxl)?:?=/.test(a.value)) {
      const why = fetchingFormula(a.value);
      if (why) return drop(why);
    }
    // whatever the attribute is called: a value naming a scheme something is loaded from
    if (!VOCABULARY.test(a.value.trim()) && namesLoadingScheme(a.value))
      return drop(`an external reference (${local})`);
    return true;
  });
  return changed ? kept : attrs;
}

/** In SVG: anything but a raster data: URL is outside (a relative name is a file beside it). */
function isExternalInSvg(ref: string): boolean {
  return !/^data:image\/(png|jpe?g|gif|bmp|webp|tiff?|x-icon)[;,]/i.test(ref);
}

/**
 * Complex fields (w:fldChar begin / w:instrText... / separate / end): the instruction may be split
 * over many instrText elements and hold nested fields, so it is put together per field before it
 * is judged, each field's text also counting for the fields around it; the instruction of a
 * fetching field is blanked, its shown result kept.
 */
function stripFields(xml: string, removed: string[]): string {
  const token =
    /<([\w.-]+:)?fldChar\b[^<>]*?fldCharType\s*=\s*["'](begin|separate|end)["'][^<>]*>|<([\w.-]+:)?(?:instrText|delInstrText)\b[^<>]*>([^<]*)<\/([\w.-]+:)?(?:instrText|delInstrText)\s*>/g;
  interface Field {
    /** The field's own instruction, and the same with its nested fields' instructions in place. */
    text: string;
    all: string;
    pieces: Array<{ start: number; end: number }>;
    inInstr: boolean;
  }
  const stack: Field[] = [];
  const blank: Array<{ start: number; end: number }> = [];
  const judge = (f: Field): void => {
    const code = fetchingField(f.text) ?? fetchingField(f.all);
    if (code) {
      removed.push(`a ${code} field`);
      blank.push(...f.pieces);
    }
  };
  for (const m of xml.matchAll(token)) {
    if (m[2]) {
      if (m[2] === "begin") stack.push({ text: "", all: "", pieces: [], inInstr: true });
      else if (m[2] === "separate") {
        const f = stack.at(-1);
        if (f?.inInstr) {
          f.inInstr = false;
          judge(f);
        }
      } else {
        const f = stack.pop();
        if (f?.inInstr) judge(f);
      }
    } else {
      const body = m[4] ?? "";
      const piece = { start: m.index + m[0].indexOf(">") + 1, end: m.index + m[0].lastIndexOf("<") };
      const text = unescapeXml(body);
      const f = stack.findLast((x) => x.inInstr);
      if (f) {
        // the text is the innermost field's, and part of every field whose instruction holds it
        f.text += text;
        for (const g of stack) if (g.inInstr) g.all += text;
        f.pieces.push(piece);
      } else {
        // an instruction outside any field: judged alone
        const code = fetchingField(text);
        if (code) {
          removed.push(`a ${code} field`);
          blank.push(piece);
        }
      }
    }
  }
  for (const f of stack) if (f.inInstr) judge(f);
  if (blank.length === 0) return xml;
  blank.sort((a, b) => b.start - a.start);
  for (const p of blank) xml = xml.slice(0, p.start) + xml.slice(p.end);
  return xml;
}
