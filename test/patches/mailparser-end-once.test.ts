// patches/mailparser+end-once.patch (the last part's decoder ended once) against mailparser's own
// code, the installed file with that patch undone: the same text and attachments for messages
// whose last part is an attachment, a text, a nested multipart or the only part, in random
// chunkings; and no end() on a finished stream (which builds an ERR_STREAM_ALREADY_FINISHED
// error), where upstream makes one for every multipart message. The ESM build is held to the same.
import { createHash } from "node:crypto";
import { Duplex, type Transform } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fuzzStream, randomCuts } from "../helpers/fuzz.js";
import { importInstalled, loadInstalled, loadUnpatched } from "../helpers/unpatched.js";

type ParserClass = new (options?: Record<string, unknown>) => Transform;

const PATCH = "mailparser+end-once.patch";
const upstream = loadUnpatched<ParserClass>("mailparser", "dist/cjs/mail-parser.js", PATCH);
const patched = loadInstalled<ParserClass>("mailparser", "dist/cjs/mail-parser.js");
const patchedEsm = (await importInstalled<{ default: ParserClass }>("mailparser", "dist/esm/mail-parser.js")).default;

afterEach(() => {
  vi.restoreAllMocks();
});

interface Part {
  type?: string;
  text?: string;
  html?: string;
  attachment?: string;
}

/** What the parser hands out (texts, each attachment's name and hash) and the end() calls on finished streams. */
async function parse(Parser: ParserClass, chunks: Buffer[]): Promise<{ parts: Part[]; lateEnds: number }> {
  let lateEnds = 0;
  const end = Duplex.prototype.end;
  vi.spyOn(Duplex.prototype, "end").mockImplementation(function (this: Duplex, ...args: unknown[]) {
    if (this.writableFinished) lateEnds += 1;
    return (end as (...a: unknown[]) => Duplex).apply(this, args);
  });
  const parser = new Parser();
  const parts: Part[] = [];
  const over = new Promise<void>((resolve, reject) => {
    parser.on(
      "data",
      (d: {
        type: string;
        text?: string;
        html?: string;
        filename?: string;
        content?: NodeJS.ReadableStream;
        release?(): void;
      }) => {
        if (d.type === "text") parts.push({ text: d.text, html: typeof d.html === "string" ? d.html : undefined });
        else if (d.content) {
          const hash = createHash("sha256");
          d.content.on("data", (b: Buffer) => hash.update(b));
          d.content.on("end", () => {
            parts.push({ attachment: `${d.filename} ${hash.digest("hex")}` });
            d.release?.();
          });
        }
      },
    );
    parser.on("end", resolve);
    parser.on("error", reject);
  });
  for (const c of chunks) parser.write(c);
  parser.end();
  await over;
  vi.restoreAllMocks();
  return { parts, lateEnds };
}

function message(next: () => number): { bytes: Buffer; multipart: boolean } {
  const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!;
  const blob = Buffer.from(Array.from({ length: 200 + Math.floor(next() * 5000) }, () => Math.floor(next() * 256)));
  const b64 = blob.toString("base64").replace(/.{76}/g, "$&\r\n");
  const text = "Please fax this.\r\nLine two, \u00fcml\u00e4uts.\r\n";
  const attach = `Content-Type: application/pdf; name="a.pdf"\r\nContent-Disposition: attachment; filename="a.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}\r\n`;
  const plain = `Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: ${pick(["8bit", "quoted-printable"])}\r\n\r\n${text}`;
  const shape = pick(["attachment last", "text last", "nested", "single"]);
  const head = "From: a@example.com\r\nTo: 15551234567@fax.example.com\r\nSubject: t\r\nMIME-Version: 1.0\r\n";
  const out =
    shape === "single"
      ? `${head}${plain}`
      : shape === "attachment last"
        ? `${head}Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\n${plain}\r\n--b\r\n${attach}--b--\r\n`
        : shape === "text last"
          ? `${head}Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\n${attach}--b\r\n${plain}\r\n--b--\r\n`
          : `${head}Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: multipart/alternative; boundary="c"\r\n\r\n--c\r\n${plain}\r\n--c\r\nContent-Type: text/html\r\n\r\n<p>hi</p>\r\n--c--\r\n--b\r\n${attach}--b--\r\n`;
  return { bytes: Buffer.from(out, "utf8"), multipart: shape !== "single" };
}

describe("mailparser's last decoder ended once, patched against upstream", () => {
  it("gives upstream's parts, and no end() on a finished stream where upstream makes one", async () => {
    const { seed, next } = fuzzStream();
    let upstreamLate = 0;
    for (let round = 0; round < 60; round++) {
      const { bytes, multipart } = message(next);
      for (const chunks of [[bytes], randomCuts(bytes, () => 1 + Math.floor(next() * 700))]) {
        const context = `seed ${seed}, round ${round}, ${chunks.length} chunks of ${bytes.length} bytes`;
        const expected = await parse(upstream, chunks);
        if (multipart) upstreamLate += expected.lateEnds;
        for (const [build, Parser] of [
          ["CommonJS", patched],
          ["ESM", patchedEsm],
        ] as const) {
          const got = await parse(Parser, chunks);
          expect(got.parts, `${context} (${build})`).toEqual(expected.parts);
          expect(got.lateEnds, `${context} (${build})`).toBe(0);
        }
      }
    }
    // what the patch takes away is there to take: upstream ends a finished decoder again
    expect(upstreamLate).toBeGreaterThan(0);
  });
});
