// The big part of a mail is almost always one attachment in base64, and mailparser reads it line
// by line (mailsplit takes a 100 KB mail as some 1,300 lines, each sliced, checked for a boundary
// and handed on), then strips and decodes it in JavaScript: two thirds of the parse's CPU, measured
// in docs/bench.md. This stream stands in front of mailparser and takes such a body around it: the
// base64 is decoded natively, a chunk at a time, straight into the part's file, and mailparser is
// handed a short stand-in in its place (a random token in base64). mailparser still reads every
// header and decides everything about the part (whether it is an attachment, its name, its type);
// when the part it reports starts with the token, the part's file is the diverted one, followed
// by whatever mailparser decoded after the token.
//
// What is taken around the parser is only ever whole lines of base64 letters (A-Z a-z 0-9 + /) and
// line ends, at the start of a part's body: no such line is a MIME boundary or a header, so the
// stand-in changes no part's limits, only that one body's content. A body is taken only after a
// boundary this stream knows from a multipart's Content-Type, and a header block that mailsplit's
// own header reader says is base64 and not text, message or multipart. Anything this stream is not
// sure of (a long line, a header block over 64 KB, an unknown boundary) it passes through untouched.
// And if any diverted body is not claimed by a part that starts with its token, the stream and the
// parser disagreed about the message's shape: the caller then parses the kept message again, the
// ordinary way (unclaimed() > 0), so a message built to confuse this gets exactly the old result.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { MimeNode } from '@zone-eu/mailsplit';
import { FLUSH_ON_CLOSE } from '../fs/atomic.js';
import { HEAD_BYTES } from './file-type.js';

/** The stand-in's size: 24 random bytes, 32 base64 letters without padding. */
export const TOKEN_BYTES = 24;
/** A header block bigger than this ends diverting for the message (mailsplit has its own limit). */
const MAX_HEAD_BYTES = 64 * 1024;
/** A boundary line is at most 70 characters of boundary and a few more; longer is not one of ours. */
const MAX_DELIMITER_LINE = 1024;
/** A base64 line longer than this ends the diverted run; the rest goes to mailparser as it is. */
const MAX_RUN_LINE = 64 * 1024;
const LINE_ENDS = /[\r\n]+/g;
const LETTER = 1;
/** LETTER for the 64 base64 letters, 2 for CR and LF, 0 for anything else (it ends a run). */
const RUN_BYTE = new Uint8Array(256);
for (const ch of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') RUN_BYTE[ch.charCodeAt(0)] = LETTER;
RUN_BYTE[0x0d] = 2;
RUN_BYTE[0x0a] = 2;
const NL_DASH = Buffer.from('\n-');

export interface Diversion {
  /** What the stand-in decodes to. */
  token: Buffer;
  file: string;
  /** Opened at the first decoded byte (or at the claim, for a body of a few letters). */
  sink: WriteStream | null;
  bytes: number;
  /** The file's first bytes (HEAD_BYTES). */
  head: Buffer[];
  headBytes: number;
  claimed: boolean;
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
  private runLine = '';
  /** CRs in runLine (a CR at the end of a chunk, its LF in the next) */
  private runLineEnds = 0;
  private leftover = '';
  private lastEol = '\r\n';
  private failure: Error | null = null;

  constructor(private readonly dir: string) {
    super();
  }

  /** Diverted bodies no part has claimed yet. */
  unclaimed(): number {
    return this.diversions.filter((d) => !d.claimed).length;
  }

  /**
   * The diversion whose token `first` starts with, marked claimed; null if none. The caller
   * writes what follows the token to its sink and ends it (finishDiversion).
   */
  claim(first: Buffer): Diversion | null {
    if (first.length < TOKEN_BYTES) return null;
    const d = this.diversions.find((x) => !x.claimed && first.compare(x.token, 0, TOKEN_BYTES, 0, TOKEN_BYTES) === 0);
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
      // the last line had no line end: it is whole now
      this.decode(this.runLine, this.runLineEnds, null);
      this.runLine = '';
      this.runLineEnds = 0;
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
    const eligible = node.encoding === 'base64' && !/^(text|message|multipart)\//.test(type);
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

  /** Whole base64 lines are decoded into the diversion's file; returns where the run ended (or the chunk's end). */
  private inRun(c: Buffer, i: number): number {
    if (this.run === null && this.runLine === '' && this.leftover === '' && RUN_BYTE[c[i]!] !== LETTER) {
      // a body that does not start with base64 letters (empty, a blank line first...): left alone
      this.mode = 'body';
      return i;
    }
    // up to the first byte that is neither a letter nor a line end (a table, not a regular
    // expression: half the time), counting the line ends up to the last LF
    let ends = 0;
    let endsAtLf = 0;
    let lastLf = -1;
    let bad = -1;
    for (let p = i; p < c.length; p++) {
      const kind = RUN_BYTE[c[p]!];
      if (kind === LETTER) continue;
      if (kind === 0) {
        bad = p;
        break;
      }
      ends++;
      if (c[p] === 0x0a) {
        lastLf = p;
        endsAtLf = ends;
      }
    }
    // whole lines are decoded: up to the last LF before the run's end
    const cut = lastLf + 1 > i ? lastLf + 1 : i;
    const atLineStart = cut > i || this.runLine === '';
    if (cut > i) {
      const crlf = cut - i >= 2 ? c[cut - 2] === 0x0d : this.runLine.endsWith('\r');
      this.decode(this.runLine + c.toString('latin1', i, cut), this.runLineEnds + endsAtLf, crlf ? '\r\n' : '\n');
      this.runLine = '';
      this.runLineEnds = 0;
    }
    if (bad >= 0) {
      // the run ends at the start of the line where the letters stop; that line is passed on whole
      this.endRun(this.lastEol);
      if (this.runLine) this.push(Buffer.from(this.runLine, 'latin1'));
      this.runLine = '';
      this.runLineEnds = 0;
      this.mode = 'body';
      this.atLineStart = atLineStart;
      return cut;
    }
    this.runLine += c.toString('latin1', cut);
    this.runLineEnds += ends - endsAtLf;
    if (this.runLine.length > MAX_RUN_LINE) {
      // not a line a mailer writes: the rest of it, and all after, is mailparser's as it comes
      this.endRun(this.lastEol);
      this.push(Buffer.from(this.runLine, 'latin1'));
      this.runLine = '';
      this.runLineEnds = 0;
      this.mode = 'body';
      this.atLineStart = false;
    }
    return c.length;
  }

  /**
   * Decodes whole quartets of `text`'s letters into the run's file (Node's decoder skips the line
   * ends); the letters short of a quartet wait for the next line. `lineEnds`: CRs and LFs in text.
   */
  private decode(text: string, lineEnds: number, eol: string | null): void {
    if (eol) this.lastEol = eol;
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
    const bytes = Buffer.from(quartets, 'base64');
    run.bytes += bytes.length;
    if (run.headBytes < HEAD_BYTES) {
      const take = Buffer.from(bytes.subarray(0, HEAD_BYTES - run.headBytes));
      run.head.push(take);
      run.headBytes += take.length;
    }
    run.sink ??= this.openSink(run);
    run.sink.write(bytes);
  }

  private startRun(): Diversion {
    if (!this.run) {
      this.run = { token: randomBytes(TOKEN_BYTES), file: path.join(this.dir, `diverted-${String(this.diversions.length).padStart(3, '0')}`), sink: null, bytes: 0, head: [], headBytes: 0, claimed: false };
      this.diversions.push(this.run);
    }
    return this.run;
  }

  openSink(d: Diversion): WriteStream {
    // fsynced as it is closed, as every part file is (mail-parse.ts)
    const sink = createWriteStream(d.file, { mode: 0o600, flush: FLUSH_ON_CLOSE });
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
