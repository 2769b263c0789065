// Finds reply codes on a received fax: each page rendered by pdftoppm at 200 dpi in grey (a fax's
// finest resolution; more only costs time), each image read by zxing-wasm for QR codes. Bounded:
// at most `maxPages` pages and `timeoutMs` for the whole, so a long or hostile fax costs a known
// amount before routing. The PDF is parsed by poppler in its own process, never in the daemon.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { prepareZXingModule, readBarcodes } from "zxing-wasm/reader";

export interface ReplyScanOptions {
  /** pdftoppm, found on PATH by default */
  pdftoppm?: string;
  timeoutMs: number;
  maxPages: number;
}

export type ReplyScan =
  | { kind: "scanned"; texts: string[]; pages: number }
  /** Could not look (no pdftoppm, not a PDF, too slow): routing goes on by the other rules. */
  | { kind: "skipped"; why: string };

let prepared = false;
function prepare(): void {
  if (prepared) return;
  // the wasm from our node_modules: the library's default fetches it from a CDN
  const wasm = createRequire(import.meta.url).resolve("zxing-wasm/reader/zxing_reader.wasm");
  prepareZXingModule({ overrides: { wasmBinary: readFileSync(wasm).buffer as ArrayBuffer } });
  prepared = true;
}

function render(cmd: string, pdf: string, dir: string, maxPages: number, deadline: number): Promise<string | null> {
  return new Promise((resolve) => {
    const child = spawn(
      cmd,
      ["-r", "200", "-gray", "-png", "-f", "1", "-l", String(maxPages), pdf, path.join(dir, "p")],
      {
        stdio: ["ignore", "ignore", "pipe"],
        detached: true,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      },
    );
    let err = "";
    child.stderr.on("data", (d: Buffer) => {
      if (err.length < 500) err += d.toString("utf8");
    });
    const timer = setTimeout(
      () => {
        try {
          if (child.pid) process.kill(-child.pid, "SIGKILL");
        } catch {}
        resolve("timed out rendering pages");
      },
      Math.max(1, deadline - Date.now()),
    );
    child.on("error", (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(e.code === "ENOENT" ? "pdftoppm is not installed" : "pdftoppm did not start");
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      // poppler's message may quote the file: only the exit code is kept
      resolve(code === 0 ? null : `pdftoppm exited ${code}`);
    });
  });
}

export async function scanForReplyCodes(pdfPath: string, opts: ReplyScanOptions): Promise<ReplyScan> {
  const deadline = Date.now() + opts.timeoutMs;
  const dir = await mkdtemp(path.join(os.tmpdir(), "faxgate-reply-"));
  try {
    const failed = await render(opts.pdftoppm ?? "pdftoppm", pdfPath, dir, opts.maxPages, deadline);
    if (failed) return { kind: "skipped", why: failed };
    prepare();
    const pages = (await readdir(dir)).filter((f) => f.endsWith(".png")).sort();
    const texts: string[] = [];
    for (const page of pages) {
      if (Date.now() > deadline) return { kind: "skipped", why: "timed out reading codes" };
      const found = await readBarcodes(await readFile(path.join(dir, page)), {
        formats: ["QRCode"],
        tryHarder: true,
        // a QR code reads in any orientation: the rotated retries (for 1D codes) only cost time
        tryRotate: false,
        maxNumberOfSymbols: 4,
      });
      for (const r of found) if (r.isValid && r.text) texts.push(r.text);
    }
    return { kind: "scanned", texts, pages: pages.length };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
