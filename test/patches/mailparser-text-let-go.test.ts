// patches/mailparser+text-let-go.patch (the tree lets go of each text part once the text is handed
// out) against mailparser's own code, the installed file with that patch undone: random messages
// (plain, HTML, both as alternatives, nested multiparts, attachments between them) in random chunks
// give exactly the same text objects and the same public text, html and textAsHtml on the parser;
// and once the parser has ended, no node of its tree still holds a part's content, where upstream
// keeps every one. The ESM build (the one faxgate imports) is held to the same.
import type { Transform } from "node:stream";
import { describe, expect, it } from "vitest";
import { fuzzStream, randomCuts } from "../helpers/fuzz.js";
import { parserTexts } from "../helpers/feed-stream.js";
import { importInstalled, loadInstalled, loadUnpatched } from "../helpers/unpatched.js";

type ParserClass = new (options?: Record<string, unknown>) => Transform;

interface TreeNode {
  textContent?: unknown;
  children?: TreeNode[];
}

const PATCH = "mailparser+text-let-go.patch";
const upstream = loadUnpatched<ParserClass>("mailparser", "dist/cjs/mail-parser.js", PATCH);
const patched = loadInstalled<ParserClass>("mailparser", "dist/cjs/mail-parser.js");
const patchedEsm = (await importInstalled<{ default: ParserClass }>("mailparser", "dist/esm/mail-parser.js")).default;

/** What the parser hands out and keeps public, and how many tree nodes still hold content at its end. */
async function parse(Parser: ParserClass, chunks: Buffer[]): Promise<{ out: string[]; held: number }> {
  const parser = new Parser() as Transform & { text: unknown; html: unknown; textAsHtml: unknown; tree: TreeNode };
  const out = await parserTexts(parser, chunks);
  out.push(JSON.stringify([parser.text, parser.html, parser.textAsHtml]));
  let held = 0;
  const walk = (n: TreeNode): void => {
    if (typeof n.textContent === "string" && n.textContent !== "") held += 1;
    for (const c of n.children ?? []) walk(c);
  };
  walk(parser.tree);
  return { out, held };
}

function message(next: () => number): { bytes: Buffer; texts: number } {
  const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!;
  let texts = 0;
  let boundary = 0;
  const words = (): string =>
    Array.from({ length: 1 + Math.floor(next() * 60) }, () => pick(["fax", "bitte", "ünïcödé", "€", "line\r\n"])).join(
      " ",
    );
  const leaf = (): string => {
    const kind = pick(["plain", "plain", "html", "attachment"]);
    if (kind === "attachment") {
      const b64 = Buffer.from(words()).toString("base64");
      return `Content-Type: application/pdf; name="a.pdf"\r\nContent-Disposition: attachment; filename="a.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}\r\n`;
    }
    texts += 1;
    if (kind === "html") return `Content-Type: text/html; charset=utf-8\r\n\r\n<p>${words()}</p>\r\n`;
    return `Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n${words()}\r\n`;
  };
  const part = (depth: number): string => {
    if (depth > 2 || next() < 0.5) return leaf();
    const b = `b${boundary++}`;
    const kids = Array.from({ length: 1 + Math.floor(next() * 3) }, () => part(depth + 1));
    const sub = pick(["mixed", "alternative", "related"]);
    return `Content-Type: multipart/${sub}; boundary="${b}"\r\n\r\n${kids.map((k) => `--${b}\r\n${k}`).join("")}--${b}--\r\n`;
  };
  const head = "From: a@example.com\r\nTo: 15551234567@fax.example.com\r\nSubject: t\r\nMIME-Version: 1.0\r\n";
  return { bytes: Buffer.from(head + part(0), "utf8"), texts };
}

describe("mailparser's tree letting go of the text, patched against upstream", () => {
  it("hands out upstream's texts, and its tree keeps none of them once ended", async () => {
    const { seed, next } = fuzzStream();
    let upstreamHeld = 0;
    for (let round = 0; round < 150; round++) {
      const { bytes, texts } = message(next);
      const chunks = randomCuts(bytes, () => 1 + Math.floor(next() * (next() < 0.3 ? 16 : 2000)));
      const context = `seed ${seed}, round ${round}, ${chunks.length} chunks of ${bytes.length} bytes`;
      const expected = await parse(upstream, chunks);
      for (const [Parser, build] of [
        [patched, "CJS"],
        [patchedEsm, "ESM"],
      ] as const) {
        const got = await parse(Parser, chunks);
        expect(got.out, `${context} (${build})`).toEqual(expected.out);
        expect(got.held, `${context} (${build})`).toBe(0);
      }
      if (texts > 0) upstreamHeld += expected.held;
    }
    // the check above means something: upstream's tree does keep its parts' content
    expect(upstreamHeld, `seed ${seed}`).toBeGreaterThan(50);
  });
});
