// Just enough of a PDF reader for a quick look at printed documents (pdf-at-signs.ts): the
// objects, streams and xref of a file, read as pdfjs reads them where it matters, and "unknown"
// (an Unknown thrown) wherever this reader would have to guess. Strict on purpose: a file it
// cannot read exactly is left to pdfjs, never read differently. Its work is bounded (objects
// fetched, bytes inflated), whatever the file.
import { inflateSync } from 'node:zlib';

/** Bytes inflated in all (content, object and xref streams, ToUnicode maps). */
const MAX_INFLATED = 2 * 1024 * 1024;
/** Objects fetched (and whatever else a reader counts with step()). */
const MAX_STEPS = 20_000;
const MAX_XREF_SECTIONS = 32;

/** What this reader does not follow exactly: the document is left to pdfjs. */
export class Unknown extends Error {}
export const unknown = (why: string): never => {
  throw new Unknown(why);
};

// ---- objects ---------------------------------------------------------------------------------

export class Name {
  constructor(readonly name: string) {}
}
export class Ref {
  constructor(readonly num: number, readonly gen: number) {}
}
export class Cmd {
  constructor(readonly cmd: string) {}
}
export class PdfString {
  constructor(readonly bytes: Uint8Array) {}
}
export type Dict = Map<string, Obj>;
export class Stream {
  constructor(readonly dict: Dict, readonly data: Uint8Array) {}
}
export type Obj = number | boolean | null | Name | Ref | PdfString | Dict | Stream | Obj[];
export const EOF = Symbol('eof');

export const isDict = (o: unknown): o is Dict => o instanceof Map;

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

/** A string's bytes as they are read (one lexer reads at a time: each string is copied out). */
let scratch = new Uint8Array(4096);
function put(n: number, byte: number): number {
  if (n === scratch.length) {
    const bigger = new Uint8Array(scratch.length * 2);
    bigger.set(scratch);
    scratch = bigger;
  }
  scratch[n] = byte;
  return n + 1;
}
/** What a backslash makes of the character after it (\n, \r, \t, \b, \f; any other: itself). */
const ESCAPED = Uint8Array.from({ length: 256 }, (_, c) => ({ 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09, 0x62: 0x08, 0x66: 0x0c })[c] ?? c);

export class Lexer {
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
    let n = 0;
    let depth = 1;
    this.pos++;
    while (this.pos < this.end) {
      const c = b[this.pos++]!;
      // a nested "(" and its ")" are part of the string
      if (c === 0x28) depth++;
      else if (c === 0x29 && --depth === 0) break;
      if (c === 0x5c) {
        if (this.pos >= this.end) break;
        const e = b[this.pos++]!;
        if (e >= 0x30 && e <= 0x37) {
          let v = e - 0x30;
          for (let i = 0; i < 2 && this.pos < this.end && b[this.pos]! >= 0x30 && b[this.pos]! <= 0x37; i++) v = v * 8 + b[this.pos++]! - 0x30;
          // pdfjs keeps \400-\777 as codes above 255, which a map may know: not followed here
          if (v > 0xff) unknown('an octal escape above \\377 in a string');
          n = put(n, v);
          continue;
        }
        if (e === 0x0d) {
          if (b[this.pos] === 0x0a) this.pos++;
          continue;
        }
        if (e === 0x0a) continue;
        n = put(n, ESCAPED[e]!);
        continue;
      }
      n = put(n, c);
    }
    return new PdfString(scratch.slice(0, n));
  }

  private hex(): PdfString {
    const b = this.buf;
    let n = 0;
    let first = -1;
    this.pos++;
    while (this.pos < this.end) {
      const c = b[this.pos++]!;
      if (c === 0x3e) break;
      const v = hexValue(c);
      if (v < 0) continue; // pdfjs ignores whitespace and invalid characters alike
      if (first < 0) first = v;
      else {
        n = put(n, (first << 4) | v);
        first = -1;
      }
    }
    if (first >= 0) n = put(n, first << 4);
    return new PdfString(scratch.slice(0, n));
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

/** A PDF file: its xref, its objects (each read once), its streams (each inflated once). */
export class PdfFile {
  private readonly entries = new Map<number, XrefEntry>();
  private readonly cache = new Map<number, Obj>();
  private readonly fetching = new Set<number>();
  /** streams inflated once (a content stream shared by pages, a font's map shared by fonts) */
  private readonly decoded = new Map<Stream, Uint8Array>();
  private readonly objStreams = new Map<number, { objects: Map<number, Obj> }>();
  inflated = 0;
  steps = 0;
  trailer: Dict = new Map();

  constructor(readonly file: Uint8Array) {}

  /** One unit of work (an object fetched, a node or form visited): past the budget, unknown. */
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
