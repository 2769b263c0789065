// A cheap proof that a printed PDF holds no embedded fax code, so that pdfjs (2-3 ms of a reader
// process a letter, pdf-text.ts) is spared for the documents that need it. Every code begins and
// ends with "@@" (spool/embedded-codes.ts), read from one page's text at a time, so a page whose
// text holds fewer than four '@' holds no code. This reader does not extract text: it follows the
// document the way pdfjs does (xref, page tree, resources, fonts, content streams and the forms
// they draw) far enough to bound, for each page, how many '@' pdfjs's text of it can contain.
//
// It is conservative by construction: every string of a content stream is counted (not only the
// ones shown), each byte with the largest count any font of its resources gives it, and whatever
// it does not follow exactly (encryption, linearized or hybrid files, Type3 fonts, embedded fonts
// without a ToUnicode map, inline images, filters other than Flate, a page tree whose counts lie,
// any parse error, more work than its budget) makes it answer "unknown", and pdfjs reads the
// document as before. Its work is bounded (bytes read, bytes inflated, objects fetched), so a
// crafted file costs the main thread at most a few milliseconds.
import { inflateSync } from 'node:zlib';
import { CODE_PAGES } from './pdf-text.js';

export type AtSignBound = { ok: true; pages: number[] } | { ok: false; why: string };

/** Files larger than this are left to pdfjs (the reader runs on the caller's thread). */
export const MAX_SCAN_BYTES = 1024 * 1024;
/** Bytes inflated in all (content, object and xref streams, ToUnicode maps). */
const MAX_INFLATED = 2 * 1024 * 1024;
/** Objects fetched, page tree nodes visited and forms drawn, together. */
const MAX_STEPS = 20_000;
/**
 * Content bytes read in all (a stream drawn on many pages is read for each): about 10-15 ms of
 * the caller's thread a MB, so that no document holds it for long.
 */
const MAX_LEXED = 2 * 1024 * 1024;
/** Codes the ToUnicode maps define, ranges counted whole. */
const MAX_MAP_CODES = 64 * 1024;
const MAX_FORM_DEPTH = 12;
const MAX_TREE_DEPTH = 64;
const MAX_XREF_SECTIONS = 32;
/** A code needs "@@" before and after it on one page. */
const CODE_AT_SIGNS = 4;

/** The characters pdfjs can give for '@': itself, and the full-width and small forms (NFKC '@'). */
const AT_CODES = [0x40, 0xff20, 0xfe6b];
/** Glyph names pdfjs's glyph list maps to those characters. */
const AT_GLYPHS = new Set(['at', 'atmonospace', 'atsmall']);
const BASE_ENCODINGS = new Set(['StandardEncoding', 'WinAnsiEncoding', 'MacRomanEncoding', 'MacExpertEncoding']);

class Unknown extends Error {}
const unknown = (why: string): never => {
  throw new Unknown(why);
};

// ---- objects ---------------------------------------------------------------------------------

class Name {
  constructor(readonly name: string) {}
}
class Ref {
  constructor(readonly num: number, readonly gen: number) {}
}
class Cmd {
  constructor(readonly cmd: string) {}
}
class PdfString {
  constructor(readonly bytes: Uint8Array) {}
}
type Dict = Map<string, Obj>;
class Stream {
  constructor(readonly dict: Dict, readonly data: Uint8Array) {}
}
type Obj = number | boolean | null | Name | Ref | PdfString | Dict | Stream | Obj[];
const EOF = Symbol('eof');

const isDict = (o: unknown): o is Dict => o instanceof Map;

// ---- the lexer (pdfjs's rules for whitespace, delimiters, strings and comments) ---------------

const WHITE = new Uint8Array(256);
for (const c of [0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]) WHITE[c] = 1;
const DELIM = new Uint8Array(256);
for (const c of '()<>[]{}/%') DELIM[c.charCodeAt(0)] = 1;

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

class Lexer {
  pos: number;
  constructor(readonly buf: Uint8Array, start = 0, readonly end = buf.length) {
    this.pos = start;
  }

  skipSpace(): void {
    const b = this.buf;
    while (this.pos < this.end) {
      const c = b[this.pos]!;
      if (WHITE[c]) this.pos++;
      else if (c === 0x25) {
        while (this.pos < this.end && b[this.pos] !== 0x0a && b[this.pos] !== 0x0d) this.pos++;
      } else break;
    }
  }

  /** The next token: a value, a delimiter as a Cmd ('[', ']', '<<', '>>', '{', '}'), or a keyword. */
  next(): Obj | Cmd | typeof EOF {
    this.skipSpace();
    const b = this.buf;
    if (this.pos >= this.end) return EOF;
    const c = b[this.pos]!;
    switch (c) {
      case 0x28: // (
        return this.literal();
      case 0x3c: // <
        if (b[this.pos + 1] === 0x3c) {
          this.pos += 2;
          return new Cmd('<<');
        }
        return this.hex();
      case 0x3e: // >
        this.pos++;
        if (b[this.pos] === 0x3e) {
          this.pos++;
          return new Cmd('>>');
        }
        return new Cmd('>');
      case 0x2f: // /
        return this.name();
      case 0x5b:
      case 0x5d:
      case 0x7b:
      case 0x7d:
      case 0x29:
        this.pos++;
        return new Cmd(String.fromCharCode(c));
    }
    const start = this.pos;
    while (this.pos < this.end && !WHITE[b[this.pos]!] && !DELIM[b[this.pos]!]) this.pos++;
    const n = numberAt(b, start, this.pos);
    if (n !== null) return n;
    const word = latin1(b, start, this.pos);
    if (word === 'true') return true;
    if (word === 'false') return false;
    if (word === 'null') return null;
    return new Cmd(word);
  }

  private literal(): PdfString {
    const b = this.buf;
    const out: number[] = [];
    let depth = 1;
    this.pos++;
    while (this.pos < this.end) {
      const c = b[this.pos++]!;
      if (c === 0x28) depth++;
      else if (c === 0x29 && --depth === 0) break;
      else if (c === 0x5c) {
        if (this.pos >= this.end) break;
        const e = b[this.pos++]!;
        if (e >= 0x30 && e <= 0x37) {
          let v = e - 0x30;
          for (let i = 0; i < 2 && this.pos < this.end && b[this.pos]! >= 0x30 && b[this.pos]! <= 0x37; i++) v = v * 8 + b[this.pos++]! - 0x30;
          // pdfjs keeps \400-\777 as codes above 255, which a map may know: not followed here
          if (v > 0xff) unknown('an octal escape above \\377 in a string');
          out.push(v);
          continue;
        }
        if (e === 0x0d) {
          if (b[this.pos] === 0x0a) this.pos++;
          continue;
        }
        if (e === 0x0a) continue;
        out.push({ 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09, 0x62: 0x08, 0x66: 0x0c }[e] ?? e);
        continue;
      }
      out.push(c);
    }
    return new PdfString(Uint8Array.from(out));
  }

  private hex(): PdfString {
    const b = this.buf;
    const out: number[] = [];
    let first = -1;
    this.pos++;
    while (this.pos < this.end) {
      const c = b[this.pos++]!;
      if (c === 0x3e) break;
      const v = hexValue(c);
      if (v < 0) continue; // pdfjs ignores whitespace and invalid characters alike
      if (first < 0) first = v;
      else {
        out.push((first << 4) | v);
        first = -1;
      }
    }
    if (first >= 0) out.push(first << 4);
    return new PdfString(Uint8Array.from(out));
  }

  private name(): Name {
    const b = this.buf;
    this.pos++;
    let s = '';
    while (this.pos < this.end && !WHITE[b[this.pos]!] && !DELIM[b[this.pos]!]) {
      const c = b[this.pos++]!;
      if (c === 0x23) {
        const h = hexValue(b[this.pos] ?? 0);
        const l = hexValue(b[this.pos + 1] ?? 0);
        if (h >= 0 && l >= 0) {
          s += String.fromCharCode((h << 4) | l);
          this.pos += 2;
          continue;
        }
      }
      s += String.fromCharCode(c);
    }
    return new Name(s);
  }
}

/** A number token ([+-]digits[.digits] or [+-].digits), or null for any other word. */
function numberAt(b: Uint8Array, start: number, end: number): number | null {
  let i = start;
  let sign = 1;
  if (b[i] === 0x2b || b[i] === 0x2d) {
    if (b[i] === 0x2d) sign = -1;
    i++;
  }
  let v = 0;
  let digits = 0;
  while (i < end && b[i]! >= 0x30 && b[i]! <= 0x39) {
    v = v * 10 + b[i++]! - 0x30;
    digits++;
  }
  if (i < end && b[i] === 0x2e) {
    i++;
    let scale = 0.1;
    while (i < end && b[i]! >= 0x30 && b[i]! <= 0x39) {
      v += (b[i++]! - 0x30) * scale;
      scale /= 10;
      digits++;
    }
  }
  return i === end && digits > 0 ? sign * v : null;
}

function latin1(b: Uint8Array, start: number, end: number): string {
  let s = '';
  for (let i = start; i < end; i++) s += String.fromCharCode(b[i]!);
  return s;
}

function indexOf(b: Uint8Array, text: string, from: number, to = b.length): number {
  const first = text.charCodeAt(0);
  outer: for (let i = from; i <= to - text.length; i++) {
    if (b[i] !== first) continue;
    for (let j = 1; j < text.length; j++) if (b[i + j] !== text.charCodeAt(j)) continue outer;
    return i;
  }
  return -1;
}

function lastIndexOf(b: Uint8Array, text: string): number {
  for (let i = b.length - text.length; i >= 0; i--) {
    let j = 0;
    while (j < text.length && b[i + j] === text.charCodeAt(j)) j++;
    if (j === text.length) return i;
  }
  return -1;
}

// ---- the parser: objects, streams, the xref --------------------------------------------------

interface XrefEntry {
  /** 1: at an offset; 2: inside an object stream */
  type: 0 | 1 | 2;
  a: number;
  b: number;
}

class Doc {
  private readonly entries = new Map<number, XrefEntry>();
  private readonly cache = new Map<number, Obj>();
  private readonly fetching = new Set<number>();
  /** streams inflated once (a content stream shared by pages, a font's map shared by fonts) */
  private readonly decoded = new Map<Stream, Uint8Array>();
  private readonly objStreams = new Map<number, { objects: Map<number, Obj> }>();
  inflated = 0;
  steps = 0;
  lexed = 0;
  mapCodes = 0;
  /** what each form gives in each scope it is drawn in */
  readonly formCounts = new Map<Stream, Map<Scope, number>>();
  readonly formScopes = new Map<Scope, Map<Dict, Scope>>();
  readonly maps = new Map<Stream, MapAtSigns>();
  trailer: Dict = new Map();

  constructor(readonly file: Uint8Array) {}

  step(): void {
    if (++this.steps > MAX_STEPS) unknown('more objects than the quick reader follows');
  }

  /** One object from a lexer; `allowStream` in a file object, where a dictionary may open a stream. */
  parse(lx: Lexer, allowStream: boolean, depth = 0): Obj {
    if (depth > 100) unknown('objects nested too deep');
    const t = lx.next();
    if (t === EOF) unknown('the file ends inside an object');
    if (!(t instanceof Cmd)) {
      if (typeof t === 'number' && Number.isInteger(t) && t >= 0) {
        // "num gen R"?
        const save = lx.pos;
        const g = lx.next();
        if (typeof g === 'number' && Number.isInteger(g) && g >= 0) {
          const r = lx.next();
          if (r instanceof Cmd && r.cmd === 'R') return new Ref(t, g);
        }
        lx.pos = save;
      }
      return t as Obj;
    }
    switch (t.cmd) {
      case '[': {
        const arr: Obj[] = [];
        for (;;) {
          lx.skipSpace();
          if (lx.buf[lx.pos] === 0x5d) {
            lx.pos++;
            return arr;
          }
          if (lx.pos >= lx.end) unknown('an array is not closed');
          arr.push(this.parse(lx, false, depth + 1));
        }
      }
      case '<<': {
        const dict: Dict = new Map();
        for (;;) {
          const k = lx.next();
          if (k instanceof Cmd && k.cmd === '>>') break;
          if (!(k instanceof Name)) return unknown('a dictionary key is not a name');
          dict.set(k.name, this.parse(lx, false, depth + 1));
        }
        if (!allowStream) return dict;
        const save = lx.pos;
        const s = lx.next();
        if (!(s instanceof Cmd && s.cmd === 'stream')) {
          lx.pos = save;
          return dict;
        }
        return this.streamAfterKeyword(lx, dict);
      }
      default:
        return unknown(`unexpected "${t.cmd.slice(0, 20)}" in an object`);
    }
  }

  private streamAfterKeyword(lx: Lexer, dict: Dict): Stream {
    const b = lx.buf;
    // pdfjs skips to the next line after "stream"
    while (lx.pos < lx.end) {
      const c = b[lx.pos++]!;
      if (c === 0x0d) {
        if (b[lx.pos] === 0x0a) lx.pos++;
        break;
      }
      if (c === 0x0a) break;
    }
    const length = this.resolve(dict.get('Length') ?? null);
    if (typeof length !== 'number' || !Number.isInteger(length) || length < 0 || lx.pos + length > lx.end) return unknown('a stream without a usable /Length');
    const start = lx.pos;
    lx.pos = start + length;
    const end = lx.next();
    if (!(end instanceof Cmd && end.cmd === 'endstream')) unknown('a stream whose /Length does not end at "endstream"');
    return new Stream(dict, b.subarray(start, start + length));
  }

  /** A stream's decoded bytes: no filter, or Flate (with a PNG predictor for xref streams only). */
  decode(s: Stream, predictorAllowed = false): Uint8Array {
    let out = this.decoded.get(s);
    if (!out) {
      out = this.decodeOnce(s, predictorAllowed);
      this.decoded.set(s, out);
    }
    return out;
  }

  private decodeOnce(s: Stream, predictorAllowed: boolean): Uint8Array {
    let filter = this.resolve(s.dict.get('Filter') ?? null);
    let parms = this.resolve(s.dict.get('DecodeParms') ?? null);
    if (Array.isArray(filter)) {
      if (filter.length > 1) unknown('a stream with more than one filter');
      filter = this.resolve(filter[0] ?? null);
      parms = Array.isArray(parms) ? this.resolve(parms[0] ?? null) : parms;
    }
    if (filter === null) return s.data;
    if (!(filter instanceof Name) || (filter.name !== 'FlateDecode' && filter.name !== 'Fl')) return unknown('a stream filter other than Flate');
    const room = MAX_INFLATED - this.inflated;
    let out: Uint8Array;
    try {
      out = inflateSync(s.data, { maxOutputLength: Math.max(1, room) });
    } catch {
      return unknown('a Flate stream that does not inflate cleanly, or inflates past the budget');
    }
    this.inflated += out.length;
    const predictor = isDict(parms) ? this.resolve(parms.get('Predictor') ?? null) : null;
    if (predictor === null || predictor === 1) return out;
    if (!predictorAllowed || typeof predictor !== 'number' || predictor < 10) return unknown('a content stream with a predictor');
    const columns = isDict(parms) ? this.resolve(parms.get('Columns') ?? 1) : 1;
    if (typeof columns !== 'number' || !Number.isInteger(columns) || columns < 1) return unknown('a bad predictor width');
    const colors = isDict(parms) ? this.resolve(parms.get('Colors') ?? 1) : 1;
    const bits = isDict(parms) ? this.resolve(parms.get('BitsPerComponent') ?? 8) : 8;
    if (colors !== 1 || bits !== 8) return unknown('a predictor of other than one 8-bit colour');
    return unpredictPng(out, columns);
  }

  resolve(o: Obj, depth = 0): Obj {
    while (o instanceof Ref) {
      if (++depth > 32) unknown('references chained too deep');
      o = this.fetch(o);
    }
    return o;
  }

  fetch(ref: Ref): Obj {
    const hit = this.cache.get(ref.num);
    if (hit !== undefined) return hit;
    if (this.fetching.has(ref.num)) unknown('an object that needs itself to be read (a stream whose /Length is itself)');
    this.step();
    this.fetching.add(ref.num);
    const e = this.entries.get(ref.num);
    let obj: Obj = null;
    if (e && e.type === 1 && e.a > 0) {
      if (e.b !== ref.gen) unknown('a reference whose generation the xref does not have');
      obj = this.fileObject(e.a, ref.num, ref.gen);
    } else if (e && e.type === 2) {
      if (ref.gen !== 0) unknown('a reference into an object stream with a generation');
      obj = this.streamedObject(e.a, ref.num);
    }
    this.fetching.delete(ref.num);
    this.cache.set(ref.num, obj);
    return obj;
  }

  private fileObject(offset: number, num: number, gen: number): Obj {
    if (offset >= this.file.length) unknown('an xref offset past the end of the file');
    const lx = new Lexer(this.file, offset);
    const n = lx.next();
    const g = lx.next();
    const k = lx.next();
    if (n !== num || g !== gen || !(k instanceof Cmd && k.cmd === 'obj')) unknown('an xref offset that does not point at its object');
    return this.parse(lx, true);
  }

  /**
   * An object inside an object stream, as pdfjs finds it: it reads every object of the stream
   * (each up to where the next begins), and takes the one at the last place the stream's header
   * gives its number, whatever index the xref says.
   */
  private streamedObject(streamNum: number, num: number): Obj {
    let os = this.objStreams.get(streamNum);
    if (!os) {
      const e = this.entries.get(streamNum);
      if (!e || e.type !== 1) return unknown('an object stream that is not a file object');
      const s = this.fileObject(e.a, streamNum, e.b);
      if (!(s instanceof Stream)) return unknown('an object stream that is not a stream');
      const n = this.resolve(s.dict.get('N') ?? null);
      const first = this.resolve(s.dict.get('First') ?? null);
      if (typeof n !== 'number' || typeof first !== 'number' || !Number.isInteger(n) || !Number.isInteger(first) || n < 0 || first < 0) return unknown('an object stream without /N and /First');
      const data = this.decode(s);
      const lx = new Lexer(data, 0, Math.min(first, data.length));
      const nums: number[] = [];
      const offs: number[] = [];
      for (let i = 0; i < n; i++) {
        this.step();
        const on = lx.next();
        const off = lx.next();
        if (typeof on !== 'number' || typeof off !== 'number' || !Number.isInteger(on) || !Number.isInteger(off)) return unknown('a broken object stream header');
        nums.push(on);
        offs.push(off);
      }
      const objects = new Map<number, Obj>();
      for (let i = 0; i < n; i++) {
        const from = first + offs[i]!;
        const to = i < n - 1 ? first + offs[i + 1]! : data.length;
        if (to < from || from > data.length) return unknown('an object stream whose offsets go back');
        const obj = this.parse(new Lexer(data, from, Math.min(to, data.length)), true);
        if (obj instanceof Stream) return unknown('a stream inside an object stream');
        objects.set(nums[i]!, obj); // the last place of a number wins
      }
      os = { objects };
      this.objStreams.set(streamNum, os);
    }
    if (!os.objects.has(num)) return unknown('an object its object stream does not name');
    return os.objects.get(num)!;
  }

  /**
   * pdfjs reads a linearized file from its first page's xref: it tells one by the file's first
   * object (wherever it ends), a dictionary with a positive /Linearized.
   */
  private firstObjectIsLinearized(): boolean {
    const lx = new Lexer(this.file);
    const n = lx.next();
    const g = lx.next();
    const k = lx.next();
    // pdfjs reads numbers more loosely ("9-9" is 99 to it): a first object this reader cannot
    // read as "N G obj" may still be one to pdfjs
    if (typeof n !== 'number' || typeof g !== 'number' || !(k instanceof Cmd && k.cmd === 'obj')) unknown('a first object that does not begin "N G obj"');
    const d = this.parse(lx, false);
    if (!isDict(d)) return false;
    const lin = d.get('Linearized');
    // a reference there is left to pdfjs too: it would look it up
    return lin instanceof Ref || (typeof lin === 'number' && lin > 0);
  }

  /** Reads the xref sections from startxref back through /Prev; the newest entry of an object wins. */
  readXref(): void {
    const f = this.file;
    if (indexOf(f, '%PDF-', 0, 5) !== 0) unknown('the file does not begin with %PDF-');
    if (this.firstObjectIsLinearized()) unknown('a linearized file');
    const sx = lastIndexOf(f, 'startxref');
    if (sx < 0) unknown('no startxref');
    let p = sx + 9;
    while (p < f.length && WHITE[f[p]!]) p++;
    let digits = '';
    while (p < f.length && f[p]! >= 0x20 && f[p]! <= 0x39) digits += String.fromCharCode(f[p++]!);
    let offset = parseInt(digits, 10);
    const seen = new Set<number>();
    let first = true;
    while (Number.isInteger(offset)) {
      if (seen.has(offset) || seen.size >= MAX_XREF_SECTIONS) unknown('xref sections that loop');
      seen.add(offset);
      const dict = this.xrefSection(offset);
      if (first) {
        this.trailer = dict;
        first = false;
        if (dict.has('Encrypt')) unknown('an encrypted file');
      }
      if (dict.has('XRefStm')) unknown('a hybrid xref');
      const prev = dict.get('Prev');
      offset = typeof prev === 'number' ? prev : prev instanceof Ref ? prev.num : NaN;
    }
    // pdfjs takes an xref whose object 0 is in use as broken, and rebuilds it by scanning the file
    const zero = this.entries.get(0);
    if (zero && zero.type !== 0) unknown('an xref whose object 0 is in use');
  }

  private xrefSection(offset: number): Dict {
    if (!(offset > 0 && offset < this.file.length)) return unknown('an xref offset outside the file');
    const lx = new Lexer(this.file, offset);
    const t = lx.next();
    if (t instanceof Cmd && t.cmd === 'xref') return this.xrefTable(lx);
    if (typeof t !== 'number') return unknown('startxref does not point at an xref');
    const g = lx.next();
    const k = lx.next();
    if (typeof g !== 'number' || !(k instanceof Cmd && k.cmd === 'obj')) return unknown('startxref does not point at an xref stream');
    const s = this.parse(lx, true);
    if (!(s instanceof Stream)) return unknown('an xref stream that is not a stream');
    const type = s.dict.get('Type');
    if (!(type instanceof Name) || type.name !== 'XRef') unknown('an xref stream without /Type /XRef');
    this.xrefStream(s);
    return s.dict;
  }

  private setEntry(num: number, e: XrefEntry): void {
    if (!this.entries.has(num)) this.entries.set(num, e);
  }

  private xrefTable(lx: Lexer): Dict {
    for (;;) {
      const t = lx.next();
      if (t instanceof Cmd && t.cmd === 'trailer') break;
      if (typeof t !== 'number' || !Number.isInteger(t) || t < 0) return unknown('a broken xref table');
      let start = t;
      const count = lx.next();
      if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > 1_000_000) return unknown('a broken xref subsection');
      for (let i = 0; i < count; i++) {
        const off = lx.next();
        const gen = lx.next();
        const kind = lx.next();
        if (typeof off !== 'number' || typeof gen !== 'number' || !Number.isInteger(off) || !Number.isInteger(gen) || !(kind instanceof Cmd) || (kind.cmd !== 'n' && kind.cmd !== 'f')) return unknown('a broken xref entry');
        // pdfjs's fix for tables that number the free head entry 1 instead of 0
        if (i === 0 && kind.cmd === 'f' && start === 1) start = 0;
        this.step();
        this.setEntry(start + i, kind.cmd === 'n' ? { type: 1, a: off, b: gen } : { type: 0, a: 0, b: gen });
      }
    }
    const dict = this.parse(lx, false);
    if (!isDict(dict)) return unknown('a trailer that is not a dictionary');
    return dict;
  }

  private xrefStream(s: Stream): void {
    const w = this.resolve(s.dict.get('W') ?? null);
    if (!Array.isArray(w) || w.length !== 3 || !w.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= 8)) return unknown('an xref stream with a bad /W');
    const [w0, w1, w2] = w as number[];
    const size = this.resolve(s.dict.get('Size') ?? null);
    const index = this.resolve(s.dict.get('Index') ?? [0, typeof size === 'number' ? size : 0]);
    if (!Array.isArray(index) || index.length % 2 !== 0) return unknown('an xref stream with a bad /Index');
    const data = this.decode(s, true);
    const rowLen = w0! + w1! + w2!;
    let p = 0;
    const field = (n: number, dflt: number): number => {
      if (n === 0) return dflt;
      let v = 0;
      for (let i = 0; i < n; i++) v = v * 256 + data[p++]!;
      return v;
    };
    for (let i = 0; i < index.length; i += 2) {
      const start = index[i];
      const count = index[i + 1];
      if (typeof start !== 'number' || typeof count !== 'number' || !Number.isInteger(start) || !Number.isInteger(count) || start < 0 || count < 0) return unknown('an xref stream with a bad /Index');
      for (let j = 0; j < count; j++) {
        if (p + rowLen > data.length) return unknown('an xref stream shorter than its /Index');
        this.step();
        const type = field(w0!, 1);
        const a = field(w1!, 0);
        const b = field(w2!, 0);
        if (type === 0) this.setEntry(start + j, { type: 0, a: 0, b: 0 });
        else if (type === 1) this.setEntry(start + j, { type: 1, a, b });
        else if (type === 2) this.setEntry(start + j, { type: 2, a, b });
        else return unknown('an xref stream entry of an unknown type');
      }
    }
  }
}

function unpredictPng(data: Uint8Array, columns: number): Uint8Array {
  const row = columns + 1;
  if (data.length % row !== 0) return unknown('a predicted stream of a broken length');
  const rows = data.length / row;
  const out = new Uint8Array(rows * columns);
  for (let r = 0; r < rows; r++) {
    const kind = data[r * row]!;
    for (let c = 0; c < columns; c++) {
      const raw = data[r * row + 1 + c]!;
      const left = c > 0 ? out[r * columns + c - 1]! : 0;
      const up = r > 0 ? out[(r - 1) * columns + c]! : 0;
      const upLeft = r > 0 && c > 0 ? out[(r - 1) * columns + c - 1]! : 0;
      let v: number;
      switch (kind) {
        case 0: v = raw; break;
        case 1: v = raw + left; break;
        case 2: v = raw + up; break;
        case 3: v = raw + ((left + up) >> 1); break;
        case 4: {
          const pp = left + up - upLeft;
          const pa = Math.abs(pp - left);
          const pb = Math.abs(pp - up);
          const pc = Math.abs(pp - upLeft);
          v = raw + (pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft);
          break;
        }
        default: return unknown('an unknown PNG predictor row');
      }
      out[r * columns + c] = v & 0xff;
    }
  }
  return out;
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
  twoByte = false;

  /** `inherited`: what the fonts in force where a form is drawn give (a form keeps the font set before it). */
  constructor(inherited?: AtWeights) {
    // a code no map knows becomes the character of its own number in pdfjs
    this.one[0x40] = 1;
    if (inherited) {
      this.one.set(inherited.one);
      for (const [c, n] of inherited.two) this.two.set(c, n);
      this.twoMax = inherited.twoMax;
      this.twoByte = inherited.twoByte;
    }
  }

  count(s: Uint8Array): number {
    let one = 0;
    for (let i = 0; i < s.length; i++) one += this.one[s[i]!]!;
    if (!this.twoByte) return one;
    let two = 0;
    let i = 0;
    for (; i + 1 < s.length; i += 2) two += this.two.get((s[i]! << 8) | s[i + 1]!) ?? 0;
    if (i < s.length) two += this.twoMax; // an odd byte: whatever it may become
    return Math.max(one, two);
  }
}

const atCountOfCode = (code: number): number => (AT_CODES.includes(code) ? 1 : 0);

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
function toUnicodeAtSigns(doc: Doc, s: Stream): MapAtSigns {
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
  const textAtSigns = (u: number[], code: number): number => (u.length === 0 ? atCountOfCode(code) : u.reduce((n, x) => n + atCountOfCode(x), 0));
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
            const prefix = u.slice(0, -1).reduce((n, x) => n + atCountOfCode(x), 0);
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
function addFont(doc: Doc, font: Obj, w: AtWeights): void {
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
    w.twoByte = true;
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

function scopeOf(doc: Doc, resources: Dict[], inherited?: AtWeights): Scope {
  const weights = new AtWeights(inherited);
  for (const r of resources) {
    const fonts = doc.resolve(r.get('Font') ?? null);
    if (isDict(fonts)) for (const font of fonts.values()) addFont(doc, font, weights);
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
function contentAtSigns(doc: Doc, data: Uint8Array, scope: Scope, depth: number, drawing: Set<Stream>): number {
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

function formAtSigns(doc: Doc, name: string, scope: Scope, depth: number, drawing: Set<Stream>): number {
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
function pageList(doc: Doc, max: number): Dict[] {
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
function inheritedResources(doc: Doc, page: Dict): Dict[] {
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

function pageContent(doc: Doc, page: Dict): Uint8Array {
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
  const doc = new Doc(pdf);
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
