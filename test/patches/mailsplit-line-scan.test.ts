// patches/@zone-eu__mailsplit+native-line-search.patch (each line feed found with
// Buffer#indexOf instead of a byte loop) against mailsplit's own code, the installed file with
// that patch undone: random MIME messages (nested multiparts, CRLF, bare LF and lone CR line
// ends, delimiter lines with trailing blanks, lines longer than a chunk and than mailsplit's
// pending-line bound, no final line end) cut into random chunks, 1-byte chunks included, must
// give exactly the same stream of nodes and body chunks, or the same error.
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

describe("mailsplit's line search, patched against upstream", () => {
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
