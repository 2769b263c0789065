// Removes what an office document names outside itself before LibreOffice sees it: a linked
// picture, an included text, a linked section, an OLE link, an altChunk or subdocument is the
// sender choosing a file or URL for the gateway to read and fax back to them. What the document
// carries inside itself is kept; hyperlinks are kept (a click target is never fetched).
// The kind is decided by content, not by name, because LibreOffice detects the format by content
// too: a zip (OOXML, ODF), a flat XML file (.fodt, Word 2003 XML) or RTF. Binary formats (.doc,
// .xls, .ppt) are not rewritten: the hardened profile and the sandbox are their protection.
import { strToU8, unzipSync, zipSync, type Zippable } from "fflate";

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

/** Field codes that read a file or URL (Word's INCLUDE is the old name of INCLUDETEXT). */
const FETCHING_FIELDS = /^(INCLUDEPICTURE|INCLUDETEXT|INCLUDE|IMPORT|LINK|DDE|DDEAUTO|DATABASE)$/i;

export function stripExternalReferences(data: Uint8Array): StripResult {
  const removed: string[] = [];
  const kind = kindOf(data);
  if (kind === "zip") return { data: stripZip(data, removed, 0), removed, kind };
  if (kind === "xml") {
    const x = readXml(data);
    return { data: x.write(stripXml(x.text, removed)), removed, kind };
  }
  if (kind === "rtf")
    return { data: Buffer.from(stripRtf(Buffer.from(data).toString("latin1"), removed), "latin1"), removed, kind };
  return { data, removed, kind };
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
    let b = bytes;
    const inner = kindOf(b);
    if (inner === "xml") {
      const before = removed.length;
      const x = readXml(b);
      const text = stripXml(x.text, removed);
      if (removed.length > before) b = x.write(text);
    } else if (inner === "zip" && depth < MAX_DEPTH) {
      b = stripZip(b, removed, depth + 1);
    } else if (inner === "zip") {
      throw new StripError("it nests packages too deeply");
    } else if (inner === "rtf") {
      const before = removed.length;
      const text = stripRtf(Buffer.from(b).toString("latin1"), removed);
      if (removed.length > before) b = Buffer.from(text, "latin1");
    }
    // ODF wants its mimetype entry stored, not compressed
    out[name] =
      name === "mimetype"
        ? [b, { level: 0 }]
        : [b, { level: /\.(png|jpe?g|gif|tiff?|emf|wmf|bin|zip)$/i.test(name) ? 0 : 1 }];
  }
  // the package is written anew from what was read: LibreOffice sees only these entries
  return zipSync(out);
}

// ---- XML (OOXML parts, ODF parts, flat ODF, Word 2003 XML) ----

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

const localName = (qname: string): string => qname.slice(qname.indexOf(":") + 1);

/** A start (or empty) tag, with its attributes; `>` inside a quoted value does not end it. */
// '<' cannot stand in an attribute value: excluding it keeps every pattern linear on hostile input
const TAG = /<([A-Za-z_][\w.:-]*)((?:\s+[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/g;
const ATTR = /([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')/g;

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

/** A reference outside the package: a URL scheme, an absolute or parent path, a UNC path. */
function isExternal(ref: string): boolean {
  let r = ref.trim();
  try {
    r = decodeURIComponent(r);
  } catch {
    // a malformed escape is judged as written
  }
  if (r === "" || r.startsWith("#")) return false;
  return /^[a-z][a-z0-9+.-]*:/i.test(r) || /^[/\\~]/.test(r) || r.includes("\\") || /(^|\/)\.\.(\/|$)/.test(r);
}

const VML_SHAPES = /^(shape|rect|roundrect|oval|line|polyline|curve|arc|group)$/;

/** A hyperlink target that is only a click away, never fetched. */
const SAFE_LINK = /^\s*(https?|mailto|ftp):/i;

function stripXml(xml: string, removed: string[]): string {
  // an internal DTD subset can define entities that expand into any of the patterns below (or read
  // files, XXE): such a document is refused; a bare DOCTYPE (old OpenOffice manifests) is dropped
  xml = xml.replace(/<!DOCTYPE\b[^[<>]*>/gi, () => {
    removed.push("a document type declaration");
    return "";
  });
  if (/<!DOCTYPE/i.test(xml) || /<!ENTITY/i.test(xml)) throw new StripError("it declares XML entities");
  // CDATA can hide an instruction from the patterns: it becomes the escaped text it stands for
  xml = unwrapCdata(xml);
  xml = stripFields(xml, removed);
  return xml.replace(TAG, (whole, name: string, attrText: string, selfClosing: string) => {
    const local = localName(name);
    if (!attrText) return whole;
    const attrs = parseAttrs(attrText);
    let changed = false;
    // OOXML relationships: an external target of anything but a hyperlink is dropped
    if (local === "Relationship") {
      const target = attrs.find((a) => a.name === "Target")?.value ?? "";
      const mode = attrs.find((a) => a.name === "TargetMode")?.value ?? "";
      const type = attrs.find((a) => a.name === "Type")?.value ?? "";
      const hyperlink = /\/hyperlink$/i.test(type) && SAFE_LINK.test(target);
      if (!hyperlink && (/^\s*external\s*$/i.test(mode) || isExternal(target))) {
        removed.push(`an external relationship (${type.split("/").pop() || "of no type"})`);
        const kept = attrs
          .map((a) => (a.name === "Target" ? { ...a, value: "NULL", raw: '"NULL"' } : a))
          .filter((a) => a.name !== "TargetMode");
        return renderTag(name, kept, selfClosing);
      }
      return whole;
    }
    const out = attrs.filter((a) => {
      const an = localName(a.name);
      // ODF xlink:href, VML src/href, HTML-ish href: only a hyperlink may point outside
      if (an === "href" || an === "src") {
        if (!isExternal(a.value)) return true;
        // hyperlinks: ODF and SVG <a>, and a VML shape's own (unprefixed) href; any other href or
        // src (draw:image, text:section-source, v:imagedata, svg:image...) is something loaded
        const isLink = local === "a" || (a.name === "href" && VML_SHAPES.test(local));
        if (isLink && SAFE_LINK.test(a.value)) return true;
        removed.push(`an external reference (${local})`);
        changed = true;
        return false;
      }
      // ODF DDE sources: the application/topic/item triple names another program's data
      if (/^dde-(application|topic|item)$/.test(an) || /^dde(Service|Topic)$/.test(an)) {
        removed.push(`a DDE link (${local})`);
        changed = true;
        return false;
      }
      // Word 2003 XML and OOXML fields written as an attribute
      if (an === "instr" && fetchingField(a.value)) {
        removed.push(`a ${fieldCode(a.value)} field`);
        changed = true;
        return false;
      }
      return true;
    });
    return changed ? renderTag(name, out, selfClosing) : whole;
  });
}

/** `<![CDATA[a<b]]>` -> `a&lt;b` (the same characters to any XML reader). */
function unwrapCdata(xml: string): string {
  let out = "";
  let i = 0;
  for (;;) {
    const open = xml.indexOf("<![CDATA[", i);
    if (open < 0) return out + xml.slice(i);
    const close = xml.indexOf("]]>", open + 9);
    if (close < 0) throw new StripError("its XML has an unclosed CDATA section");
    out +=
      xml.slice(i, open) +
      xml
        .slice(open + 9, close)
        .replace(/&/g, "&amp;")
        .replace(/</g, "&lt;")
        .replace(/>/g, "&gt;");
    i = close + 3;
  }
}

/** The field code of an instruction: `INCLUDEPICTURE "x" \d` -> INCLUDEPICTURE. */
function fieldCode(instr: string): string {
  return (/^\s*([A-Za-z]+)/.exec(instr)?.[1] ?? "").toUpperCase();
}

function fetchingField(instr: string): boolean {
  return FETCHING_FIELDS.test(fieldCode(instr));
}

/**
 * Complex fields (w:fldChar begin / w:instrText... / separate / end): the instruction may be split
 * over many instrText elements and hold nested fields, so it is put together per field before it
 * is judged; the instruction of a fetching field is blanked, its shown result kept.
 */
function stripFields(xml: string, removed: string[]): string {
  const token =
    /<([\w.-]+:)?fldChar\b[^<>]*?fldCharType\s*=\s*["'](begin|separate|end)["'][^<>]*>|<([\w.-]+:)?instrText\b[^<>]*>([^<]*)<\/([\w.-]+:)?instrText>/g;
  interface Field {
    text: string;
    pieces: Array<{ start: number; end: number }>;
    inInstr: boolean;
  }
  const stack: Field[] = [];
  const blank: Array<{ start: number; end: number }> = [];
  const judge = (f: Field): void => {
    if (fetchingField(f.text)) {
      removed.push(`a ${fieldCode(f.text)} field`);
      blank.push(...f.pieces);
    }
  };
  for (const m of xml.matchAll(token)) {
    if (m[2]) {
      if (m[2] === "begin") stack.push({ text: "", pieces: [], inInstr: true });
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
        f.text += text;
        f.pieces.push(piece);
      } else if (fetchingField(text)) {
        // an instruction outside any field: judged alone
        removed.push(`a ${fieldCode(text)} field`);
        blank.push(piece);
      }
    }
  }
  for (const f of stack) if (f.inInstr) judge(f);
  if (blank.length === 0) return xml;
  blank.sort((a, b) => b.start - a.start);
  for (const p of blank) xml = xml.slice(0, p.start) + xml.slice(p.end);
  return xml;
}

// ---- RTF ----

/** The plain text of an RTF fragment: escapes decoded, control words dropped. */
function rtfText(s: string): string {
  return s
    .replace(/\\'([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
    .replace(/\\u(-?\d+) ?\??/g, (_m, n: string) => String.fromCharCode((Number(n) + 65536) % 65536))
    .replace(/\\([\\{}])/g, "$1")
    .replace(/\\[a-z]+-?\d* ?/gi, "")
    .replace(/[{}]/g, "");
}

/** The index just past the group that opens at `start` ('{'), skipping escapes and \binN data. */
function groupEnd(s: string, start: number): number {
  let depth = 0;
  for (let i = start; i < s.length; i++) {
    const c = s[i];
    if (c === "\\") {
      const bin = /^\\bin(\d+) ?/.exec(s.slice(i, i + 20));
      if (bin) i += bin[0].length + Number(bin[1]) - 1;
      else i += 1;
    } else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i + 1;
  }
  return s.length;
}

function stripRtf(rtf: string, removed: string[]): string {
  // an object that is a link (\objautlink, \objlink) becomes one that is embedded: its shown result
  // is kept and nothing is read from the file it named
  rtf = rtf.replace(/\\obj(autlink|link)(?![a-z])/g, () => {
    removed.push("an OLE link");
    return "\\objemb";
  });
  let out = "";
  let i = 0;
  const dest = /\{\s*(?:\\\*\s*)?\\(fldinst|sv|template|datafield)(?![a-z])/g;
  for (;;) {
    dest.lastIndex = i;
    const m = dest.exec(rtf);
    if (!m) break;
    const word = m[1]!;
    const end = groupEnd(rtf, m.index);
    const group = rtf.slice(m.index, end);
    const text = rtfText(group.slice(m[0].length, -1));
    let replacement = group;
    if (word === "fldinst" && fetchingField(text)) {
      removed.push(`a ${fieldCode(text)} field`);
      replacement = "{\\*\\fldinst }";
    } else if (word === "sv" && isExternal(text.trim())) {
      // a shape property naming a file or URL (pibName, fillBlipName of a linked picture)
      removed.push("an external picture name");
      replacement = "{\\sv }";
    } else if (word === "template" || word === "datafield") {
      // an attached template, a mail-merge data source: both name a file
      removed.push(`an RTF ${word}`);
      replacement = "";
    }
    out += rtf.slice(i, m.index) + replacement;
    i = end;
  }
  return out + rtf.slice(i);
}
