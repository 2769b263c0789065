// A message parsed with mailparser's streaming MailParser (simpleParser would buffer every
// attachment): each attachment is decoded straight into its own file next to the message (or, in
// a small mail, held in memory up to the message's bound: incoming-file.ts WorkDir), so memory
// holds only the headers, the text body and what a small mail holds. The SMTP receiver feeds it
// while DATA arrives (startMailParse: one pass, on the main thread); a stored file goes through
// parseMail. Nested
// message/rfc822 parts are walked by mailparser itself, so a forwarded mail's attachments come out
// here too, in message order.
// It runs on the main thread, so every step must be linear and bounded per chunk: mailsplit's
// limits below cap each header block (the costly part: address lists, encoded words) and the part
// count; turning HTML into text (html-to-text, costly on hostile HTML) is handed to the caller's
// htmlText, which the daemon runs on a reader thread with a time limit.
import { once } from 'node:events';
import { createReadStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import { Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TextDecoder } from 'node:util';
import { FLUSH_ON_CLOSE } from '../fs/atomic.js';
import { MailParser, type AddressObject, type AttachmentStream, type MessageText } from 'mailparser';
import { Base64Divert, TOKEN_BYTES } from './base64-divert.js';
import { bodyText } from './body-text.js';
import { Head } from './file-type.js';
import { prematureClose, WorkDir, type HeldFile } from './incoming-file.js';
import { MAX_SUBJECT_CHARS } from './subject-overrides.js';

export interface ParsedAddress {
  name: string;
  address: string;
}

export interface ExtractedPart {
  /** Its file; with `data`, where that file would be (nothing is written there). */
  path: string;
  /** The part's bytes, held in memory (a small mail) until its WorkDir is removed (HeldFile.data): no file at `path`. */
  data?: Buffer;
  /** The name the sender gave it, or a made-up one. */
  filename: string;
  /** The declared type (mailparser's, refined from the file name for octet-stream). */
  contentType: string;
  bytes: number;
  inline: boolean;
  /** Position in the message, 0-based. */
  index: number;
  /** The file's first bytes (HEAD_BYTES), kept while writing it, so its type is told without reading it again. */
  head?: Uint8Array;
  /** The file's size once fsynced as it was closed (FLUSH_ON_CLOSE); absent, the store fsyncs it. */
  flushedBytes?: number;
}

export interface ParsedMail {
  subject: string;
  /** The Date header as written (shown on a forwarded mail's text page), or '' */
  date: string;
  messageId: string | null;
  from: ParsedAddress | null;
  /** To and Cc, for display names of the envelope recipients. */
  recipients: ParsedAddress[];
  text: string;
  html: string;
  parts: ExtractedPart[];
}

// Text and HTML bodies are the only things kept in memory; a body past this is cut (it only
// feeds the cover notes, which are 4000 characters at most).
const MAX_BODY_CHARS = 1_000_000;

function addresses(v: AddressObject | AddressObject[] | undefined): ParsedAddress[] {
  const list = v === undefined ? [] : Array.isArray(v) ? v : [v];
  const out: ParsedAddress[] = [];
  const walk = (items: Array<{ name?: string; address?: string; group?: unknown[] }>): void => {
    for (const a of items) {
      if (Array.isArray(a.group)) walk(a.group as typeof items);
      else if (a.address) out.push({ name: oneLine(String(a.name ?? ''), 200), address: oneLine(String(a.address), 320) });
    }
  };
  for (const o of list) walk((o?.value ?? []) as Array<{ name?: string; address?: string }>);
  return out;
}

/** Control characters (CR, LF, TAB, NUL...) become spaces: a header value is one line of text, of at most `max` characters. */
export function oneLine(v: string, max = 1000): string {
  return (v.length > max ? v.slice(0, max) : v).replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}

function dateHeader(v: unknown): string {
  if (v instanceof Date && !Number.isNaN(v.getTime())) return v.toUTCString();
  return typeof v === 'string' ? v.replace(/[\r\n\t]+/g, ' ').trim().slice(0, 100) : '';
}

function defaultName(contentType: string, index: number): string {
  const ext = contentType.split('/')[1]?.replace(/[^a-z0-9]+/gi, '') || 'bin';
  return `attachment-${index + 1}.${ext}`;
}

function charsetOf(headers: Map<string, unknown> | undefined): string {
  const ct = headers?.get('content-type') as { params?: Record<string, string> } | undefined;
  return (ct?.params?.charset ?? '').trim().toLowerCase();
}

/**
 * Text attachments in a legacy charset (windows-1252, koi8-r, shift_jis...) are turned into UTF-8
 * as they stream, so the fax shows the right letters. Unknown charsets are left as they are.
 */
function toUtf8(charset: string): Transform | null {
  if (charset === '' || charset === 'utf-8' || charset === 'utf8' || charset === 'us-ascii') return null;
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset);
  } catch {
    return null;
  }
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      done(null, Buffer.from(decoder.decode(chunk, { stream: true }), 'utf8'));
    },
    flush(done) {
      done(null, Buffer.from(decoder.decode(), 'utf8'));
    },
  });
}

// Forwarded mail inside forwarded mail: deeper than this is not opened (and left out).
const MAX_NESTING = 5;

/**
 * mailsplit's limits (EMAXLEN past them). A header block of at most 256 KB costs at most about
 * 300 ms to read even when built to be slow (a Cc of address groups, the worst found), and about
 * 80 ms as plain header lines; mailsplit's default of 1 MB let one such block take 1.2 s. 256 KB
 * still takes a 200 KB folded subject, which a test sends on purpose.
 */
export const MAIL_LIMITS = { maxHeadSize: 256 * 1024, maxChildNodes: 1000 } as const;

export interface ParseOptions {
  /** HTML body to text (default: html-to-text on this thread). */
  htmlText?: (html: string) => Promise<string>;
}

const localHtmlText = async (html: string): Promise<string> => bodyText({ text: '', html });

/** A stored message parsed from its file, its parts written as files to `partsDir` (which exists). */
export function parseMail(messageFile: string, partsDir: string, depth = 0, opts: ParseOptions = {}): Promise<ParsedMail> {
  return parseMailStream(createReadStream(messageFile), new WorkDir(partsDir, 0, true), depth, opts);
}

export interface MailParse {
  /** Write the message here as it arrives; end() it after the last byte. */
  input: Writable;
  /**
   * Settles once the message is parsed and every part file is written and closed. Null: the
   * parse and the base64 diverter in front of it (base64-divert.ts) did not agree on the
   * message's shape, and the kept message must be parsed again from its file (parseMail).
   */
  done: Promise<ParsedMail | null>;
}

/**
 * A parse fed while the message arrives (one pass: nothing is read back from disk). If the
 * message breaks the parser, `input` is destroyed and `done` rejects with the parser's error: the
 * feeder goes on keeping the raw message and stops writing here. Big base64 bodies are decoded
 * around mailparser, straight into their files (base64-divert.ts).
 */
export function startMailParse(dir: WorkDir, opts: ParseOptions = {}): MailParse {
  const input = new Base64Divert(dir);
  const done = parseMailStream(input, dir, 0, opts, input).then(
    (parsed) => {
      if (input.unclaimed() === 0) return parsed;
      input.closeUnclaimed();
      return null;
    },
    (err: unknown) => {
      input.destroy();
      input.closeUnclaimed();
      throw err;
    },
  );
  // observed here, handled by whoever awaits it: a refusal for size must not leave it unhandled
  done.catch(() => undefined);
  return { input, done };
}

/**
 * mailparser feeds the message through two streams of mailsplit's whose reading side is in object
 * mode (ChunkedPassthrough, which gathers input into chunks of 64 KB or more, then the MIME
 * Splitter), so each holds up to 16 chunks (the default highWaterMark for objects) before it pushes
 * back: over a megabyte for each message on its way in. In a heap snapshot of 20 big mails arriving
 * at once that was 22 of the 31 MB of live Buffers. One chunk waiting in each keeps the parse busy
 * (2,000 mails of 100 KB were accepted as fast). If a later mailparser changes these streams, this
 * does nothing, and test/intake/mail-parse-buffering.test.ts notices.
 */
function holdOneChunk(parser: MailParser): void {
  const inner = parser as unknown as Record<string, { _readableState?: { objectMode?: boolean; highWaterMark?: number } } | undefined>;
  for (const name of ['chunkedPassthrough', 'splitter']) {
    const state = inner[name]?._readableState;
    if (state?.objectMode === true && typeof state.highWaterMark === 'number') state.highWaterMark = 1;
  }
}

/** Objects of the splitter's that the parser takes in one turn of the event loop at most (see below). */
export const OBJECTS_PER_TURN = 64;

/** What parseWithoutWaiting uses of mailparser's insides. */
interface ParserInsides {
  splitter: Readable;
  reading: boolean;
  hasFailed: boolean;
  endReceived: boolean;
  waitingEnd: unknown;
  attachmentCallback: unknown;
  curnode: { decoder?: Writable } | false | null;
  readData(): unknown;
  processChunk(data: unknown, done: (err?: Error | null) => void): void;
  endStream(): void;
  createNode(node: unknown): unknown;
}

type TransformStep = (this: Transform, ...args: unknown[]) => void;

/**
 * A decoder that does its work at once and then calls back through setImmediate (libbase64's, the
 * decoder of every base64 part), made to call back at once. A late call (the work was not all
 * done at once after all) is let pass, unless it brings an error.
 */
function answerAtOnce(decoder: Transform): Transform {
  const d = decoder as unknown as { _transform: TransformStep; _flush: TransformStep };
  const wrap = (step: TransformStep): TransformStep =>
    function (this: Transform, ...args: unknown[]): void {
      const done = args[args.length - 1] as (err?: Error | null, data?: unknown) => void;
      let answered = false;
      step.call(this, ...args.slice(0, -1), (err?: Error | null, data?: unknown) => {
        if (!answered) {
          answered = true;
          done(err, data);
        } else if (err) this.destroy(err);
      });
      if (!answered) {
        answered = true;
        done();
      }
    };
  if (typeof d._transform === 'function' && typeof d._flush === 'function') {
    d._transform = wrap(d._transform);
    d._flush = wrap(d._flush);
  }
  return decoder;
}

/**
 * mailparser takes the objects of mailsplit's splitter (a part's headers, a stretch of its body,
 * what lies between parts: 8 to 10 for a mail of a text and an attachment) one at a time, and two
 * turns of the event loop for each: processChunk does its work and then calls back through
 * setImmediate, and readData asks for the next object through setImmediate again; a base64 part's
 * decoder takes a turn for each stretch of body and one more at its end. A mail arrives within a
 * turn or two, so that was some 20 turns after its last byte, and on a receiver busy with 20
 * sessions a turn lasts about a millisecond: 11 to 16 ms a mail waited for its parse (measured
 * under smtp-source, docs/bench.md), a third of a session's time.
 *
 * Here readData goes on from one object to the next at once, up to OBJECTS_PER_TURN objects a
 * turn (each is bounded by mailsplit's limits, so a hostile message still yields the event loop
 * often). When processChunk waits (an attachment not yet released, a decoder that pushes back),
 * the next object waits for its call; otherwise its work is done when it returns, and its
 * scheduled call is let pass. Base64 decoders answer at once (answerAtOnce). If a later mailparser
 * changes these insides, this does nothing (mailparser's own ways run), and
 * test/intake/mail-parse-turns.test.ts notices.
 */
function parseWithoutWaiting(parser: MailParser): void {
  const p = parser as unknown as ParserInsides;
  const fits = typeof p.readData === 'function' && typeof p.processChunk === 'function' && typeof p.endStream === 'function' &&
    typeof p.createNode === 'function' && typeof p.splitter?.read === 'function' && typeof p.reading === 'boolean' && typeof p.endReceived === 'boolean';
  if (!fits) return;
  const createNode = p.createNode;
  p.createNode = function (node: unknown): unknown {
    const n = node as { encoding?: unknown; getDecoder?: () => Transform } | null;
    if (n && n.encoding === 'base64' && typeof n.getDecoder === 'function') {
      const getDecoder = n.getDecoder;
      n.getDecoder = function (this: unknown): Transform {
        return answerAtOnce(getDecoder.call(this));
      };
    }
    return createNode.call(this, node);
  };
  const fail = (err: Error): void => {
    if (typeof p.waitingEnd === 'function') (p.waitingEnd as (err: Error) => void)(err);
    else parser.emit('error', err);
  };
  const readData = (): void => {
    if (p.hasFailed) return;
    p.reading = true;
    for (let n = 0; n < OBJECTS_PER_TURN; n++) {
      const data: unknown = p.splitter.read();
      if (data === null) {
        p.reading = false;
        if (p.endReceived) p.endStream();
        return;
      }
      let answered = false;
      let waiting = false;
      const done = (err?: Error | null): void => {
        if (answered) return;
        answered = true;
        if (err) fail(err);
        else if (waiting) readData();
      };
      p.processChunk(data, done);
      if (answered) {
        // called back at once: only ever with an error
        return;
      }
      const decoder = p.curnode ? p.curnode.decoder : undefined;
      if (p.attachmentCallback === done || (decoder && decoder.listeners('drain').includes(done))) {
        waiting = true;
        return;
      }
      answered = true;
    }
    setImmediate(readData);
  };
  p.readData = readData;
}

/** mailparser's streaming parser with our limits, holding one chunk in each of its inner streams. */
export function newMailParser(): MailParser {
  const parser = new MailParser({ skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true, skipHtmlToText: true, checksumAlgo: false, ...MAIL_LIMITS });
  holdOneChunk(parser);
  parseWithoutWaiting(parser);
  return parser;
}

async function parseMailStream(source: Readable, dir: WorkDir, depth: number, opts: ParseOptions, divert?: Base64Divert): Promise<ParsedMail> {
  const parser = newMailParser();
  const parts: ExtractedPart[] = [];
  const writes: Array<Promise<void>> = [];
  let text = '';
  let html = '';

  // Whatever a hostile message makes mailparser hand us, a throw in this handler must become a
  // parse error of this message, never an uncaught exception of the whole process.
  parser.on('data', (data: AttachmentStream | MessageText) => {
    try {
      onData(data);
    } catch (err) {
      if (data.type === 'attachment') {
        data.content.resume();
        data.release?.();
      }
      parser.destroy(err as Error);
    }
  });
  const onData = (data: AttachmentStream | MessageText): void => {
    if (data.type === 'text') {
      text = (data.text ?? '').slice(0, MAX_BODY_CHARS);
      html = typeof data.html === 'string' ? data.html.slice(0, MAX_BODY_CHARS) : '';
      return;
    }
    const index = parts.length;
    const file = path.join(dir.path, `part-${String(index).padStart(3, '0')}`);
    // an empty "Content-Type:" header reaches us as something other than a string
    const contentType = (typeof data.contentType === 'string' && data.contentType ? data.contentType : 'application/octet-stream').toLowerCase();
    const part: ExtractedPart = {
      path: file,
      filename: (typeof data.filename === 'string' ? data.filename : '').trim() || defaultName(contentType, index),
      contentType,
      bytes: 0,
      inline: data.contentDisposition === 'inline' || data.related === true,
      index,
    };
    parts.push(part);
    // The parser waits for release() before it goes on: one attachment in flight at a time.
    const recode = part.contentType === 'text/plain' ? toUtf8(charsetOf(data.headers)) : null;
    const written = (divert && !recode ? writeMaybeDiverted(data.content, part, dir, divert) : writePart(data.content, recode, part, dir)).finally(() => data.release?.());
    // A write can fail (ENOSPC) while the parse goes on: observed now, reported by the allSettled
    // below; without this the rejection counts as unhandled until then.
    written.catch(() => undefined);
    writes.push(written);
  };

  try {
    // settles with the parser's 'end' (the text arrives with it), or with a parser error ("Max
    // allowed child nodes exceeded"...)
    await throughToEnd(source, parser);
  } finally {
    // every attachment write settles before we return or throw, so no stream outlives the call
    const settled = await Promise.allSettled(writes);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
  const from = addresses(parser.from)[0] ?? null;
  // An HTML-only body is turned into text here, through htmlText (a reader thread in the daemon):
  // html-to-text over a hostile megabyte of HTML must not run on the main thread. Once turned,
  // the HTML is dropped, so that nothing later (mailToJob's bodyText) converts it again here.
  if (!text.trim() && html.trim()) {
    text = (await (opts.htmlText ?? localHtmlText)(html)).slice(0, MAX_BODY_CHARS);
    if (opts.htmlText) html = '';
  }
  return {
    // bounded: it feeds the subject tags, the cover (55 characters) and notification subjects
    subject: oneLine(String(parser.subject ?? ''), MAX_SUBJECT_CHARS),
    date: dateHeader(parser.headers ? parser.headers.get('date') : undefined),
    messageId: parser.messageId ? String(parser.messageId) : null,
    from,
    recipients: [...addresses(parser.to), ...addresses(parser.cc)],
    text,
    html,
    parts: await openForwarded(parts, dir, depth, opts),
  };
}

/**
 * `source` piped into `through` until through's readable side ends. An error of either, or either
 * closed before its end, destroys both and rejects. What stream.pipeline does for two streams,
 * without what it costs a message (incoming-file.ts writeIncoming says what that is).
 */
function throughToEnd(source: Readable, through: Transform): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      source.unpipe(through);
      source.destroy();
      through.destroy();
      reject(err);
    };
    const early = (s: Readable) => (): void => {
      if (!s.readableEnded) fail(prematureClose('a stream of the message'));
    };
    source.on('error', fail).once('close', early(source));
    through.on('error', fail).once('close', early(through));
    through.once('end', () => {
      settled = true;
      resolve();
    });
    source.pipe(through);
  });
}

/** A part's decoded content into its own file (or memory), its first bytes kept. */
async function writePart(content: Readable, recode: Transform | null, part: ExtractedPart, dir: WorkDir): Promise<void> {
  content.on('data', (c: Buffer) => {
    part.bytes += c.length;
  });
  const sink = dir.file(part.path, true);
  // the first bytes as they go into the file (after recoding)
  const head = new Head();
  (recode ?? content).on('data', (c: Buffer) => head.add(c));
  await (recode ? pipeline(content, recode, sink) : pipeline(content, sink));
  part.head = head.bytes();
  finishPart(part, sink);
}

/** What a part's finished sink became: bytes held, or a file (fsynced as it closed, or not). */
function finishPart(part: ExtractedPart, sink: HeldFile): void {
  const data = sink.data();
  if (data) part.data = data;
  else if (sink.flushed()) part.flushedBytes = sink.bytes;
}

/**
 * A part that may be the stand-in for a diverted base64 body (base64-divert.ts): if its content
 * starts with a diversion's token, the part is that diversion's file, and what the parser decoded
 * after the token (the last letters of the body) is added to it. Otherwise an ordinary part.
 */
async function writeMaybeDiverted(content: Readable, part: ExtractedPart, dir: WorkDir, divert: Base64Divert): Promise<void> {
  const first: Buffer[] = [];
  let firstBytes = 0;
  let sink: HeldFile | null = null;
  let head = new Head();
  /** Counts, keeps the first bytes of and writes `c`; false: wait for the file's drain. */
  const put = (c: Buffer): boolean => {
    part.bytes += c.length;
    head.add(c);
    return sink!.write(c);
  };
  try {
    for await (const chunk of content as AsyncIterable<Buffer>) {
      let c = chunk;
      if (!sink) {
        first.push(c);
        firstBytes += c.length;
        if (firstBytes < TOKEN_BYTES) continue;
        c = first.length === 1 ? first[0]! : Buffer.concat(first);
        const diverted = divert.claim(c);
        if (diverted) {
          part.path = diverted.file;
          part.bytes = diverted.bytes;
          head = diverted.head;
          sink = diverted.sink ?? divert.openSink(diverted);
          c = c.subarray(TOKEN_BYTES);
        } else {
          sink = dir.file(part.path, true);
        }
      }
      if (!put(c)) await once(sink, 'drain');
    }
    if (!sink) {
      // shorter than a token: an ordinary small part
      sink = dir.file(part.path, true);
      put(Buffer.concat(first));
    }
    const closed = once(sink, 'close');
    sink.end();
    await closed;
    if (sink.errored) throw sink.errored;
  } catch (err) {
    sink?.destroy();
    throw err;
  }
  part.head = head.bytes();
  finishPart(part, sink);
}

/**
 * A forwarded message sent as an attachment (message/rfc822 with Content-Disposition:
 * attachment) comes out of mailparser as one opaque part; its own attachments take its place.
 */
async function openForwarded(parts: ExtractedPart[], dir: WorkDir, depth: number, opts: ParseOptions): Promise<ExtractedPart[]> {
  if (!parts.some((p) => p.contentType === 'message/rfc822')) return parts;
  const out: ExtractedPart[] = [];
  for (const p of parts) {
    if (p.contentType !== 'message/rfc822' || depth >= MAX_NESTING) {
      out.push(p);
      continue;
    }
    // parsed from its file, its own parts written as files (forwarded mail is rare: no need to hold it)
    if (p.data) {
      await dir.writeOut(p.path, p.data);
      delete p.data;
    }
    const sub = path.join(dir.path, `fwd-${String(p.index).padStart(3, '0')}`);
    await dir.ready();
    await fsp.mkdir(sub, { mode: 0o700 });
    const inner = await parseMail(p.path, sub, depth + 1, opts);
    if (inner.parts.length > 0) {
      out.push(...inner.parts);
      continue;
    }
    // A forwarded mail with nothing attached ("forward as attachment" of a plain mail): what the
    // sender wants faxed is that mail itself, so it becomes a text page with its header lines.
    // With no text either it stays the opaque part, left out with a reason the sender is told.
    const page = await forwardedAsText(inner, sub, p.index);
    out.push(page ?? p);
  }
  return out.map((p, index) => ({ ...p, index }));
}

/** The forwarded mail as a plain-text document (From, Date, Subject, then its text), or null if it has no text. */
async function forwardedAsText(inner: ParsedMail, dir: string, index: number): Promise<ExtractedPart | null> {
  const text = bodyText(inner);
  if (!text) return null;
  const from = inner.from ? (inner.from.name ? `${inner.from.name} <${inner.from.address}>` : inner.from.address) : '';
  const header = [from && `From: ${from}`, inner.date && `Date: ${inner.date}`, inner.subject && `Subject: ${inner.subject}`].filter(Boolean).join('\n');
  const file = path.join(dir, 'forwarded-message.txt');
  const content = Buffer.from(`${header ? `${header}\n\n` : ''}${text}\n`, 'utf8');
  await fsp.writeFile(file, content, { mode: 0o600, flush: FLUSH_ON_CLOSE });
  const name = inner.subject.replace(/[^\p{L}\p{N} ._-]+/gu, ' ').trim().slice(0, 60) || 'forwarded message';
  return { path: file, filename: `${name}.txt`, contentType: 'text/plain', bytes: content.length, inline: false, index, ...(FLUSH_ON_CLOSE ? { flushedBytes: content.length } : {}) };
}
