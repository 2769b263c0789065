// The big part of a mail is almost always one attachment in base64, and mailparser reads it line
// by line (mailsplit takes a 100 KB mail as some 1,300 lines, each sliced, checked for a boundary
// and handed on), then strips and decodes it in JavaScript: two thirds of the parse's CPU, measured
// in docs/bench.md. This stream stands in front of mailparser and takes such a body around it: the
// base64 is decoded natively, a chunk at a time, straight into the part's file (or memory, in a
// small mail), and mailparser is handed a short stand-in in its place (a random token in base64).
// mailparser still reads every header and decides everything about the part (whether it is an
// attachment, its name, its type); when the part it reports starts with the token, the part's
// file is the diverted one, followed by whatever mailparser decoded after the token.
//
// What is taken around the parser is only ever whole lines at the start of a part's body, none of
// which starts like a delimiter ("-", or CR "-") or holds "=", "-" or "_": no such line is a MIME
// boundary, and in a body no line is a header, so the stand-in changes no part's limits, only that
// one body's content. A body is taken only after a boundary this stream knows from a multipart's
// Content-Type, and a header block that mailsplit's own header reader says is base64 and not text,
// message or multipart. Anything this stream is not sure of (a long line, a header block over
// 64 KB, an unknown boundary) it passes through untouched. A byte in a taken line that is not a
// base64 letter shows as a decoded size short of the letters' count, and spoils that body. And if
// any diverted body is spoiled, or not claimed by a part that starts with its token, the caller
// parses the kept message again, the ordinary way (unclaimed() > 0). test/intake/base64-divert.test.ts
// parses messages, damaged ones among them, both ways and compares every part's file.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { MimeNode } from '@zone-eu/mailsplit';
import { Head } from './file-type.js';
import type { HeldFile, WorkDir } from './incoming-file.js';

/** The stand-in's size: 24 random bytes, 32 base64 letters without padding. */
export const TOKEN_BYTES = 24;
/** A header block bigger than this ends diverting for the message (mailsplit has its own limit). */
const MAX_HEAD_BYTES = 64 * 1024;
/** A boundary line is at most 70 characters of boundary and a few more; longer is not one of ours. */
const MAX_DELIMITER_LINE = 1024;
/** Multiparts open at once (nesting) this stream follows; a deeper message is mailparser's alone. */
const MAX_DELIMITERS = 16;
/** A base64 line longer than this ends the diverted run; the rest goes to mailparser as it is. */
const MAX_RUN_LINE = 64 * 1024;
/**
 * Diverted bodies waiting for mailparser to claim them, each with its file open. This stream runs
 * ahead of the parser (a stand-in is a few bytes where the body was many), so without a bound a
 * message of a thousand small base64 parts would hold a thousand files open at once; past it, the
 * next bodies go through mailparser, which writes one part at a time.
 */
export const MAX_PENDING_DIVERSIONS = 4;
const LINE_ENDS = /[\r\n]+/g;

const isLetter = (b: number): boolean => (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) || b === 0x2b || b === 0x2f;
/** "=", "-" and "_" end a run: see inRun. */
const NOT_TAKEN = [0x3d, 0x2d, 0x5f];
/** The first of `bytes` in b from `from` on, or -1 (one native search for each). */
function firstOf(b: Buffer, from: number, bytes: number[]): number {
  let first = -1;
  for (const x of bytes) {
    const at = b.indexOf(x, from);
    if (at >= 0 && (first < 0 || at < first)) first = at;
  }
  return first;
}
/** "-" or CR "-" at `at`: what mailsplit could take for a delimiter line (checkBoundary). */
const startsLikeDelimiter = (b: Buffer, at: number): boolean => b[at] === 0x2d || (b[at] === 0x0d && b[at + 1] === 0x2d);
const NL_DASH = Buffer.from('\n-');

export interface Diversion {
  /** What the stand-in decodes to. */
  token: Buffer;
  file: string;
  /** Opened at the first letters decoded (or at the claim, for a body of a few letters). */
  sink: HeldFile | null;
  bytes: number;
  /** The file's first bytes. */
  head: Head;
  claimed: boolean;
  /** A byte in the body was not base64: the file is not what mailparser would decode. */
  spoiled: boolean;
}

type Mode = 'head' | 'body' | 'run' | 'off';

export class Base64Divert extends Transform {
  private readonly diversions: Diversion[] = [];
  private mode: Mode = 'head';
  /** The header block being read (top level first, then each part's). */
  private headLines: Buffer[] = [];
  private headBytes = 0;
  private headLine: Buffer[] = [];
  private topLevel = true;
  /** "--boundary" of every multipart seen and not yet closed. */
  private readonly delimiters: Buffer[] = [];
  private atLineStart = true;
  /** A line begun at the end of the last chunk that may be a delimiter. */
  private lineCarry: Buffer | null = null;
  /** The diversion being written, its base64 line not yet ended, and letters short of a quartet. */
  private run: Diversion | null = null;
  private runLine: Buffer | null = null;
  private leftover = '';
  private lastEol = '\r\n';
  private failure: Error | null = null;

  constructor(private readonly dir: WorkDir) {
    super();
  }

  /** Diverted bodies no part has claimed yet (a spoiled one never is). */
  unclaimed(): number {
    return this.diversions.filter((d) => !d.claimed).length;
  }

  /**
   * The diversion whose token `first` starts with, marked claimed; null if none (or spoiled). The
   * caller writes what follows the token to its sink (openSink if it has none yet) and ends it.
   */
  claim(first: Buffer): Diversion | null {
    if (first.length < TOKEN_BYTES) return null;
    const d = this.diversions.find((x) => !x.claimed && !x.spoiled && first.compare(x.token, 0, TOKEN_BYTES, 0, TOKEN_BYTES) === 0);
    if (!d) return null;
    d.claimed = true;
    return d;
  }

  /** Unclaimed files are closed (their removal is the work folder's). */
  closeUnclaimed(): void {
    for (const d of this.diversions) if (!d.claimed) d.sink?.destroy();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      let passFrom = 0;
      let i = 0;
      while (i < chunk.length) {
        if (this.mode === 'off') break;
        if (this.mode === 'head') i = this.inHead(chunk, i);
        else if (this.mode === 'body') i = this.inBody(chunk, i);
        else {
          if (passFrom < i) this.push(chunk.subarray(passFrom, i));
          i = this.inRun(chunk, i);
          passFrom = i;
        }
      }
      // what no run took is passed on as it came
      if (passFrom < chunk.length) this.push(passFrom === 0 ? chunk : chunk.subarray(passFrom));
    } catch (err) {
      return done(err as Error);
    }
    const sink = this.run?.sink;
    if (sink?.writableNeedDrain) {
      once(sink, 'drain').then(() => done(), (err: Error) => done(err));
      return;
    }
    done(this.failure);
  }

  override _flush(done: TransformCallback): void {
    if (this.mode === 'run') {
      // the last line had no line end: it is whole now, unless it is not all letters
      const last = this.runLine;
      this.runLine = null;
      if (last && !startsLikeDelimiter(last, 0) && firstOf(last, 0, NOT_TAKEN) < 0) this.decode(last.toString('latin1'), 0);
      else if (last) {
        this.endRun(this.lastEol);
        this.push(last);
      }
      this.endRun('');
    }
    done(this.failure);
  }

  override _destroy(err: Error | null, cb: (error: Error | null) => void): void {
    // after a clean end (autoDestroy) the files wait for the parser's claims; cut short, they are done
    if (err || !this.writableFinished) this.closeUnclaimed();
    cb(err);
  }

  /** A header block, passed on as it is; read when its blank line comes. */
  private inHead(c: Buffer, i: number): number {
    const nl = c.indexOf(0x0a, i);
    const end = nl < 0 ? c.length : nl + 1;
    const piece = c.subarray(i, end);
    this.headBytes += piece.length;
    if (this.headBytes > MAX_HEAD_BYTES) {
      this.stopDiverting();
      return end;
    }
    this.headLine.push(Buffer.from(piece));
    if (nl < 0) return end;
    const line = this.headLine.length === 1 ? this.headLine[0]! : Buffer.concat(this.headLine);
    this.headLine = [];
    this.headLines.push(line);
    if (line.length === 1 || (line.length === 2 && line[0] === 0x0d)) this.headerBlockRead();
    return end;
  }

  private headerBlockRead(): void {
    // mailsplit's own reading of the block, so "base64" and the boundary mean what they mean to it
    const node = new MimeNode(false, {});
    for (const l of this.headLines) node.addHeaderChunk(l);
    node.parseHeaders();
    this.headLines = [];
    this.headBytes = 0;
    this.atLineStart = true;
    const top = this.topLevel;
    this.topLevel = false;
    if (node.multipart && node._boundary) {
      if (this.delimiters.length >= MAX_DELIMITERS || node._boundary.length + 2 > MAX_DELIMITER_LINE - 2) {
        // each line that starts with "-" is checked against every delimiter: a message built
        // with a thousand nested multiparts (or one huge boundary) is left to mailparser whole
        this.stopDiverting();
        return;
      }
      this.delimiters.push(Buffer.concat([Buffer.from('--'), node._boundary]));
      this.mode = 'body';
      return;
    }
    if (top) {
      // a one-part message: nothing to divert
      this.stopDiverting();
      return;
    }
    const type = node.contentType || 'text/plain';
    const eligible = node.encoding === 'base64' && !/^(text|message|multipart)\//.test(type) && this.unclaimed() < MAX_PENDING_DIVERSIONS;
    this.mode = eligible ? 'run' : 'body';
    if (eligible) this.run = null;
  }

  /** Passed on as it is; each line that starts with "-" is checked against the delimiters. */
  private inBody(c: Buffer, i: number): number {
    if (this.lineCarry) {
      const nl = c.indexOf(0x0a, i);
      const carry = this.lineCarry;
      if (nl < 0) {
        this.lineCarry = carry.length + c.length - i <= MAX_DELIMITER_LINE ? Buffer.concat([carry, c.subarray(i)]) : null;
        return c.length;
      }
      this.lineCarry = null;
      this.atLineStart = true;
      if (carry.length + nl + 1 - i <= MAX_DELIMITER_LINE && this.delimiterLine(Buffer.concat([carry, c.subarray(i, nl + 1)]))) return nl + 1;
      i = nl + 1;
    }
    while (i < c.length) {
      if (this.atLineStart && c[i] === 0x2d) {
        const nl = c.indexOf(0x0a, i);
        if (nl < 0) {
          this.lineCarry = c.length - i <= MAX_DELIMITER_LINE ? Buffer.from(c.subarray(i)) : null;
          this.atLineStart = false;
          return c.length;
        }
        if (nl + 1 - i <= MAX_DELIMITER_LINE && this.delimiterLine(c.subarray(i, nl + 1))) return nl + 1;
        i = nl + 1;
        continue;
      }
      const k = c.indexOf(NL_DASH, i);
      if (k < 0) {
        this.atLineStart = c[c.length - 1] === 0x0a;
        return c.length;
      }
      i = k + 1;
      this.atLineStart = true;
    }
    return i;
  }

  /** True if `line` ("--b\r\n", "--b\n") starts a part: then a header block follows. */
  private delimiterLine(line: Buffer): boolean {
    let end = line.length - 1; // the \n
    if (end > 0 && line[end - 1] === 0x0d) end--;
    for (let n = this.delimiters.length - 1; n >= 0; n--) {
      const d = this.delimiters[n]!;
      if (end === d.length && line.compare(d, 0, d.length, 0, end) === 0) {
        this.mode = 'head';
        this.headLines = [];
        this.headBytes = 0;
        return true;
      }
      // "--b--": that multipart is over, and its delimiter means nothing in its epilogue
      if (end === d.length + 2 && line[end - 1] === 0x2d && line[end - 2] === 0x2d && line.compare(d, 0, d.length, 0, d.length) === 0) {
        this.delimiters.splice(n, 1);
        return false;
      }
    }
    return false;
  }

  /**
   * Whole base64 lines are decoded into the diversion's file; returns where the run ended (or the
   * chunk's end). The bytes are not looked at one by one: lines are found with indexOf, a line
   * that starts like a delimiter ("-", CR "-") or holds an "=", "-" or "_" ends the run, and a byte that is
   * not a letter anywhere else shows when the decoded size is not what the letters promise
   * (decode: the diversion is then never claimed, and the message is parsed again).
   */
  private inRun(c: Buffer, i: number): number {
    if (this.run === null && this.runLine === null && this.leftover === '' && !isLetter(c[i]!)) {
      // a body that does not start with base64 letters (empty, a blank line first...): left alone
      this.mode = 'body';
      return i;
    }
    if (this.runLine) {
      // the line begun at the end of the last chunk
      const lf = c.indexOf(0x0a, i);
      const line = Buffer.concat([this.runLine, c.subarray(i, lf < 0 ? c.length : lf + 1)]);
      if (lf < 0 && line.length <= MAX_RUN_LINE) {
        this.runLine = line;
        return c.length;
      }
      this.runLine = null;
      if (lf < 0 || startsLikeDelimiter(line, 0) || firstOf(line, 0, NOT_TAKEN) >= 0) {
        // that line, and what follows, is mailparser's as it comes
        this.endRun(this.lastEol);
        this.push(line.subarray(0, line.length - (lf < 0 ? c.length - i : lf + 1 - i)));
        this.mode = 'body';
        this.atLineStart = false;
        return i;
      }
      this.decode(line.toString('latin1'), line.length >= 2 && line[line.length - 2] === 0x0d ? 2 : 1);
      i = lf + 1;
      if (this.run?.spoiled) {
        this.endRun(this.lastEol);
        this.stopDiverting();
        return i;
      }
    }
    // No letters are taken at or after an "=" (padding: it and what follows are mailparser's), nor
    // a "-" or "_": Node's decoder reads them as base64url letters, where mailparser drops them.
    const eq = firstOf(c, i, NOT_TAKEN);
    const limit = eq < 0 ? c.length : eq;
    let cut = i;
    let ends = 0;
    let ended = eq >= 0;
    for (let lf = c.indexOf(0x0a, cut); lf >= 0 && lf < limit; lf = c.indexOf(0x0a, cut)) {
      if (startsLikeDelimiter(c, cut)) {
        ended = true;
        break;
      }
      ends += lf > cut && c[lf - 1] === 0x0d ? 2 : 1;
      cut = lf + 1;
    }
    if (cut > i) this.decode(c.toString('latin1', i, cut), ends);
    if (this.run?.spoiled) {
      // the message will be parsed again whole: nothing more is taken around the parser
      this.endRun(this.lastEol);
      this.stopDiverting();
      return cut;
    }
    if (!ended && c.length - cut <= MAX_RUN_LINE) {
      if (cut < c.length) this.runLine = Buffer.from(c.subarray(cut));
      return c.length;
    }
    // the run ends at the start of a line (one that is not all letters, or too long a line)
    this.endRun(this.lastEol);
    this.mode = 'body';
    this.atLineStart = true;
    return cut;
  }

  /**
   * Decodes whole quartets of the letters in `text` (whole lines; Node's decoder skips the line
   * ends) into the run's file; letters short of a quartet wait for the next line. `lineEnds`: the
   * CRs and LFs that end text's lines. A byte that is not a letter makes the decoded size come out
   * short of the letters' count: the diversion is then spoiled, never claimed.
   */
  private decode(text: string, lineEnds: number): void {
    this.lastEol = text.endsWith('\r\n') ? '\r\n' : '\n';
    const letters = this.leftover.length + text.length - lineEnds;
    const short = letters % 4;
    let quartets = this.leftover + text;
    this.leftover = '';
    if (short > 0) {
      let p = quartets.length;
      for (let got = 0; got < short; ) {
        const ch = quartets.charCodeAt(--p);
        if (ch !== 0x0d && ch !== 0x0a) got++;
      }
      this.leftover = quartets.slice(p).replace(LINE_ENDS, '');
      quartets = quartets.slice(0, p);
    }
    if (letters === short) return;
    const run = this.startRun();
    run.sink ??= this.openSink(run);
    // decoded straight into the part's held memory when it is held (HeldFile.writeBase64)
    const bytes = run.sink.writeBase64(quartets);
    if (bytes.length !== ((letters - short) / 4) * 3) {
      run.spoiled = true;
      run.sink.destroy();
      return;
    }
    run.bytes += bytes.length;
    run.head.add(bytes);
  }

  private startRun(): Diversion {
    if (!this.run) {
      this.run = { token: randomBytes(TOKEN_BYTES), file: path.join(this.dir.path, `diverted-${String(this.diversions.length).padStart(3, '0')}`), sink: null, bytes: 0, head: new Head(), claimed: false, spoiled: false };
      this.diversions.push(this.run);
    }
    return this.run;
  }

  openSink(d: Diversion): HeldFile {
    const sink = this.dir.file(d.file, true);
    sink.on('error', (err) => {
      this.failure ??= err;
      this.destroy(err);
    });
    return sink;
  }

  /** The stand-in goes where the run was: the token, the letters short of a quartet, the line's end. */
  private endRun(eol: string): void {
    if (this.run || this.leftover) {
      const run = this.startRun();
      this.push(Buffer.from(`${run.token.toString('base64')}${this.leftover}${eol}`, 'latin1'));
    }
    this.run = null;
    this.leftover = '';
  }

  private stopDiverting(): void {
    this.mode = 'off';
    this.headLines = [];
    this.headLine = [];
  }
}
