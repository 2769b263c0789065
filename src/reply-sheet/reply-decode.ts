// Finds reply codes on a received fax: each page rendered by pdftoppm at 200 dpi in grey (a fax's
// finest resolution; more only costs time), each image read by zxing-wasm for QR codes. Bounded:
// at most `maxPages` pages and `timeoutMs` for the whole, so a long or hostile fax costs a known
// amount. The PDF is a stranger's: poppler parses it in the one runner of outside programs
// (workers/sandboxed-child.ts), in the sandbox OCR uses, under a memory and a time limit, never in the daemon.
import { readFileSync } from "node:fs";
import { chown, copyFile, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { prepareZXingModule, readBarcodes } from "zxing-wasm/reader";
import { findExecutable } from "../fs/index.js";
import { NO_MEMORY_LIMIT, planSandbox, runSandboxed, type SandboxPlan } from "../workers/index.js";

export interface ReplyScanOptions {
  /** pdftoppm, found on PATH by default */
  pdftoppm?: string;
  timeoutMs: number;
  maxPages: number;
  /** address-space limit of pdftoppm (default 512 MB) */
  memoryMb?: number;
  /** the sandbox (default: planned here as ocr.sandbox "auto" plans it) */
  plan?: Promise<SandboxPlan>;
  /** process groups of runs in progress, killed by the owner at close */
  children?: Set<number>;
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

async function render(pdf: string, dir: string, opts: ReplyScanOptions, deadline: number): Promise<string | null> {
  const command = findExecutable(opts.pdftoppm ?? "pdftoppm");
  if (!command) return "pdftoppm is not installed";
  const plan = await (opts.plan ?? planSandbox({ mode: "auto", command }));
  if (plan.runAs) {
    // the run's own user (a root daemon's) reads the input and writes its pages beside it
    await chown(dir, plan.runAs.uid, plan.runAs.gid);
    await chown(pdf, plan.runAs.uid, plan.runAs.gid);
  }
  const r = await runSandboxed({
    argv: [command, "-r", "200", "-gray", "-png", "-f", "1", "-l", String(opts.maxPages), pdf, path.join(dir, "p")],
    files: [dir],
    limits: { timeoutMs: Math.max(1, deadline - Date.now()), memoryMb: opts.memoryMb ?? 512 },
    plan,
    children: opts.children ?? new Set(),
  });
  if (r.timedOut) return "timed out rendering pages";
  if (r.signal) return `pdftoppm was stopped (${r.signal})`;
  if (r.code === NO_MEMORY_LIMIT) return "the memory limit could not be set";
  // poppler's message may quote the file: only the exit code is kept
  return r.code === 0 ? null : `pdftoppm exited ${r.code}`;
}

/** The codes on a PDF's first pages (a file's path, or its bytes). */
export async function scanForReplyCodes(pdf: string | Uint8Array, opts: ReplyScanOptions): Promise<ReplyScan> {
  const deadline = Date.now() + opts.timeoutMs;
  const dir = await mkdtemp(path.join(os.tmpdir(), "faxgate-reply-"));
  try {
    // the only file the sandbox sees besides its own output
    const input = path.join(dir, "in.pdf");
    if (typeof pdf === "string") await copyFile(pdf, input);
    else await writeFile(input, pdf);
    const failed = await render(input, dir, opts, deadline);
    if (failed) return { kind: "skipped", why: failed };
    prepare();
    const pages = (await readdir(dir)).filter((f) => f.startsWith("p") && f.endsWith(".png")).sort();
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
