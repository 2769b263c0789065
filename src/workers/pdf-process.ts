// PDF text layers are read in child processes, not threads: a thread's heap limit does not bound
// pdfjs's array buffers, and memory a thread took stays with the daemon. Each child runs under an
// OS limit on its data size (`ulimit -d`), is killed when one document takes too long, and exits
// after a few documents or when idle, so what it took goes back to the system.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { CODE_PAGES } from "../intake/pdf/pdf-text.js";

export interface PdfProcessOptions {
  /** Children at most, reading one document each at a time. */
  processes: number;
  /** One document still being read after this long: its child is killed (the PDF's fault). */
  timeoutMs: number;
  /** What one child may allocate, in MB (RLIMIT_DATA). */
  maxMemoryMb: number;
  /**
   * Documents one child reads before it is replaced (default 1,000). Starting a child costs about
   * half a second of CPU (pdfjs loads); at 200 that was a third of a print burst's PDF reading.
   */
  documentsPerProcess?: number;
  /** An idle child leaves after this long (default 30 s). */
  idleMs?: number;
}

/** A document the reader could not finish for a reason that is the document's (time, memory). */
export class PdfReadLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PdfReadLimitError";
  }
}

const fromSource = import.meta.url.endsWith(".ts");

let sourceChild: Promise<string> | null = null;

/**
 * Running from the TypeScript sources (tests, `tsx`): the child is bundled once per process into
 * plain ESM with esbuild (tsx's own dependency), pdfjs left outside and named by its absolute URLs,
 * and handed to node as `--eval` code: no file is written (one written to a temp folder at each
 * start and removed at exit stayed behind whenever a test worker was stopped without an exit
 * event, a few each test run). Loading tsx in every child would cost about 400 MB and 3 s; the
 * built daemon runs dist/intake/pdf/pdf-text-child.js directly and never gets here.
 */
function bundledChild(): Promise<string> {
  sourceChild ??= (async () => {
    const { build } = (await import("esbuild" as string)) as typeof import("esbuild");
    const entry = fileURLToPath(new URL("../intake/pdf/pdf-text-child.ts", import.meta.url));
    const out = await build({
      entryPoints: [entry],
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      external: ["pdfjs-dist"],
      write: false,
      logLevel: "silent",
    });
    let code = out.outputFiles[0]!.text;
    for (const pdfjs of ["pdfjs-dist/legacy/build/pdf.mjs", "pdfjs-dist/legacy/build/pdf.worker.mjs"]) {
      if (!code.includes(JSON.stringify(pdfjs))) throw new Error(`the PDF reader's bundle does not load ${pdfjs}`);
      code = code.split(JSON.stringify(pdfjs)).join(JSON.stringify(import.meta.resolve(pdfjs)));
    }
    return code;
  })();
  return sourceChild;
}

/** The child's command line; its last argument is the page limit (pdf-text-child.ts reads it there). */
async function childCommand(maxPages: number): Promise<string[]> {
  if (fromSource)
    return [process.execPath, "--input-type=module", "--eval", await bundledChild(), "--", String(maxPages)];
  return [
    process.execPath,
    fileURLToPath(new URL("../intake/pdf/pdf-text-child.js", import.meta.url)),
    String(maxPages),
  ];
}

interface Waiter {
  data: Uint8Array;
  resolve: (pages: string[]) => void;
  reject: (err: Error) => void;
}

class Reader {
  readonly proc: ChildProcess;
  served = 0;
  private out = "";
  private current: { resolve: (line: string) => void; reject: (err: Error) => void } | null = null;
  private exited = false;
  private killed = false;
  idleTimer: NodeJS.Timeout | null = null;

  constructor(argv: string[], maxMemoryMb: number) {
    // The limit is set by the shell the child is exec'd from: Node has no setrlimit of its own.
    // V8's heap is capped at half of it, so that garbage from earlier documents is collected long
    // before the OS limit: only a document that really needs the memory meets the limit.
    const [node, ...rest] = argv;
    const heapMb = Math.max(64, Math.floor(maxMemoryMb / 2));
    this.proc = spawn(
      "/bin/sh",
      [
        "-c",
        `ulimit -d ${maxMemoryMb * 1024} && exec "$@"`,
        "faxgate-pdf-reader",
        node!,
        `--max-old-space-size=${heapMb}`,
        ...rest,
      ],
      {
        stdio: ["pipe", "pipe", "ignore"],
      },
    );
    // The daemon's exit never waits for an idle reader; a read in progress holds its own timer.
    this.proc.unref();
    for (const s of [this.proc.stdin, this.proc.stdout]) (s as unknown as { unref?: () => void } | null)?.unref?.();
    this.proc.stdout!.setEncoding("utf8");
    this.proc.stdout!.on("data", (s: string) => {
      this.out += s;
      const nl = this.out.indexOf("\n");
      if (nl >= 0) {
        const line = this.out.slice(0, nl);
        this.out = this.out.slice(nl + 1);
        const c = this.current;
        this.current = null;
        c?.resolve(line);
      }
    });
    this.proc.stdin!.on("error", () => {});
    this.proc.on("exit", (code, signal) => {
      this.exited = true;
      const c = this.current;
      this.current = null;
      c?.reject(
        new PdfReadLimitError(
          signal
            ? `the PDF reader was stopped by ${signal} (the document needed more than the memory limit, or is damaged)`
            : `the PDF reader exited with status ${code}`,
        ),
      );
    });
    this.proc.on("error", (err) => {
      this.exited = true;
      const c = this.current;
      this.current = null;
      c?.reject(err);
    });
  }

  get alive(): boolean {
    return !this.exited && !this.killed;
  }

  read(data: Uint8Array, timeoutMs: number): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.current = null;
        this.kill();
        reject(new PdfReadLimitError(`the PDF took longer than ${Math.round(timeoutMs / 1000)} s to read`));
      }, timeoutMs);
      this.current = {
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const head = Buffer.alloc(4);
      head.writeUInt32BE(data.length, 0);
      this.proc.stdin!.write(head);
      this.proc.stdin!.write(data);
    });
  }

  /** No more documents: the child finishes and exits. */
  end(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.proc.stdin!.end();
  }

  kill(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.killed = true;
    if (!this.exited) this.proc.kill("SIGKILL");
  }
}

export class PdfProcessPool {
  private readonly idle: Reader[] = [];
  private readonly busy = new Set<Reader>();
  private readonly waiting: Waiter[] = [];
  private closed = false;
  private command: Promise<string[]> | null = null;

  constructor(private readonly opts: PdfProcessOptions) {}

  /** One string per page, of the first `CODE_PAGES` pages (codes live at the top of a document). */
  pageTexts(data: Uint8Array): Promise<string[]> {
    if (this.closed) return Promise.reject(new Error("the PDF readers are shut down"));
    return new Promise((resolve, reject) => {
      this.waiting.push({ data, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (!this.command) {
      this.command = childCommand(CODE_PAGES);
      this.command.then(
        () => this.pump(),
        (err: Error) => {
          for (const w of this.waiting.splice(0)) w.reject(err);
        },
      );
      return;
    }
    void this.command.then(
      (argv) => this.assign(argv),
      () => {},
    );
  }

  private assign(argv: string[]): void {
    while (this.waiting.length > 0 && !this.closed) {
      let r = this.idle.pop();
      while (r && !r.alive) r = this.idle.pop();
      if (!r) {
        if (this.busy.size >= this.opts.processes) return;
        r = new Reader(argv, this.opts.maxMemoryMb);
      }
      if (r.idleTimer) clearTimeout(r.idleTimer);
      const w = this.waiting.shift()!;
      this.busy.add(r);
      void this.serve(r, w);
    }
  }

  private async serve(r: Reader, w: Waiter): Promise<void> {
    try {
      const line = await r.read(w.data, this.opts.timeoutMs);
      const msg = JSON.parse(line) as
        | { ok: true; pages: string[] }
        | { ok: false; retire?: boolean; error: { name: string; message: string } };
      if (msg.ok) w.resolve(msg.pages);
      else {
        if (msg.retire) r.kill(); // it is leaving (at its memory limit): no other document, and gone for sure
        w.reject(
          msg.error.name === "PdfReadLimitError"
            ? new PdfReadLimitError(msg.error.message)
            : Object.assign(new Error(msg.error.message), { name: msg.error.name }),
        );
      }
    } catch (err) {
      w.reject(err as Error);
    } finally {
      this.busy.delete(r);
      r.served += 1;
      if (!r.alive || this.closed) r.kill();
      else if (r.served >= (this.opts.documentsPerProcess ?? 1000)) r.end();
      else {
        r.idleTimer = setTimeout(() => {
          const i = this.idle.indexOf(r);
          if (i >= 0) this.idle.splice(i, 1);
          r.end();
        }, this.opts.idleMs ?? 30_000);
        r.idleTimer.unref();
        this.idle.push(r);
      }
      this.pump();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.reject(new Error("the PDF readers are shut down"));
    for (const r of [...this.idle.splice(0), ...this.busy]) r.kill();
  }
}
