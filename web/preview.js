// Draws a PDF's pages into canvases with pdf.js (its legacy build, served by the gateway).
import { h } from "./app.js";

export async function renderPdf(box, url, name) {
  box.replaceChildren(h("p", {}, "Loading the preview…"));
  const pdfjs = await import("/vendor/pdf.min.mjs");
  pdfjs.GlobalWorkerOptions.workerSrc = "/vendor/pdf.worker.min.mjs";
  const doc = await pdfjs.getDocument({ url, isEvalSupported: false, withCredentials: true }).promise;
  const canvases = [];
  for (let n = 1; n <= Math.min(doc.numPages, 10); n++) {
    const page = await doc.getPage(n);
    const viewport = page.getViewport({ scale: 1.2 });
    const canvas = h("canvas", {
      width: Math.floor(viewport.width),
      height: Math.floor(viewport.height),
      role: "img",
      "aria-label": `${name}, page ${n} of ${doc.numPages}`,
      "data-page": n,
    });
    await page.render({ canvasContext: canvas.getContext("2d"), viewport, canvas }).promise;
    canvases.push(canvas);
  }
  const more = doc.numPages > canvases.length ? ` (the first ${canvases.length} shown)` : "";
  box.replaceChildren(h("p", {}, `${name}: ${doc.numPages} page${doc.numPages === 1 ? "" : "s"}${more}`), ...canvases);
  box.dataset.rendered = String(canvases.length);
}
