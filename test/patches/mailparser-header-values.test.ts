// patches/mailparser+header-values.patch (each header value made once) against mailparser's own
// code, the installed file with that patch undone: the same headers map for the message and every
// part, and the same fields on the parser (subject, messageId, inReplyTo, replyTo...), for messages
// built from many kinds of header (ASCII, raw UTF-8, 8-bit bytes that are not UTF-8, encoded words,
// dates good and bad, address lists, repeated and list headers), in random chunkings. The ESM
// build is held to the same upstream (the two builds are the same code).
import type { Transform } from "node:stream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { fuzzStream, randomCuts } from "../helpers/fuzz.js";
import { importInstalled, loadInstalled, loadUnpatched } from "../helpers/unpatched.js";

type ParserClass = new (options?: Record<string, unknown>) => Transform & Record<string, unknown>;

const PATCH = "mailparser+header-values.patch";
const upstream = loadUnpatched<ParserClass>("mailparser", "dist/cjs/mail-parser.js", PATCH);
const patched = loadInstalled<ParserClass>("mailparser", "dist/cjs/mail-parser.js");
const patchedEsm = (await importInstalled<{ default: ParserClass }>("mailparser", "dist/esm/mail-parser.js")).default;

const FIELDS = ["subject", "references", "date", "to", "from", "cc", "bcc", "messageId", "inReplyTo", "replyTo"];

/** Every headers map the parser hands out (the message's, then each part's), and its fields. */
async function parse(Parser: ParserClass, chunks: Buffer[]): Promise<unknown> {
  const parser = new Parser({ skipImageLinks: true, skipTextToHtml: true, skipHtmlToText: true });
  const maps: unknown[] = [];
  const over = new Promise<void>((resolve, reject) => {
    parser.on("headers", (h: Map<string, unknown>) => maps.push([...h]));
    parser.on(
      "data",
      (d: { type: string; headers?: Map<string, unknown>; content?: NodeJS.ReadableStream; release?(): void }) => {
        if (d.headers) maps.push([...d.headers]);
        if (d.content) {
          d.content.resume();
          d.content.on("end", () => d.release?.());
        }
      },
    );
    parser.on("end", resolve);
    parser.on("error", reject);
  });
  for (const c of chunks) parser.write(c);
  parser.end();
  await over;
  return { maps, fields: FIELDS.map((f) => [f, parser[f]]) };
}

const utf8 = (s: string): string => Buffer.from(s, "utf8").toString("latin1");

/** Header lines of many kinds, written as latin1 text (one char a byte). */
function headerLines(next: () => number): string[] {
  const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!;
  const name = (): string =>
    pick([
      "Anna Bell",
      utf8("Zoë Müller"),
      "=?utf-8?B?w5xsbGk=?=",
      "=?iso-8859-1?Q?J=F6rg?=",
      '"Doe, John"',
      "\xe9\xe8 broken",
      "",
    ]);
  const addr = (): string => {
    const n = name();
    const a = pick(["anna@example.com", "15551234567@fax.example.com", utf8("zoë@example.org"), "x@y"]);
    return n ? `${n} <${a}>` : a;
  };
  const list = (): string =>
    Array.from({ length: 1 + Math.floor(next() * 3) }, addr).join(", ") + pick(["", ", team: a@b.c, d@e.f;"]);
  const id = (): string => pick(["<a1@example.com>", "b2@example.com", "<c3@[127.0.0.1]>", utf8("<ü@x>")]);
  const lines = [
    `From: ${list()}`,
    `To: ${list()}`,
    `Subject: ${pick(["Fax 1", utf8("Grüße aus Köln"), "=?utf-8?Q?Gr=C3=BC=C3=9Fe?= und", "\xff\xfe bytes", "", "  padded  "])}`,
    `Date: ${pick(["Mon, 30 Nov 2026 10:00:00 +0100", "not a date", "2026-11-30T10:00:00Z", ""])}`,
    `Message-ID: ${id()}`,
  ];
  const extra = [
    () => `Cc: ${list()}`,
    () => `Bcc: ${list()}`,
    () => `Reply-To: ${list()}`,
    () => `Sender: ${addr()}`,
    () => `In-Reply-To: ${id()}`,
    () => `References: ${id()} ${id()}`,
    () => `References: ${id()}`,
    () => `X-Priority: ${pick(["1 (Highest)", "3", "5"])}`,
    () => `Importance: ${pick(["high", "low"])}`,
    () => `List-Id: ${pick(["Office <office.example.com>", utf8("Büro <b.example.com>")])}`,
    () => `List-Unsubscribe: <mailto:leave@example.com>, <https://example.com/u>`,
    () => `Received: from a.example.com by b.example.com; ${pick(["Mon, 30 Nov 2026 10:00:00 +0100", utf8("é")])}`,
    () => `X-Note: ${pick(["plain", utf8("ünïcode"), "\x80\x81 raw", "=?utf-8?B?4pyT?="])}`,
    () => "X-Empty:",
    () => `DKIM-Signature: v=1; a=rsa-sha256; d=example.com; s=s (not a comment); h=from:to; b=abc`,
    () => `Disposition-Notification-To: ${addr()}`,
  ];
  for (let k = Math.floor(next() * 8); k > 0; k--) lines.push(pick(extra)());
  return lines;
}

function message(next: () => number): Buffer {
  const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!;
  const part = (): string =>
    pick([
      `Content-Type: text/plain; charset=utf-8\r\n\r\n${utf8("Bitte faxen.")}\r\n`,
      `Content-Type: application/pdf; name="${pick(["a.pdf", utf8("bré.pdf"), "=?utf-8?Q?b=C3=A9.pdf?="])}"\r\nContent-Disposition: attachment; filename*=utf-8''b%C3%A9.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n`,
      `Content-Type: text/plain (comment); charset="iso-8859-1"\r\nContent-Disposition: inline\r\n\r\nText\xe9\r\n`,
    ]);
  const head = `${headerLines(next).join("\r\n")}\r\nMIME-Version: 1.0\r\n`;
  const body =
    next() < 0.3
      ? `Content-Type: text/plain\r\n\r\nOnly text.\r\n`
      : `Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\n${part()}--B\r\n${part()}--B--\r\n`;
  return Buffer.from(head + body, "latin1");
}

describe("mailparser+header-values.patch", () => {
  // a date that does not parse becomes "now" in both: one fixed now
  beforeAll(() => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.parse("2026-11-30T12:00:00Z") });
  });
  afterAll(() => {
    vi.useRealTimers();
  });

  it("gives upstream's headers and fields for every message and chunking", async () => {
    const { seed, next } = fuzzStream();
    for (let i = 0; i < 300; i++) {
      const input = message(next);
      const chunks = randomCuts(input, () => 1 + Math.floor(next() * 200));
      const want = await parse(upstream, chunks);
      expect(await parse(patched, chunks), `seed ${seed}, message ${i}`).toEqual(want);
      expect(await parse(patchedEsm, chunks), `seed ${seed}, message ${i} (ESM)`).toEqual(want);
    }
  });

  it("reads 8-bit header bytes as UTF-8 still, and keeps an ASCII value as it is", async () => {
    const input = Buffer.from(
      `From: a@example.com\r\nTo: b@example.com\r\nSubject: ${utf8("Grüße")}\r\nX-A: plain text\r\n\r\nbody\r\n`,
      "latin1",
    );
    const out = (await parse(patched, [input])) as { maps: Array<Array<[string, unknown]>> };
    const h = new Map(out.maps[0]);
    expect(h.get("subject")).toBe("Grüße");
    expect(h.get("x-a")).toBe("plain text");
  });
});
