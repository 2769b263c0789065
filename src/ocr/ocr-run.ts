// One fax's text read by ocrmypdf (tesseract underneath), run as office conversion runs: in its
// own process group, in the sandbox office conversion uses (bubblewrap: no network, only the
// system folders and the run's own folder), under a time and an address-space limit, with
// nothing of ours in its environment. A fax is a stranger's picture: the PDF it came as is
// parsed by Ghostscript and pikepdf in there, never in the daemon.
import { EventEmitter } from "node:events";
import { chown, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { FaxgateError } from "../errors.js";
import { findExecutable } from "../fs/index.js";
import { killGroup, NO_MEMORY_LIMIT, planSandbox, runSandboxed, type SandboxPlan } from "../workers/index.js";

export interface OcrRunOptions {
  command: string;
  languages: readonly string[];
  timeoutMs: number;
  memoryMb: number;
  sandbox: "auto" | "required" | "off";
  /** Where each run's folder goes (default: the system's temp folder). */
  tmpDir?: string;
}

export type OcrOutcome =
  | { kind: "read"; pdf: Buffer; text: string; pages: number }
  /** Nothing could be read: a picture without words, a PDF that is not one, an encrypted one. */
  | { kind: "unreadable"; why: string };

/** ocrmypdf's exit codes that say the input, not the run, is at fault (ocrmypdf's ExitCode). */
const INPUT_FAULTS: Record<number, string> = {
  2: "the document is not a PDF ocrmypdf can read",
  8: "the document is encrypted",
};

export class OcrRunner extends EventEmitter<{ started: [pid: number] }> {
  private plan: Promise<SandboxPlan> | null = null;
  /** Process groups of runs in progress (killed at close; tests kill one to play a crash). */
  readonly children = new Set<number>();

  constructor(private readonly o: OcrRunOptions) {
    super();
  }

  /** The command's path, or null when OCR cannot run here (ocrmypdf not installed). */
  available(): string | null {
    return findExecutable(this.o.command);
  }

  isolation(): Promise<SandboxPlan> {
    const plan = this.plan ?? planSandbox({ mode: this.o.sandbox, command: this.available() });
    this.plan = plan;
    return plan;
  }

  /**
   * `whole`: every page is read, those with text too (a sent fax's text PDF: the words the
   * recipient saw), and no new PDF is wanted. `image`: the input is a picture (PNG, JPEG, TIFF).
   */
  async read(pdf: Uint8Array, how: { whole?: boolean; image?: boolean } = {}): Promise<OcrOutcome> {
    const command = this.available();
    if (!command) throw unavailable(`${this.o.command} is not installed (apt-get install ocrmypdf tesseract-ocr-eng)`);
    const plan = await this.isolation();
    if (this.o.sandbox === "required" && plan.method !== "bwrap")
      throw unavailable(`ocr.sandbox is required, but OCR cannot be isolated here: ${plan.warnings.join("; ")}`);
    const dir = await mkdtemp(path.join(this.o.tmpDir ?? os.tmpdir(), "faxgate-ocr-"));
    try {
      const input = path.join(dir, "in.pdf");
      const output = path.join(dir, "out.pdf");
      const sidecar = path.join(dir, "text.txt");
      await writeFile(input, pdf);
      if (plan.runAs) {
        // the run's own user (a root daemon's) reads the input and writes beside it
        await chown(dir, plan.runAs.uid, plan.runAs.gid);
        await chown(input, plan.runAs.uid, plan.runAs.gid);
      }
      const r = await runSandboxed({
        argv: [
          command,
          "--language",
          this.o.languages.join("+"),
          // a received fax's pages that carry text already are kept as they are; a sent fax's are
          // all read, since its text is wanted, not a new PDF
          how.whole ? "--force-ocr" : "--skip-text",
          // a picture without a resolution of its own: a fine fax's
          ...(how.image ? ["--image-dpi", "200"] : []),
          "--output-type",
          "pdf",
          "--optimize",
          "0",
          "--jobs",
          "1",
          "--sidecar",
          sidecar,
          "--quiet",
          input,
          output,
        ],
        files: [dir],
        // tesseract and Ghostscript need more than a floor of 256 MiB to start at all
        limits: { timeoutMs: this.o.timeoutMs, memoryMb: Math.max(256, this.o.memoryMb) },
        plan,
        // one thread per run: turns are fair per core
        env: { LANG: "C.UTF-8", OMP_THREAD_LIMIT: "1", TMPDIR: dir },
        children: this.children,
        started: (pid) => this.emit("started", pid),
      });
      if (r.timedOut) throw temporary(`OCR took longer than ${Math.round(this.o.timeoutMs / 1000)} s`);
      if (r.signal) throw temporary(`OCR was stopped (${r.signal})`);
      if (r.code === NO_MEMORY_LIMIT) throw temporary("the memory limit could not be set");
      const fault = r.code === null ? undefined : INPUT_FAULTS[r.code];
      if (fault) return { kind: "unreadable", why: fault };
      if (r.code !== 0) throw temporary(`ocrmypdf exited with ${r.code}: ${lastLine(r.output)}`);
      const text = await readFile(sidecar, "utf8").catch(() => "");
      // ocrmypdf marks a page it skipped (it had text) in the sidecar; that is no text of ours
      const pages = text.split("\f");
      const words = text.replace(/\[OCR skipped on page\(s\)[^\]]*\]/g, "").trim();
      if (!/[\p{L}\p{N}]{2,}/u.test(words)) return { kind: "unreadable", why: "no words were found on its pages" };
      return { kind: "read", pdf: await readFile(output), text: words, pages: pages.length };
    } finally {
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  close(): void {
    for (const pid of this.children) killGroup(pid);
  }
}

function temporary(message: string): FaxgateError {
  return new FaxgateError("OCR_FAILED", message, { temporary: true });
}

function unavailable(message: string): FaxgateError {
  return new FaxgateError("OCR_FAILED", message, { temporary: false });
}

function lastLine(s: string): string {
  return (
    s
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .at(-1) ?? "no message"
  ).slice(0, 200);
}
