// The one way faxgate runs an outside program on untrusted input (LibreOffice, ocrmypdf,
// pdftoppm): in the sandbox the machine allows (sandbox.ts: bubblewrap, else unshare), as the
// converter's own user when the daemon is root, under an address-space limit that holds for
// everything it starts, in a process group of its own that is killed whole past the time limit,
// and with nothing of ours (keys, passwords) in its environment. Its callers say what to run,
// which folders it may use, and its limits; they get back how it ended.
import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";
import { groupGone, killGroup, type SandboxPlan, sandboxArgs } from "./sandbox.js";

export interface SandboxedChild {
  /** The command (a path) and its arguments. */
  argv: string[];
  /** The program argv[0] starts, when argv[0] is a shell (its install folder is made visible). */
  program?: string;
  /** Folders it may read and write, besides the system's read-only; the last is its working folder. */
  files: string[];
  /** Time is counted from the start; memory is its address space, in MiB. */
  limits: { timeoutMs: number; memoryMb: number };
  /** Which isolation this machine allows (planSandbox, found once by the owner). */
  plan: SandboxPlan;
  /** Environment besides PATH, LANG and HOME (its working folder unless given here). */
  env?: Record<string, string>;
  /** Process groups in progress: added at the start, removed at the end (the owner's close kills them). */
  children?: Set<number>;
  /** Told the group's pid once it runs (a test kills one to play a crash). */
  started?: (pid: number) => void;
}

export interface SandboxedResult {
  /** Exit status; 97 when the memory limit could not be set. */
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** Its stdout and stderr, the first 8 KiB (never logged whole: it may quote the document). */
  output: string;
}

/** Exit status of a child whose memory limit could not be set (it did not run). */
export const NO_MEMORY_LIMIT = 97;

/**
 * Ends the group once the daemon's end of fd 3 closes: when the child has exited (below), and
 * when the daemon dies, at any moment and by any signal. bubblewrap's --die-with-parent is armed
 * only once bwrap runs, so a daemon killed in the instant before left the sandbox running for
 * good (containers/bubblewrap#633, #700), and unshare or no sandbox at all has nothing like it.
 * The watcher holds nothing but fd 3; the command runs without it.
 */
const WATCH_PARENT = "(read -r x <&3; kill -KILL 0) </dev/null >/dev/null 2>&1 &";

/**
 * Starts the child, long-lived, with the given stdio (the warm LibreOffice talks over its pipes).
 * Its group is killed when it ends, or when the daemon does, so nothing it started outlives it.
 */
export function spawnSandboxed(
  c: Omit<SandboxedChild, "limits"> & { memoryMb: number; stdio: ["pipe" | "ignore", "pipe", "pipe" | "ignore"] },
): ChildProcess {
  const cwd = c.files[c.files.length - 1]!;
  const kb = Math.floor(c.memoryMb * 1024);
  const child = spawn(
    "/bin/sh",
    [
      "-c",
      // the limit holds for the command and everything it starts; exec keeps one process group
      `ulimit -v ${kb} 2>/dev/null || exit ${NO_MEMORY_LIMIT}; ${WATCH_PARENT} exec 3<&- "$@"`,
      "sh",
      ...sandboxArgs(c.plan, { rw: c.files, command: c.program ?? c.argv[0]! }),
      ...c.argv,
    ],
    {
      cwd,
      // a root daemon's child runs as the converter's user (unshare switches by itself)
      ...(c.plan.runAs && c.plan.method !== "unshare" ? { uid: c.plan.runAs.uid, gid: c.plan.runAs.gid } : {}),
      detached: true,
      stdio: [...c.stdio, "pipe"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, LANG: process.env.LANG ?? "C.UTF-8", ...c.env },
    },
  );
  const pid = child.pid;
  if (pid) {
    c.children?.add(pid);
    c.started?.(pid);
  }
  const done = (): void => {
    if (!pid) return;
    c.children?.delete(pid);
    killGroup(pid);
  };
  // closed, it tells the watcher to end the group (and 'close' waits for it, as for every pipe)
  const watched = child.stdio[3] as Socket | null;
  watched?.on("error", () => undefined);
  const release = (): void => {
    watched?.destroy();
  };
  child.on("exit", release);
  child.on("error", () => {
    release();
    done();
  });
  child.on("close", done);
  return child;
}

/** Runs the child to its end; past the time limit its whole group is killed. */
export function runSandboxed(c: SandboxedChild): Promise<SandboxedResult> {
  return new Promise((resolve, reject) => {
    const child = spawnSandboxed({ ...c, memoryMb: c.limits.memoryMb, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const keep = (b: Buffer): void => {
      if (output.length < 8192) output += b.toString("utf8");
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid) killGroup(child.pid);
    }, c.limits.timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      // its group is killed as it closes (spawnSandboxed): ended means ended, whole
      const gone = child.pid ? groupGone(child.pid) : Promise.resolve(true);
      void gone.then(() => resolve({ code, signal, timedOut, output }));
    });
  });
}
