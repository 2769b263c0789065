// patches/mailparser+flat-text.patch (a text part's CR LF made LF in its bytes, before they become
// a string) against mailparser's own code, the installed file with that patch undone: random text
// parts (CRLF, bare LF, lone CR and CR CR LF line ends, UTF-8 cut anywhere, invalid and truncated
// sequences, a CR inside a sequence, latin1 and UTF-16 charsets, format=flowed, quoted-printable
// and base64) in random chunks and 1-byte chunks must give exactly the same text, HTML and
// textAsHtml. The ESM build (the one faxgate imports) is held to the same.
import type { Transform } from "node:stream";
import { describe, expect, it } from "vitest";
import { byteCuts, fuzzStream, randomCuts } from "../helpers/fuzz.js";
import { parserTexts } from "../helpers/feed-stream.js";
import { importInstalled, loadInstalled, loadUnpatched } from "../helpers/unpatched.js";

type ParserClass = new (options?: Record<string, unknown>) => Transform;

const PATCH = "mailparser+flat-text.patch";
const upstream = loadUnpatched<ParserClass>("mailparser", "dist/cjs/mail-parser.js", PATCH);
const patched = loadInstalled<ParserClass>("mailparser", "dist/cjs/mail-parser.js");
const patchedEsm = (await importInstalled<{ default: ParserClass }>("mailparser", "dist/esm/mail-parser.js")).default;

/** The text objects the parser hands out (text, html, textAsHtml). */
const parse = (Parser: ParserClass, chunks: Buffer[]): Promise<string[]> => parserTexts(new Parser(), chunks);

function randomMessage(next: () => number): Buffer {
  const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!;
  const eol = () => pick(["\r\n", "\r\n", "\n", "\r", "\r\r\n", "\n\r"]);
  const piece = (): Buffer =>
    pick([
      () => Buffer.from("plain words ", "latin1"),
      () => Buffer.from("ünïcödé € 𝄞 ", "utf8"),
      () => Buffer.from([0xe2, 0x82]), // a sequence cut short
      () => Buffer.from([0xe2, 0x0d, 0x0a]), // a CR LF inside a sequence
      () => Buffer.from([0xf0, 0x9d, 0x0d]),
      () => Buffer.from([0xff, 0xc3]),
      () => Buffer.from([Math.floor(next() * 256)]),
      () => Buffer.from("x".repeat(Math.floor(next() * 200)), "latin1"),
    ])();
  const lines = Math.floor(next() * (next() < 0.2 ? 2000 : 40));
  const body: Buffer[] = [];
  for (let k = 0; k < lines; k++) {
    const n = Math.floor(next() * 4);
    for (let j = 0; j < n; j++) body.push(piece());
    body.push(Buffer.from(eol(), "latin1"));
  }
  let content = Buffer.concat(body);
  const charset = pick(["utf-8", "utf-8", "iso-8859-1", "utf-16le", ""]);
  const flowed = next() < 0.15 ? "; format=flowed" : "";
  const encoding = pick(["8bit", "8bit", "quoted-printable", "base64"]);
  if (encoding === "base64") content = Buffer.from(content.toString("base64").replace(/.{76}/g, "$&\r\n"), "latin1");
  else if (encoding === "quoted-printable")
    content = Buffer.from(
      [...content]
        .map((b) =>
          b === 0x3d || b > 0x7e ? `=${b.toString(16).toUpperCase().padStart(2, "0")}` : String.fromCharCode(b),
        )
        .join(""),
      "latin1",
    );
  const type = `Content-Type: text/plain${charset ? `; charset=${charset}` : ""}${flowed}\r\nContent-Transfer-Encoding: ${encoding}\r\n\r\n`;
  if (next() < 0.3) {
    const html = Buffer.from(`<p>some\r\nhtml</p>${eol()}`, "latin1");
    return Buffer.concat([
      Buffer.from(`Subject: t\r\nContent-Type: multipart/alternative; boundary="b"\r\n\r\n--b\r\n${type}`, "latin1"),
      content,
      Buffer.from(`\r\n--b\r\nContent-Type: text/html\r\n\r\n`, "latin1"),
      html,
      Buffer.from("\r\n--b--\r\n", "latin1"),
    ]);
  }
  return Buffer.concat([Buffer.from(`Subject: t\r\n${type}`, "latin1"), content]);
}

describe("mailparser's text lines, patched against upstream", () => {
  it("gives upstream's text for random text parts in random chunkings", async () => {
    const { seed, next } = fuzzStream();
    for (let round = 0; round < 150; round++) {
      const input = randomMessage(next);
      const cuts = [[input], randomCuts(input, () => 1 + Math.floor(next() * (next() < 0.3 ? 16 : 5000)))];
      if (input.length < 3000) cuts.push(byteCuts(input));
      for (const chunks of cuts) {
        const context = `seed ${seed}, round ${round}, ${chunks.length} chunks of ${input.length} bytes`;
        const expected = await parse(upstream, chunks);
        expect(await parse(patched, chunks), context).toEqual(expected);
        expect(await parse(patchedEsm, chunks), `${context} (ESM)`).toEqual(expected);
      }
    }
  });
});
