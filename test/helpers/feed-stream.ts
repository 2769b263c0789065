// The patch tests' way through mailparser (test/patches/mailparser-*.test.ts): a parser fed the
// chunks, its text objects kept as JSON (text, html, textAsHtml), attachments let go unread.
import type { Transform } from "node:stream";

/** The text objects `parser` hands out for `chunks`, once it has ended. */
export async function parserTexts(parser: Transform, chunks: Buffer[]): Promise<string[]> {
  const out: string[] = [];
  const over = new Promise<void>((resolve, reject) => {
    parser.on("data", (d: { type: string; text?: string; html?: string; textAsHtml?: string; release?(): void }) => {
      if (d.type === "text") out.push(JSON.stringify([d.text, d.html, d.textAsHtml]));
      else d.release?.();
    });
    parser.on("end", resolve);
    parser.on("error", reject);
  });
  for (const c of chunks) parser.write(c);
  parser.end();
  await over;
  return out;
}
