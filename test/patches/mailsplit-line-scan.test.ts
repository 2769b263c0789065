// patches/@zone-eu__mailsplit+native-line-search.patch (each line feed found with
// Buffer#indexOf instead of a byte loop) against mailsplit's own code, the installed file with
// that patch undone: random MIME messages (nested multiparts, CRLF, bare LF and lone CR line
// ends, delimiter lines with trailing blanks, lines longer than a chunk and than mailsplit's
// pending-line bound, no final line end) cut into random chunks, 1-byte chunks included, must
// give exactly the same stream of nodes and body chunks, or the same error. The same patch takes
// a body line that continues its group without a slice or an object (issue 54): line-dense bodies
// (base64-like lines, lines that start like a delimiter and are not one, lone CRs in front of
// them, preamble and epilogue text, bodies past the splitter's 16 KB yield) cut around every
// line end, in 1-byte chunks and at random, check that path, and the patch's third change: the
// whole lines up to the next that starts with "-" or "\r-" taken at once.
import type { Transform } from "node:stream";
import { describe, expect, it } from "vitest";
import { byteCuts, fuzzStream, randomCuts } from "../helpers/fuzz.js";
import { prng } from "../helpers/prng.js";
import { loadInstalled, loadUnpatched } from "../helpers/unpatched.js";

interface SplitterNode {
  getHeaders(): Buffer;
  contentType?: string;
  multipart?: string | false;
  root?: boolean;
}
interface SplitterChunk {
  type: string;
  value?: Buffer;
  node?: SplitterNode;
}
type SplitterClass = new (options?: Record<string, unknown>) => Transform;

const PATCH = "@zone-eu__mailsplit+native-line-search.patch";
const upstream = loadUnpatched<SplitterClass>("@zone-eu/mailsplit", "lib/message-splitter.js", PATCH);
const patched = loadInstalled<SplitterClass>("@zone-eu/mailsplit", "lib/message-splitter.js");

/** Everything the splitter emits, in order: nodes with their headers, data and body chunks with their bytes and node. */
async function split(Splitter: SplitterClass, chunks: Buffer[], options?: Record<string, unknown>): Promise<string[]> {
  const splitter = new Splitter(options);
  const nodes: SplitterNode[] = [];
  const out: string[] = [];
  const nodeId = (n: SplitterNode | undefined) => {
    if (!n) return -1;
    if (!nodes.includes(n)) nodes.push(n);
    return nodes.indexOf(n);
  };
  splitter.on("data", (d: SplitterChunk) => {
    if (d.type === "node") {
      const n = d as unknown as SplitterNode;
      out.push(
        `node ${nodeId(n)} ${n.contentType} ${n.multipart} ${JSON.stringify(n.getHeaders().toString("latin1"))}`,
      );
    } else out.push(`${d.type} ${nodeId(d.node)} ${JSON.stringify(d.value?.toString("latin1"))}`);
  });
  const over = new Promise<void>((resolve) => {
    splitter.on("end", resolve);
    splitter.on("error", (err: Error & { code?: string }) => {
      out.push(`error ${err.code} ${err.message}`);
      resolve();
    });
  });
  for (const c of chunks) splitter.write(c);
  splitter.end();
  await over;
  return out;
}

function randomMessage(next: () => number): Buffer {
  const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!;
  const eol = () => pick(["\r\n", "\r\n", "\r\n", "\n", "\r", "\r\r\n"]);
  const line = () =>
    pick([
      "",
      "text of a line",
      ".",
      "..",
      "--",
      "=20",
      "x".repeat(1 + Math.floor(next() * 200)),
      "y".repeat(next() < 0.1 ? 70_000 + Math.floor(next() * 5000) : 1000),
    ]);
  const body = (boundaries: string[]): string => {
    const parts: string[] = [];
    const n = Math.floor(next() * 6);
    for (let k = 0; k < n; k++) {
      // now and then a delimiter of an enclosing multipart in the middle of a body
      if (boundaries.length && next() < 0.1) parts.push(`--${pick(boundaries)}${pick(["", "--", "  ", "\t"])}${eol()}`);
      else parts.push(`${line()}${eol()}`);
    }
    return parts.join("");
  };
  const part = (depth: number, boundaries: string[]): string => {
    if (depth < 3 && next() < 0.5) {
      const b = `b${depth}${Math.floor(next() * 1000)}`;
      const inner = [...boundaries, b];
      const children = Array.from({ length: 1 + Math.floor(next() * 3) }, () => part(depth + 1, inner));
      const close = next() < 0.85 ? `--${b}--${pick(["", " "])}${eol()}` : "";
      return (
        `Content-Type: multipart/mixed; boundary="${b}"${eol()}${eol()}${body([])}` +
        children.map((c) => `--${b}${pick(["", " ", "\t"])}${eol()}${c}`).join("") +
        close +
        body(boundaries)
      );
    }
    const type = pick(["text/plain", "application/pdf", "message/rfc822"]);
    const headers = `Content-Type: ${type}${eol()}${next() < 0.3 ? `X-Long: ${"h".repeat(500)}${eol()}` : ""}`;
    return `${headers}${eol()}${body(boundaries)}`;
  };
  let text = `Subject: test${eol()}${part(0, [])}`;
  if (next() < 0.3) text = text.replace(/(\r\n|\n|\r)+$/, "");
  return Buffer.from(text, "latin1");
}

function chunkings(input: Buffer, next: () => number): Buffer[][] {
  const random = randomCuts(input, () => 1 + Math.floor(next() * (next() < 0.3 ? 16 : next() < 0.5 ? 2000 : 70_000)));
  const out = [[input], random];
  if (input.length < 4000) out.push(byteCuts(input));
  return out;
}

/** A multipart of line-dense parts: what the per-line path of the splitter sees most. */
function lineDenseMessage(next: () => number): Buffer {
  const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)]!;
  const eol = () => pick(["\r\n", "\r\n", "\r\n", "\n", "\r"]);
  const b = `b${Math.floor(next() * 1000)}`;
  const line = () =>
    pick([
      "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0",
      "x".repeat(Math.floor(next() * 100)),
      "",
      "-",
      "-x",
      "--",
      "---",
      `--${b}x`,
      `--${b}`.slice(0, 1 + Math.floor(next() * (b.length + 2))),
      `\r--${b}`,
      `\r--x`,
      `  --${b}`,
    ]);
  const body = () => {
    const n = next() < 0.2 ? 400 + Math.floor(next() * 600) : Math.floor(next() * 40);
    return Array.from({ length: n }, () => `${line()}${eol()}`).join("");
  };
  const parts = Array.from({ length: 1 + Math.floor(next() * 3) }, () => {
    const enc = pick(["", "Content-Transfer-Encoding: base64\r\n"]);
    return `--${b}${eol()}Content-Type: ${pick(["text/plain", "application/pdf"])}\r\n${enc}\r\n${body()}`;
  });
  const close = next() < 0.8 ? `--${b}--${eol()}${body()}` : "";
  return Buffer.from(
    `Subject: dense\r\nContent-Type: multipart/mixed; boundary="${b}"\r\n\r\n${body()}${parts.join("")}${close}`,
    "latin1",
  );
}

/** Cuts at every line end of `input`, one after it and one before it: a line's end at a chunk's edge. */
function lineEndCuts(input: Buffer, next: () => number): Buffer[] {
  const out: Buffer[] = [];
  let from = 0;
  for (let at = input.indexOf(0x0a); at >= 0; at = input.indexOf(0x0a, at + 1)) {
    const cut = at + (next() < 0.5 ? 0 : 1);
    if (cut > from) {
      out.push(input.subarray(from, cut));
      from = cut;
    }
  }
  if (from < input.length) out.push(input.subarray(from));
  return out;
}

describe("mailsplit's line search, patched against upstream", () => {
  it("splits line-dense bodies as upstream does, however they are cut", async () => {
    const { seed, next } = fuzzStream();
    for (let round = 0; round < 120; round++) {
      const input = lineDenseMessage(next);
      const cuts = [...chunkings(input, next), lineEndCuts(input, next)];
      if (input.length >= 4000) cuts.push(byteCuts(input.subarray(0, 4000)).concat([input.subarray(4000)]));
      for (const chunks of cuts) {
        const context = `seed ${seed}, round ${round}, ${chunks.length} chunks of ${input.length} bytes`;
        const expected = await split(upstream, chunks);
        expect(await split(patched, chunks), context).toEqual(expected);
      }
    }
  });

  it("splits random messages in random chunkings as upstream does", async () => {
    const { seed, next } = fuzzStream();
    for (let round = 0; round < 150; round++) {
      const input = randomMessage(next);
      for (const chunks of chunkings(input, next)) {
        const context = `seed ${seed}, round ${round}, ${chunks.length} chunks of ${input.length} bytes`;
        const expected = await split(upstream, chunks);
        expect(await split(patched, chunks), context).toEqual(expected);
      }
    }
  });

  it("gives upstream's errors at its limits", async () => {
    const parts = Array.from({ length: 30 }, (_, k) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${k}\r\n`).join("");
    const input = Buffer.from(`Content-Type: multipart/mixed; boundary="b"\r\n\r\n${parts}--b--\r\n`, "latin1");
    const head = Buffer.from(`Subject: ${"h".repeat(3000)}\r\n\r\nbody\r\n`, "latin1");
    for (const [message, options] of [
      [input, { maxChildNodes: 10 }],
      [head, { maxHeadSize: 1000 }],
    ] as const) {
      for (const chunks of chunkings(message, prng(3))) {
        const expected = await split(upstream, chunks, options);
        expect(expected.some((e) => e.startsWith("error EMAXLEN"))).toBe(true);
        expect(await split(patched, chunks, options)).toEqual(expected);
      }
    }
  });
});
