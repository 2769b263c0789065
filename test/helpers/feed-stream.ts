// The patch tests' way through a stream (test/patches/*.test.ts): fed the chunks, ended, and what
// comes out handed to the caller; for mailparser, its text objects kept as JSON (text, html,
// textAsHtml), attachments let go unread.
import type { Transform } from "node:stream";

/** Writes `chunks` to `stream` and ends it; each thing it pushes goes to `onData`; settles at 'end' or 'error'. */
export async function feedAndEnd<T>(stream: Transform, chunks: Buffer[], onData: (d: T) => void): Promise<void> {
  const over = new Promise<void>((resolve, reject) => {
    stream.on("data", onData);
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  for (const c of chunks) stream.write(c);
  stream.end();
  await over;
}

/** The text objects `parser` hands out for `chunks`, once it has ended. */
export async function parserTexts(parser: Transform, chunks: Buffer[]): Promise<string[]> {
  const out: string[] = [];
  await feedAndEnd(
    parser,
    chunks,
    (d: { type: string; text?: string; html?: string; textAsHtml?: string; release?(): void }) => {
      if (d.type === "text") out.push(JSON.stringify([d.text, d.html, d.textAsHtml]));
      else d.release?.();
    },
  );
  return out;
}
