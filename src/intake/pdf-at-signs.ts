// A cheap proof that a printed PDF holds no embedded fax code, so that pdfjs (2-3 ms of a reader
// process a letter, pdf-text.ts) is spared for the documents that need it. Every code begins and
// ends with "@@" (spool/embedded-codes.ts), read from one page's text at a time, so a page whose
// text holds fewer than four '@' holds no code. This look does not extract text: it follows the
// document the way pdfjs does (the file's objects through pdf-syntax.ts, then the page tree,
// resources, fonts, content streams and the forms they draw) far enough to bound, for each page,
// how many '@' pdfjs's text of it can contain.
//
// It is conservative by construction: every string of a content stream is counted (not only the
// ones shown), each byte with the largest count any font of its resources gives it, and whatever
// it does not follow exactly (encryption, linearized or hybrid files, Type3 fonts, embedded fonts
// without a ToUnicode map, inline images, filters other than Flate, a page tree whose counts lie,
// any parse error, more work than its budget) makes it answer "unknown", and pdfjs reads the
// document as before. Its work is bounded (bytes read, bytes inflated, objects fetched), so a
// crafted file costs the main thread about 15 ms at the most.
import { Cmd, EOF, isDict, Lexer, Name, PdfFile, PdfString, Stream, Unknown, unknown, type Dict, type Obj } from './pdf-syntax.js';
import { CODE_PAGES } from './pdf-text.js';

export type AtSignBound = { ok: true; pages: number[] } | { ok: false; why: string };

/** Files larger than this are left to pdfjs (the reader runs on the caller's thread). */
const MAX_SCAN_BYTES = 1024 * 1024;
/**
 * Content bytes read in all (a stream drawn on many pages is read for each): about 10-15 ms of
 * the caller's thread a MB, so that no document holds it for long.
 */
const MAX_LEXED = 2 * 1024 * 1024;
/** Codes the ToUnicode maps define, ranges counted whole. */
const MAX_MAP_CODES = 64 * 1024;
const MAX_FORM_DEPTH = 12;
const MAX_TREE_DEPTH = 64;
/** A code needs "@@" before and after it on one page. */
const CODE_AT_SIGNS = 4;

/** The characters pdfjs can give for '@': itself, and the full-width and small forms (NFKC '@'). */
const AT_CODES = [0x40, 0xff20, 0xfe6b];
/** Glyph names pdfjs's glyph list maps to those characters. */
const AT_GLYPHS = new Set(['at', 'atmonospace', 'atsmall']);
const BASE_ENCODINGS = new Set(['StandardEncoding', 'WinAnsiEncoding', 'MacRomanEncoding', 'MacExpertEncoding']);

/** The file as the look reads it: the PDF, and what the look remembers and spends of its budget. */
class Look extends PdfFile {
  lexed = 0;
  mapCodes = 0;
  /** what each form gives in each scope it is drawn in */
  readonly formCounts = new Map<Stream, Map<Scope, number>>();
  readonly formScopes = new Map<Scope, Map<Dict, Scope>>();
  readonly maps = new Map<Stream, MapAtSigns>();
}

// ---- fonts: how many '@' each code can give ---------------------------------------------------

/** What the fonts of one set of resources can make of a string, at most. */
class AtWeights {
  /** one-byte codes (simple fonts), the largest count any of them gives */
  readonly one = new Uint32Array(256);
  /** two-byte codes (Type0 fonts with an Identity CMap) */
  readonly two = new Map<number, number>();
  /** the largest count of any two-byte code */
  twoMax = 0;

  /** `inherited`: what the fonts in force where a form is drawn give (a form keeps the font set before it). */
  constructor(inherited?: AtWeights) {
    // a code no map knows becomes the character of its own number in pdfjs
    this.one[0x40] = 1;
    if (inherited) {
      this.one.set(inherited.one);
      for (const [c, n] of inherited.two) this.two.set(c, n);
      this.twoMax = inherited.twoMax;
    }
  }

  count(s: Uint8Array): number {
    let one = 0;
    for (let i = 0; i < s.length; i++) one += this.one[s[i]!]!;
    // no two-byte code in scope can give an '@' (no Type0 font, or none with one)
    if (this.two.size === 0) return one;
    let two = 0;
    let i = 0;
    for (; i + 1 < s.length; i += 2) two += this.two.get((s[i]! << 8) | s[i + 1]!) ?? 0;
    if (i < s.length) two += this.twoMax; // an odd byte: whatever it may become
    return Math.max(one, two);
  }
}

const atCountOfCode = (code: number): number => (AT_CODES.includes(code) ? 1 : 0);
const atCountOfUnits = (units: number[]): number => units.reduce((n, u) => n + atCountOfCode(u), 0);

/**
 * The '@' a glyph name can give in pdfjs: the names its glyph list maps to '@', and the numbers
 * it reads out of names it does not know ("uniXXXX", "uXXXX", "Gxx", "gXXXX", "Cdd", "cXX"). It
 * reads those with parseInt and Number, which skip spaces and signs and stop at the first
 * character that is not a digit ("g40zz" is 0x40), so every reading either allows is taken.
 */
function glyphNameAtSigns(name: string): number {
  if (AT_GLYPHS.has(name)) return 1;
  const rest = name.slice(1);
  const readings: number[] = [];
  switch (name[0]) {
    case 'G':
    case 'g':
      readings.push(parseInt(rest, 16));
      break;
    case 'C':
    case 'c':
      readings.push(Number(rest), parseInt(rest, 16), parseInt(rest, 10));
      break;
    case 'u': {
      readings.push(parseInt(rest, 16), parseInt(name.slice(3), 16));
      // "uni" with several units (a ligature's name): each unit counted
      const units = /^uni((?:[0-9A-Fa-f]{4})+)$/.exec(name);
      if (units && units[1]!.length > 4) {
        let n = 0;
        for (let i = 0; i < units[1]!.length; i += 4) n += atCountOfCode(parseInt(units[1]!.slice(i, i + 4), 16));
        if (n > 0) return n;
      }
      break;
    }
  }
  return readings.some((r) => AT_CODES.includes(r)) ? 1 : 0;
}

/** What a ToUnicode map says of '@': pdfjs takes a code's text from the map when the map has it. */
interface MapAtSigns {
  /** the '@' of each code the map gives some (codes with none are left out) */
  counts: Map<number, number>;
  /** which one-byte codes the map has at all */
  low: Uint8Array;
  /** which of the codes that are '@' by their own number the map has */
  atCodes: Set<number>;
}

/** A ToUnicode map's '@' per code. */
function toUnicodeAtSigns(doc: Look, s: Stream): MapAtSigns {
  const data = doc.decode(s);
  const lx = new Lexer(data);
  const out: MapAtSigns = { counts: new Map(), low: new Uint8Array(256), atCodes: new Set() };
  let entries = 0;
  const units = (b: Uint8Array): number[] => {
    const bytes = b.length % 2 === 1 ? [0, ...b] : [...b];
    const u: number[] = [];
    for (let i = 0; i < bytes.length; i += 2) u.push((bytes[i]! << 8) | bytes[i + 1]!);
    return u;
  };
  const codeOf = (b: Uint8Array): number => {
    if (b.length > 4) unknown('a ToUnicode code longer than 4 bytes');
    let v = 0;
    for (const x of b) v = v * 256 + x;
    return v;
  };
  const add = (code: number, n: number): void => {
    // pdfjs tells an empty map by its array's length, which a code past 0xFFFFFFFE does not make;
    // counted here only up to 0xFFFF, so that a map of such codes alone is left to pdfjs
    if (code <= 0xffff) entries++;
    if (code < 256) out.low[code] = 1;
    if (AT_CODES.includes(code)) out.atCodes.add(code);
    // a code defined twice is the later one's in pdfjs: the larger count of the two is kept here
    if (n > 0) out.counts.set(code, Math.max(out.counts.get(code) ?? 0, n));
  };
  /** an empty text falls back to the code's own number in pdfjs (`toUnicode.get(c) || c`) */
  const textAtSigns = (u: number[], code: number): number => (u.length === 0 ? atCountOfCode(code) : atCountOfUnits(u));
  for (;;) {
    const t = lx.next();
    if (t === EOF) break;
    if (!(t instanceof Cmd)) continue;
    if (t.cmd === 'endcmap') break; // pdfjs reads nothing after it
    switch (t.cmd) {
      case 'usecmap':
        return unknown('a ToUnicode map that uses another');
      case 'beginbfchar':
      case 'begincidchar':
      case 'beginbfrange':
      case 'begincidrange': {
        const range = t.cmd.endsWith('range');
        const cid = t.cmd.includes('cid');
        const endCmd = t.cmd.replace('begin', 'end');
        for (;;) {
          const a = lx.next();
          if (a instanceof Cmd && a.cmd === endCmd) break;
          if (!(a instanceof PdfString)) return unknown('a broken ToUnicode map');
          const lo = codeOf(a.bytes);
          let hi = lo;
          if (range) {
            const h = lx.next();
            if (!(h instanceof PdfString)) return unknown('a broken ToUnicode range');
            hi = codeOf(h.bytes);
          }
          let d: Obj | Cmd | typeof EOF = lx.next();
          if (d instanceof Cmd && d.cmd === '[') {
            // a range's destinations one by one (pdfjs maps as many codes as there are items)
            const items: Obj[] = [];
            for (let item = lx.next(); !(item instanceof Cmd && item.cmd === ']'); item = lx.next()) {
              if (!(item instanceof PdfString) && typeof item !== 'number') return unknown('a ToUnicode destination array with other than strings and numbers');
              items.push(item);
              if (items.length > 0xffff) return unknown('a ToUnicode destination array too long');
            }
            d = items;
          }
          if (hi < lo) continue;
          if (hi - lo > 0xffff) return unknown('a ToUnicode range too large');
          doc.mapCodes += hi - lo + 1;
          if (doc.mapCodes > MAX_MAP_CODES) return unknown('ToUnicode maps of more codes than the quick reader reads');
          if (cid) {
            if (typeof d !== 'number') return unknown('a broken ToUnicode cid entry');
            for (let c = lo; c <= hi; c++) add(c, atCountOfCode(d + (c - lo)));
          } else if (d instanceof PdfString) {
            const u = units(d.bytes);
            if (u.length === 0) {
              for (let c = lo; c <= hi; c++) add(c, textAtSigns(u, c));
              continue;
            }
            // pdfjs counts up the destination's last byte, carrying into the byte before: for a
            // destination of an odd number of bytes that carry does not follow the units
            if (d.bytes.length % 2 === 1 && d.bytes[d.bytes.length - 1]! + (hi - lo) > 0xff) return unknown('a ToUnicode range that carries out of an odd-length destination');
            // every code of the range gets the destination with its last unit counted up
            const prefix = atCountOfUnits(u.slice(0, -1));
            const last = u[u.length - 1]!;
            if (prefix > 0 && hi - lo > 256) return unknown('a ToUnicode range of strings with "@" in them');
            for (let c = lo; c <= hi; c++) {
              const unit = last + (c - lo);
              // past 0xFFFF pdfjs carries into the unit before: count it as possibly '@'
              add(c, prefix + (unit > 0xffff ? 1 : atCountOfCode(unit)));
            }
          } else if (Array.isArray(d)) {
            for (let c = lo; c <= hi && c - lo < d.length; c++) {
              const item = d[c - lo]!;
              add(c, typeof item === 'number' ? atCountOfCode(item) : textAtSigns(units((item as PdfString).bytes), c));
            }
          } else return unknown('a broken ToUnicode destination');
        }
        break;
      }
    }
  }
  if (entries === 0) unknown('an empty ToUnicode map');
  return out;
}

/** Adds what one font can make of each code to `w`; unknown for fonts this reader does not follow. */
function addFont(doc: Look, font: Obj, w: AtWeights): void {
  const f = doc.resolve(font);
  if (!isDict(f)) return; // pdfjs falls back to a standard font: the default weight covers it
  const subtype = doc.resolve(f.get('Subtype') ?? null);
  const sub = subtype instanceof Name ? subtype.name : '';
  const tuObj = doc.resolve(f.get('ToUnicode') ?? null);
  let tu: MapAtSigns | null = null;
  if (tuObj instanceof Stream) {
    tu = doc.maps.get(tuObj) ?? toUnicodeAtSigns(doc, tuObj);
    doc.maps.set(tuObj, tu);
  } else if (tuObj instanceof Name) {
    if (tuObj.name !== 'Identity-H' && tuObj.name !== 'Identity-V') unknown(`a ToUnicode named ${tuObj.name.slice(0, 40)}`);
  } else if (tuObj !== null) unknown('a ToUnicode that is not a stream');

  if (sub === 'Type0') {
    const enc = doc.resolve(f.get('Encoding') ?? null);
    if (!(enc instanceof Name) || (enc.name !== 'Identity-H' && enc.name !== 'Identity-V')) unknown('a Type0 font with a CMap other than Identity');
    if (!tu) unknown('a Type0 font without a ToUnicode map');
    // pdfjs takes the descendant font's ToUnicode before the Type0 font's own
    const df = doc.resolve(f.get('DescendantFonts') ?? null);
    const descendant = doc.resolve(Array.isArray(df) ? (df[0] ?? null) : df);
    if (isDict(descendant) && descendant.has('ToUnicode')) unknown('a descendant font with a ToUnicode of its own');
    const put = (c: number, n: number): void => {
      w.two.set(c, Math.max(w.two.get(c) ?? 0, n));
      w.twoMax = Math.max(w.twoMax, n);
    };
    // a code the map has gives the map's text; one it has not, its own number as a character
    for (const [c, n] of tu!.counts) put(c, n);
    for (const c of AT_CODES) if (!tu!.atCodes.has(c)) put(c, 1);
    return;
  }
  if (sub !== 'Type1' && sub !== 'MMType1' && sub !== 'TrueType') unknown(`a font of type ${sub.slice(0, 20) || 'none'}`);
  const desc = doc.resolve(f.get('FontDescriptor') ?? null);
  const embedded = isDict(desc) && (desc.has('FontFile') || desc.has('FontFile2') || desc.has('FontFile3'));
  // an embedded font's own encoding may name any code 'at', and pdfjs reads it when no map is given
  if (embedded && !tu) unknown('an embedded simple font without a ToUnicode map');
  const enc = doc.resolve(f.get('Encoding') ?? null);
  const weights = new Uint32Array(256);
  weights[0x40] = 1;
  if (enc instanceof Name) {
    if (!BASE_ENCODINGS.has(enc.name)) unknown(`an encoding named ${enc.name.slice(0, 40)}`);
  } else if (isDict(enc)) {
    const base = doc.resolve(enc.get('BaseEncoding') ?? null);
    if (base !== null && !(base instanceof Name && BASE_ENCODINGS.has(base.name))) unknown('an unknown base encoding');
    const diffs = doc.resolve(enc.get('Differences') ?? null);
    if (Array.isArray(diffs)) {
      let code = -1;
      for (const d0 of diffs) {
        const d = doc.resolve(d0);
        if (typeof d === 'number') code = d;
        else if (d instanceof Name) {
          if (code >= 0 && code < 256) weights[code] = Math.max(weights[code]!, glyphNameAtSigns(d.name));
          code++;
        } else unknown('a broken /Differences array');
      }
    } else if (diffs !== null) unknown('a broken /Differences');
  } else if (enc !== null) unknown('a broken /Encoding');
  // a code the map has gives the map's text, whatever the encoding says; one it has not, the
  // encoding's glyph (pdfjs's fallback map), or its own number as a character
  for (let c = 0; c < 256; c++) {
    const n = tu?.low[c] ? (tu.counts.get(c) ?? 0) : weights[c]!;
    w.one[c] = Math.max(w.one[c]!, n);
  }
}

// ---- pages and content streams -----------------------------------------------------------------

interface Scope {
  /** The resource dictionaries in force, nearest first (pdfjs merges a page's inherited ones). */
  resources: Dict[];
  weights: AtWeights;
}

function scopeOf(doc: Look, resources: Dict[], inherited?: AtWeights): Scope {
  const weights = new AtWeights(inherited);
  // one font under many names (pdf-lib names it anew for each line it draws) is added once
  const added = new Set<Obj>();
  for (const r of resources) {
    const fonts = doc.resolve(r.get('Font') ?? null);
    if (!isDict(fonts)) continue;
    for (const font of fonts.values()) {
      const f = doc.resolve(font);
      if (added.has(f)) continue;
      added.add(f);
      addFont(doc, f, weights);
    }
  }
  for (const r of resources) {
    const gs = doc.resolve(r.get('ExtGState') ?? null);
    if (isDict(gs)) {
      for (const g of gs.values()) {
        const d = doc.resolve(g);
        if (isDict(d) && d.has('Font')) unknown('a graphics state that sets a font');
      }
    }
  }
  return { resources, weights };
}

/** The '@' a content stream (and the forms it draws) can give, at most. */
function contentAtSigns(doc: Look, data: Uint8Array, scope: Scope, depth: number, drawing: Set<Stream>): number {
  doc.lexed += data.length;
  if (doc.lexed > MAX_LEXED) unknown('more content than the quick reader reads');
  const lx = new Lexer(data);
  let n = 0;
  let lastName: string | null = null;
  for (;;) {
    const t = lx.next();
    if (t === EOF) break;
    if (t instanceof PdfString) n += scope.weights.count(t.bytes);
    else if (t instanceof Name) {
      lastName = t.name;
      continue;
    } else if (t instanceof Cmd) {
      const op = t.cmd;
      if (op.includes('BI')) unknown('an inline image');
      if (op === 'Do') {
        if (lastName !== null) n += formAtSigns(doc, lastName, scope, depth, drawing);
      } else if (op.includes('Do')) unknown('an operator run with Do in it');
    }
    lastName = null;
  }
  return n;
}

function formAtSigns(doc: Look, name: string, scope: Scope, depth: number, drawing: Set<Stream>): number {
  let n = 0;
  // a name may stand in several inherited dictionaries: count every candidate
  for (const r of scope.resources) {
    const xobjects = doc.resolve(r.get('XObject') ?? null);
    if (!isDict(xobjects) || !xobjects.has(name)) continue;
    const x = doc.resolve(xobjects.get(name)!);
    if (!(x instanceof Stream)) continue;
    const sub = doc.resolve(x.dict.get('Subtype') ?? null);
    if (!(sub instanceof Name) || sub.name !== 'Form') continue;
    if (depth >= MAX_FORM_DEPTH || drawing.has(x)) unknown('forms that draw each other too deep');
    doc.step();
    const own = doc.resolve(x.dict.get('Resources') ?? null);
    let inner = scope;
    if (isDict(own)) {
      // the form's own fonts, and whatever font was set where it is drawn (pdfjs draws a form
      // with the caller's text state, so a form without a Tf shows its text in that font)
      const scopes = doc.formScopes.get(scope) ?? new Map<Dict, Scope>();
      doc.formScopes.set(scope, scopes);
      inner = scopes.get(own) ?? scopeOf(doc, [own], scope.weights);
      scopes.set(own, inner);
    }
    const counts = doc.formCounts.get(x) ?? new Map<Scope, number>();
    doc.formCounts.set(x, counts);
    let c = counts.get(inner);
    if (c === undefined) {
      drawing.add(x);
      c = contentAtSigns(doc, doc.decode(x), inner, depth + 1, drawing);
      drawing.delete(x);
      counts.set(inner, c);
    }
    n += c;
  }
  return n;
}

/** The first `max` pages in pdfjs's order; unknown unless every node's /Count is its true count. */
function pageList(doc: Look, max: number): Dict[] {
  const root = doc.resolve(doc.trailer.get('Root') ?? null);
  if (!isDict(root)) return unknown('no catalog');
  const top = doc.resolve(root.get('Pages') ?? null);
  if (!isDict(top)) return unknown('no page tree');
  const pages: Dict[] = [];
  // pdfjs refuses a node met twice anywhere in the tree, not only on the way down
  const visited = new Set<Dict>();
  const walk = (node: Dict, depth: number): number => {
    doc.step();
    if (depth > MAX_TREE_DEPTH || visited.has(node)) unknown('a page tree too deep, or with a node in it twice');
    visited.add(node);
    const kids = doc.resolve(node.get('Kids') ?? null);
    const type = doc.resolve(node.get('Type') ?? null);
    const isPage = type instanceof Name && type.name === 'Page';
    // pdfjs takes a referenced /Type /Page as a page even with kids, the top node as a tree
    if (Array.isArray(kids) && isPage) unknown('a page with kids');
    if (!Array.isArray(kids)) {
      if (node.has('Kids') && !isPage) unknown('a page tree node whose kids are not an array');
      if (pages.length < max) pages.push(node);
      return 1;
    }
    let leaves = 0;
    for (const k of kids) {
      const kid = doc.resolve(k);
      if (!isDict(kid)) return unknown('a page tree kid that is not a dictionary');
      leaves += walk(kid, depth + 1);
    }
    const count = doc.resolve(node.get('Count') ?? null);
    if (count !== leaves) unknown('a page tree whose /Count is not its number of pages');
    return leaves;
  };
  walk(top, 0);
  return pages;
}

/** pdfjs's page resources: every /Resources up the /Parent chain (it merges them). */
function inheritedResources(doc: Look, page: Dict): Dict[] {
  const out: Dict[] = [];
  const seen = new Set<Dict>();
  let node: Obj = page;
  while (isDict(node) && !seen.has(node)) {
    seen.add(node);
    doc.step();
    const r = doc.resolve(node.get('Resources') ?? null);
    if (isDict(r)) out.push(r);
    node = doc.resolve(node.get('Parent') ?? null);
  }
  return out;
}

function pageContent(doc: Look, page: Dict): Uint8Array {
  const c = doc.resolve(page.get('Contents') ?? null);
  const streams = (Array.isArray(c) ? c.map((x) => doc.resolve(x)) : [c]).filter((s): s is Stream => s instanceof Stream);
  const parts = streams.map((s) => doc.decode(s));
  if (parts.length === 1) return parts[0]!;
  // pdfjs reads the streams of an array as one, without anything between them
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return all;
}

/**
 * For each of the first `maxPages` pages in page order, an upper bound of the '@' characters
 * pdfjs's text of that page can contain; `ok: false` with the reason where the reader cannot say.
 */
export function atSignBound(pdf: Uint8Array, opts: { maxPages?: number } = {}): AtSignBound {
  if (pdf.length > MAX_SCAN_BYTES) return { ok: false, why: 'a file larger than the quick reader reads' };
  const doc = new Look(pdf);
  try {
    doc.readXref();
    const pages = pageList(doc, opts.maxPages ?? CODE_PAGES);
    return { ok: true, pages: pages.map((page) => contentAtSigns(doc, pageContent(doc, page), scopeOf(doc, inheritedResources(doc, page)), 0, new Set())) };
  } catch (err) {
    if (err instanceof Unknown) return { ok: false, why: err.message };
    // a stack overflow or any other surprise is the document's as well: pdfjs will read it
    return { ok: false, why: `the quick reader failed: ${String((err as Error)?.message ?? err).slice(0, 100)}` };
  }
}

/** True only when no page of the document can hold an embedded code (each has fewer than four '@'). */
export function cannotHoldCodes(pdf: Uint8Array): boolean {
  const b = atSignBound(pdf);
  return b.ok && b.pages.every((n) => n < CODE_AT_SIGNS);
}
