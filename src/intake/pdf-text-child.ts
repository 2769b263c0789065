// The PDF text reader as a process of its own. The parent (../workers/pdf-process.ts) writes
// documents as frames (4-byte big-endian length, then the PDF) on stdin; for each the child
// answers one JSON line on stdout with its page texts. A process, not a worker thread, because
// only the OS bounds what pdfjs allocates: the child runs under a data-size limit (RLIMIT_DATA)
// and a kill timer, reads a few documents, then exits, and whatever a decompression bomb made it
// take goes back to the system with it.
import { pdfPageTexts } from './pdf-text.js';

/** No page's text is worth more than this for finding codes; the pipe stays small. */
const PAGE_CHARS = 100_000;

const maxPages = Number(process.argv[2]) || 50;
let pending = Buffer.alloc(0);
let busy = Promise.resolve();

async function answer(pdf: Buffer): Promise<void> {
  let line: string;
  try {
    const pages = await pdfPageTexts(pdf, { maxPages });
    line = JSON.stringify({ ok: true, pages: pages.map((p) => p.slice(0, PAGE_CHARS)) });
  } catch (err) {
    const e = err as Error;
    line = JSON.stringify({ ok: false, error: { name: e?.name ?? 'Error', message: String(e?.message ?? err).slice(0, 500) } });
  }
  await new Promise<void>((resolve) => process.stdout.write(`${line}\n`, () => resolve()));
}

process.stdin.on('data', (chunk: Buffer) => {
  pending = Buffer.concat([pending, chunk]);
  while (pending.length >= 4) {
    const len = pending.readUInt32BE(0);
    if (pending.length < 4 + len) break;
    const pdf = pending.subarray(4, 4 + len);
    pending = pending.subarray(4 + len);
    busy = busy.then(() => answer(Buffer.from(pdf)));
  }
});
process.stdin.on('end', () => void busy.then(() => process.exit(0)));
