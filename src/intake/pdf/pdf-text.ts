// The text of each page of a PDF, to find embedded fax codes. pdfjs-dist's legacy build runs
// in plain Node without a worker thread or a canvas; we never render, only read text.
// pdfjs is loaded on the first document, not with this module, so that the reader process
// (pdf-text-child.ts) can set up its globals before pdfjs sees them.

type Pdfjs = typeof import("pdfjs-dist/legacy/build/pdf.mjs");
let pdfjs: Promise<Pdfjs> | null = null;

/** pdfjs, loaded once. */
export function loadPdfjs(): Promise<Pdfjs> {
  pdfjs ??= import("pdfjs-dist/legacy/build/pdf.mjs");
  return pdfjs;
}

/** The pages whose text is read for codes: codes live at the top of a document, not on page 900. */
export const CODE_PAGES = 50;

export interface PdfTextOptions {
  /** Stop after this many pages (default CODE_PAGES). */
  maxPages?: number;
}

/** One string per page; text items are joined as pdfjs lays them out (hasEOL -> newline). */
export async function pdfPageTexts(data: Uint8Array, opts: PdfTextOptions = {}): Promise<string[]> {
  const { getDocument } = await loadPdfjs();
  // pdfjs takes ownership of (detaches) the buffer it is given, so it gets a copy.
  const task = getDocument({
    data: new Uint8Array(data),
    isEvalSupported: false,
    disableFontFace: true,
    // No font files are fetched: text extraction needs the encodings, not the glyphs, and the
    // fetch attempts cost more than the parsing (measured 26 ms -> 8 ms for a 2-page letter).
    // useSystemFonts: a font the PDF names but does not embed (Helvetica...) is not even asked
    // for (without it, each such font is a request that fails, with an exception, per document).
    useSystemFonts: true,
    useWorkerFetch: false,
    verbosity: 0,
    stopAtErrors: false,
  });
  try {
    const doc = await task.promise;
    const pages: string[] = [];
    const last = Math.min(doc.numPages, opts.maxPages ?? CODE_PAGES);
    for (let i = 1; i <= last; i++) {
      const page = await doc.getPage(i);
      const content = await page.getTextContent();
      let text = "";
      for (const item of content.items) {
        if ("str" in item) {
          text += item.str;
          text += item.hasEOL ? "\n" : " ";
        }
      }
      pages.push(text);
      page.cleanup();
    }
    return pages;
  } finally {
    await task.destroy();
  }
}
