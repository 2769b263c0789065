// The PDF text reader as a process of its own (../reader-pool.ts starts a pool of them through
// workers/off-thread.ts, whose child-pool.ts is the protocol). The parent writes documents as frames (4-byte big-endian length, then the PDF) on stdin; for each the child
// answers one JSON line on stdout with its page texts. A process, not a worker thread, because
// only the OS bounds what pdfjs allocates: the child runs under a data-size limit (RLIMIT_DATA)
// and a kill timer, reads a few documents, then exits, and whatever a decompression bomb made it
// take goes back to the system with it.
import { loadPdfjs, pdfPageTexts } from "./pdf-text.js";

/**
 * This process reads PDFs and nothing else, so pdfjs is told it runs without `DecompressionStream`:
 * Node's is a web stream over zlib, which for the few KB of a page's content costs more than the
 * inflating pdfjs does in its own JavaScript in any runtime that lacks one. Its worker half is
 * loaded here too, so that the fake worker finds it on `globalThis` instead of importing it by a path.
 */
async function preparePdfjs(): Promise<void> {
  Reflect.deleteProperty(globalThis, "DecompressionStream");
  await loadPdfjs();
  await import("pdfjs-dist/legacy/build/pdf.worker.mjs" as string); // no types of its own
}

const ready = preparePdfjs();

/** No page's text is worth more than this for finding codes; the pipe stays small. */
const PAGE_CHARS = 100_000;

// its one argument (workers/entry.mjs hands on the rest of the command line)
const maxPages = Number(process.argv[2]) || 50;
// A pdfjs that fails to load is each document's error answer (pdfPageTexts meets it again).
let busy: Promise<unknown> = ready.catch(() => {});
let retiring = false;

async function answer(pdf: Uint8Array): Promise<void> {
  let line: string;
  try {
    const pages = await pdfPageTexts(pdf, { maxPages });
    line = JSON.stringify({ ok: true, pages: pages.map((p) => p.slice(0, PAGE_CHARS)) });
  } catch (err) {
    const e = err as Error;
    // (pdfjs hands its errors across its message port, so the class is lost; the message is V8's)
    if (/^Array buffer allocation failed$/.test(String(e?.message))) {
      // The data-size limit met inside pdfjs (its own inflating allocates as it goes): the same
      // verdict as a child stopped by the limit, and this one leaves too, so that what it took
      // goes back to the system; `retire` tells the parent not to send it another document.
      const limit = { name: "ChildLimitError", message: "the PDF needed more than the memory limit of its reader" };
      line = JSON.stringify({ ok: false, retire: true, error: limit });
      retiring = true;
    } else {
      line = JSON.stringify({
        ok: false,
        error: { name: e?.name ?? "Error", message: String(e?.message ?? err).slice(0, 500) },
      });
    }
  }
  await new Promise<void>((resolve) => process.stdout.write(`${line}\n`, () => resolve()));
  if (retiring) process.exit(0);
}

// Frames are cut from the chunks as they come, without joining a big document's chunks again on
// each new one (a 25 MB PDF is some 400 pipe reads).
let chunks: Buffer[] = [];
let buffered = 0;
let need = 4; // bytes the next step waits for: a frame's length, then the frame

process.stdin.on("data", (chunk: Buffer) => {
  chunks.push(chunk);
  buffered += chunk.length;
  while (buffered >= need) {
    const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, buffered);
    const len = all.readUInt32BE(0);
    if (all.length < 4 + len) {
      chunks = [all];
      need = 4 + len;
      break;
    }
    const pdf = all.subarray(4, 4 + len); // pdfPageTexts reads a copy
    busy = busy.then(() => answer(pdf));
    const rest = all.subarray(4 + len);
    chunks = rest.length > 0 ? [rest] : [];
    buffered = rest.length;
    need = 4;
  }
});
process.stdin.on("end", () => void busy.then(() => process.exit(0)));
