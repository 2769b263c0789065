// A message parsed with mailparser's streaming MailParser (simpleParser would buffer every
// attachment): each attachment is decoded straight into its own file (or, in a small mail, held in
// memory: incoming-file.ts), so memory holds only headers and text. The SMTP receiver feeds it
// while DATA arrives (startMailParse, on the main thread, so mailsplit's limits bound every step);
// a stored file goes through parseMail. HTML to text is the caller's htmlText, run off the thread.
import { createReadStream, promises as fsp } from "node:fs";
import path from "node:path";
import { PassThrough, Transform, type Readable, type Writable } from "node:stream";
import { TextDecoder } from "node:util";
import { FLUSH_ON_CLOSE, pipeChain } from "../../fs/index.js";
import { MailParser, type AddressObject, type AttachmentStream, type MessageText } from "mailparser";
import { bodyText } from "./body-text.js";
import { Head } from "../documents/file-type.js";
import { HeldMemory } from "./held-memory.js";
import { WorkDir, type HeldFile } from "./incoming-file.js";
import { MAX_SUBJECT_CHARS } from "./subject-overrides.js";

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
      else if (a.address)
        out.push({ name: oneLine(String(a.name ?? ""), 200), address: oneLine(String(a.address), 320) });
    }
  };
  for (const o of list) walk((o?.value ?? []) as Array<{ name?: string; address?: string }>);
  return out;
}

/** Control characters (CR, LF, TAB, NUL...) become spaces: a header value is one line of text, of at most `max` characters. */
export function oneLine(v: string, max = 1000): string {
  return (v.length > max ? v.slice(0, max) : v).replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
}

function dateHeader(v: unknown): string {
  if (v instanceof Date && !Number.isNaN(v.getTime())) return v.toUTCString();
  return typeof v === "string"
    ? v
        .replace(/[\r\n\t]+/g, " ")
        .trim()
        .slice(0, 100)
    : "";
}

function defaultName(contentType: string, index: number): string {
  const ext = contentType.split("/")[1]?.replace(/[^a-z0-9]+/gi, "") || "bin";
  return `attachment-${index + 1}.${ext}`;
}

function charsetOf(headers: Map<string, unknown> | undefined): string {
  const ct = headers?.get("content-type") as { params?: Record<string, string> } | undefined;
  return (ct?.params?.charset ?? "").trim().toLowerCase();
}

/**
 * Text attachments in a legacy charset (windows-1252, koi8-r, shift_jis...) are turned into UTF-8
 * as they stream, so the fax shows the right letters. Unknown charsets are left as they are.
 */
function toUtf8(charset: string): Transform | null {
  if (charset === "" || charset === "utf-8" || charset === "utf8" || charset === "us-ascii") return null;
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset);
  } catch {
    return null;
  }
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      done(null, Buffer.from(decoder.decode(chunk, { stream: true }), "utf8"));
    },
    flush(done) {
      done(null, Buffer.from(decoder.decode(), "utf8"));
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

const localHtmlText = async (html: string): Promise<string> => bodyText({ text: "", html });

/** A stored message parsed from its file, its parts written as files to `partsDir` (which exists). */
export function parseMail(
  messageFile: string,
  partsDir: string,
  depth = 0,
  opts: ParseOptions = {},
): Promise<ParsedMail> {
  return parseMailStream(createReadStream(messageFile), new WorkDir(partsDir, 0, new HeldMemory(), true), depth, opts);
}

export interface MailParse {
  /** Write the message here as it arrives; end() it after the last byte. */
  input: Writable;
  /** Settles once the message is parsed and every part file is written and closed. */
  done: Promise<ParsedMail>;
}

/**
 * A parse fed while the message arrives (one pass: nothing is read back from disk). If the
 * message breaks the parser, `input` is destroyed and `done` rejects with the parser's error: the
 * feeder goes on keeping the raw message and stops writing here.
 */
export function startMailParse(dir: WorkDir, opts: ParseOptions = {}): MailParse {
  const input = new PassThrough();
  const done = parseMailStream(input, dir, 0, opts).catch((err: unknown) => {
    input.destroy();
    throw err;
  });
  // observed here, handled by whoever awaits it: a refusal for size must not leave it unhandled
  done.catch(() => undefined);
  return { input, done };
}

/** mailparser's streaming parser with our limits, its conversions we do not use turned off. */
export function newMailParser(): MailParser {
  return new MailParser({
    skipImageLinks: true,
    skipTextToHtml: true,
    skipTextLinks: true,
    skipHtmlToText: true,
    checksumAlgo: false,
    ...MAIL_LIMITS,
  });
}

/** An attachment as the job will know it: its file in the work folder, type, name, placement. */
function describePart(data: AttachmentStream, dir: WorkDir, index: number): ExtractedPart {
  // an empty "Content-Type:" header reaches us as something other than a string
  const contentType = (
    typeof data.contentType === "string" && data.contentType ? data.contentType : "application/octet-stream"
  ).toLowerCase();
  return {
    path: path.join(dir.path, `part-${String(index).padStart(3, "0")}`),
    filename: (typeof data.filename === "string" ? data.filename : "").trim() || defaultName(contentType, index),
    contentType,
    bytes: 0,
    inline: data.contentDisposition === "inline" || data.related === true,
    index,
  };
}

/**
 * Settles once the parser's last object is taken (the text arrives with its end), or with the
 * first error of either stream. Whatever a hostile message makes mailparser hand us, a throw
 * while taking it becomes a parse error of this message, never an uncaught exception (pipeChain
 * rejects with that throw; stream.pipeline, used here before, put an AbortError in its place).
 */
function takeObjects(
  source: Readable,
  parser: ReturnType<typeof newMailParser>,
  take: (data: AttachmentStream | MessageText) => void,
): Promise<{ ok: true } | { ok: false; err: unknown }> {
  // (mailparser's typings give its read() a Buffer's type, not the objects it hands out)
  return pipeChain(source, parser as unknown as Transform, async (objects: AsyncIterable<unknown>) => {
    for await (const data of objects as AsyncIterable<AttachmentStream | MessageText>) {
      try {
        take(data);
      } catch (err) {
        if (data.type === "attachment") {
          data.content.resume();
          data.release?.();
        }
        throw err;
      }
    }
  }).then(
    () => ({ ok: true as const }),
    (err: unknown) => ({ ok: false as const, err }),
  );
}

async function parseMailStream(source: Readable, dir: WorkDir, depth: number, opts: ParseOptions): Promise<ParsedMail> {
  const parser = newMailParser();
  const parts: ExtractedPart[] = [];
  const writes: Array<Promise<void>> = [];
  let text = "";
  let html = "";

  const onData = (data: AttachmentStream | MessageText): void => {
    if (data.type === "text") {
      text = (data.text ?? "").slice(0, MAX_BODY_CHARS);
      html = typeof data.html === "string" ? data.html.slice(0, MAX_BODY_CHARS) : "";
      // The parser's own copies (public fields, unused here) let go: by now the parser is in V8's
      // old generation, and what it refers to is kept and promoted until a full collection,
      // about 100 KB a 100 KB text mail (docs/bench.md, "Text a finished parser held").
      parser.text = false;
      parser.html = false;
      parser.textAsHtml = false;
      return;
    }
    const part = describePart(data, dir, parts.length);
    parts.push(part);
    // The parser waits for release() before it goes on: one attachment in flight at a time.
    const recode = part.contentType === "text/plain" ? toUtf8(charsetOf(data.headers)) : null;
    const written = writePart(data.content, recode, part, dir).finally(() => data.release?.());
    // A write can fail (ENOSPC) while the parse goes on: observed now, reported by the allSettled
    // below; without this the rejection counts as unhandled until then.
    written.catch(() => undefined);
    writes.push(written);
  };

  const parsed = await takeObjects(source, parser, onData);
  // every attachment write settles before we return or throw, so no stream outlives the call
  const settled = await Promise.allSettled(writes);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  if (!parsed.ok) throw parsed.err;
  const from = addresses(parser.from)[0] ?? null;
  // An HTML-only body is turned into text here, through htmlText (a reader thread in the daemon):
  // html-to-text over a hostile megabyte of HTML must not run on the main thread. Once turned,
  // the HTML is dropped, so that nothing later (mailToJob's bodyText) converts it again here.
  if (!text.trim() && html.trim()) {
    text = (await (opts.htmlText ?? localHtmlText)(html)).slice(0, MAX_BODY_CHARS);
    if (opts.htmlText) html = "";
  }
  return {
    // bounded: it feeds the subject tags, the cover (55 characters) and notification subjects
    subject: oneLine(String(parser.subject ?? ""), MAX_SUBJECT_CHARS),
    date: dateHeader(parser.headers ? parser.headers.get("date") : undefined),
    messageId: parser.messageId ? String(parser.messageId) : null,
    from,
    recipients: [...addresses(parser.to), ...addresses(parser.cc)],
    text,
    html,
    parts: await openForwarded(parts, dir, depth, opts),
  };
}

/** A part's decoded content into its own file (or memory), its first bytes kept. */
async function writePart(
  content: Readable,
  recode: Transform | null,
  part: ExtractedPart,
  dir: WorkDir,
): Promise<void> {
  content.on("data", (c: Buffer) => {
    part.bytes += c.length;
  });
  const sink = dir.file(part.path, true);
  // the first bytes as they go into the file (after recoding)
  const head = new Head();
  (recode ?? content).on("data", (c: Buffer) => head.add(c));
  await (recode ? pipeChain(content, recode, sink) : pipeChain(content, sink));
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
 * A forwarded message sent as an attachment (message/rfc822 with Content-Disposition:
 * attachment) comes out of mailparser as one opaque part; its own attachments take its place.
 */
async function openForwarded(
  parts: ExtractedPart[],
  dir: WorkDir,
  depth: number,
  opts: ParseOptions,
): Promise<ExtractedPart[]> {
  if (!parts.some((p) => p.contentType === "message/rfc822")) return parts;
  const out: ExtractedPart[] = [];
  for (const p of parts) {
    if (p.contentType !== "message/rfc822" || depth >= MAX_NESTING) {
      out.push(p);
      continue;
    }
    // parsed from its file, its own parts written as files (forwarded mail is rare: no need to hold it)
    if (p.data) {
      await dir.writeOut(p.path, p.data);
      delete p.data;
    }
    const sub = path.join(dir.path, `fwd-${String(p.index).padStart(3, "0")}`);
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
  const from = inner.from ? (inner.from.name ? `${inner.from.name} <${inner.from.address}>` : inner.from.address) : "";
  const header = [
    from && `From: ${from}`,
    inner.date && `Date: ${inner.date}`,
    inner.subject && `Subject: ${inner.subject}`,
  ]
    .filter(Boolean)
    .join("\n");
  const file = path.join(dir, "forwarded-message.txt");
  const content = Buffer.from(`${header ? `${header}\n\n` : ""}${text}\n`, "utf8");
  await fsp.writeFile(file, content, { mode: 0o600, flush: FLUSH_ON_CLOSE });
  const name =
    inner.subject
      .replace(/[^\p{L}\p{N} ._-]+/gu, " ")
      .trim()
      .slice(0, 60) || "forwarded message";
  return {
    path: file,
    filename: `${name}.txt`,
    contentType: "text/plain",
    bytes: content.length,
    inline: false,
    index,
    ...(FLUSH_ON_CLOSE ? { flushedBytes: content.length } : {}),
  };
}
