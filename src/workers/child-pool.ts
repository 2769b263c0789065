// A pool of child processes for work that only the OS can bound (the PDF reader: a thread's heap
// limit does not bound pdfjs's array buffers, and memory a thread took stays with the daemon).
// Each child runs under an OS limit on its data size (`ulimit -d`), is killed when one request
// takes too long, and exits after a number of requests or when idle, so what it took goes back to
// the system. The protocol: a request is a frame on the child's stdin (4-byte big-endian length,
// then the bytes); the child answers one JSON line on stdout, `{ok: true, ...}` or `{ok: false,
// retire?, error: {name, message}}`. Started by workers/off-thread.ts childPool.
import { spawn, type ChildProcess } from "node:child_process";

export interface ChildPoolOptions {
  /** The child's command line after node itself (off-thread.ts childPool makes it). */
  argv: string[];
  /** What the children are, in their errors ("the PDF reader"), and what they read ("the PDF"). */
  name: string;
  what: string;
  /** Children at most, serving one request each at a time. */
  processes: number;
  /** One request still being served after this long: its child is killed (the input's fault). */
  timeoutMs: number;
  /** What one child may allocate, in MB (RLIMIT_DATA). */
  maxMemoryMb: number;
  /** Requests one child serves before it is replaced (default 1,000). */
  requestsPerProcess?: number;
  /** An idle child leaves after this long (default 30 s). */
  idleMs?: number;
}

/**
 * A request the child could not finish for a reason that is the input's (time, memory): the
 * child answers this name in `error` for the limit it met itself.
 */
export class ChildLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChildLimitError";
  }
}

interface Waiter {
  data: Uint8Array;
  resolve: (answer: unknown) => void;
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

  constructor(
    argv: string[],
    maxMemoryMb: number,
    private readonly name: string,
  ) {
    // The limit is set by the shell the child is exec'd from: Node has no setrlimit of its own.
    // V8's heap is capped at half of it, so that garbage from earlier documents is collected long
    // before the OS limit: only a document that really needs the memory meets the limit.
    const heapMb = Math.max(64, Math.floor(maxMemoryMb / 2));
    this.proc = spawn(
      "/bin/sh",
      [
        "-c",
        `ulimit -d ${maxMemoryMb * 1024} && exec "$@"`,
        "faxgate-child",
        process.execPath,
        `--max-old-space-size=${heapMb}`,
        ...argv,
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
        new ChildLimitError(
          signal
            ? `${this.name} was stopped by ${signal} (the document needed more than the memory limit, or is damaged)`
            : `${this.name} exited with status ${code}`,
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

  read(data: Uint8Array, timeoutMs: number, what: string): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.current = null;
        this.kill();
        reject(new ChildLimitError(`${what} took longer than ${Math.round(timeoutMs / 1000)} s to read`));
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

  /** No more requests: the child finishes and exits. */
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

export class ChildPool {
  private readonly idle: Reader[] = [];
  private readonly busy = new Set<Reader>();
  private readonly waiting: Waiter[] = [];
  private closed = false;

  constructor(private readonly opts: ChildPoolOptions) {}

  /** The child's answer to `data` (its JSON line, without `ok`), or its error. */
  request<T>(data: Uint8Array): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`${this.opts.name} is shut down`));
    return new Promise((resolve, reject) => {
      this.waiting.push({ data, resolve: resolve as (v: unknown) => void, reject });
      this.assign();
    });
  }

  private assign(): void {
    while (this.waiting.length > 0 && !this.closed) {
      let r = this.idle.pop();
      while (r && !r.alive) r = this.idle.pop();
      if (!r) {
        if (this.busy.size >= this.opts.processes) return;
        r = new Reader(this.opts.argv, this.opts.maxMemoryMb, this.opts.name);
      }
      if (r.idleTimer) clearTimeout(r.idleTimer);
      const w = this.waiting.shift()!;
      this.busy.add(r);
      void this.serve(r, w);
    }
  }

  private async serve(r: Reader, w: Waiter): Promise<void> {
    try {
      const line = await r.read(w.data, this.opts.timeoutMs, this.opts.what);
      const msg = JSON.parse(line) as
        | ({ ok: true } & Record<string, unknown>)
        | { ok: false; retire?: boolean; error: { name: string; message: string } };
      if (msg.ok) {
        const { ok: _, ...answer } = msg;
        w.resolve(answer);
      } else {
        if (msg.retire) r.kill(); // it is leaving (at its memory limit): no other request, and gone for sure
        w.reject(
          msg.error.name === "ChildLimitError"
            ? new ChildLimitError(msg.error.message)
            : Object.assign(new Error(msg.error.message), { name: msg.error.name }),
        );
      }
    } catch (err) {
      w.reject(err as Error);
    } finally {
      this.busy.delete(r);
      r.served += 1;
      if (!r.alive || this.closed) r.kill();
      else if (r.served >= (this.opts.requestsPerProcess ?? 1000)) r.end();
      else {
        r.idleTimer = setTimeout(() => {
          const i = this.idle.indexOf(r);
          if (i >= 0) this.idle.splice(i, 1);
          r.end();
        }, this.opts.idleMs ?? 30_000);
        r.idleTimer.unref();
        this.idle.push(r);
      }
      this.assign();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.reject(new Error(`${this.opts.name} is shut down`));
    for (const r of [...this.idle.splice(0), ...this.busy]) r.kill();
  }
}
