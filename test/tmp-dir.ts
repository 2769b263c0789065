// Where the tests' temp folders go. Every test makes a data folder, a spool and a store, and the
// store syncs each step to disk (synchronous=FULL, fsync of files and folders): on a disk that is
// ~3 ms a sync, hundreds of times a test. The tests check what a crash of the process leaves
// behind, never what a power cut does, so a tmpfs answers them just as well: /dev/shm is used
// when it is a writable, executable tmpfs with room to spare. An explicit TMPDIR always wins.
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, statfsSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const SHM = "/dev/shm";
const NEEDED_BYTES = 4 * 1024 ** 3;

export function testTmpDir(): Record<string, string> {
  if (process.env.TMPDIR) return {};
  try {
    const mount = readFileSync("/proc/mounts", "utf8")
      .split("\n")
      .map((l) => l.split(" "))
      .filter((f) => f[1] === SHM)
      .pop();
    if (mount?.[2] !== "tmpfs") return {};
    const options = (mount[3] ?? "").split(",");
    if (options.includes("ro") || options.includes("noexec")) return {};
    accessSync(SHM, constants.W_OK);
    const fs = statfsSync(SHM);
    if (fs.bavail * fs.bsize < NEEDED_BYTES) return {};
    return { TMPDIR: SHM };
  } catch {
    return {};
  }
}

/**
 * The one way a test makes a temp folder: `faxgate-<what>-XXXXXX` under the temp dir chosen above
 * (the TMPDIR the run set). `what` names the test or rig, so a leftover says whose it is.
 */
export function tempFolder(what: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `faxgate-${what}-`));
}

/** Removes a temp folder; retries, as a child killed a moment ago may still be closing a file in it. */
export function removeFolder(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}
