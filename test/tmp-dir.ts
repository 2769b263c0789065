// Where the tests' temp folders go. Every test makes a data folder, a spool and a store, and the
// store syncs each step to disk (synchronous=FULL, fsync of files and folders): on a disk that is
// ~3 ms a sync, hundreds of times a test. The tests check what a crash of the process leaves
// behind, never what a power cut does, so a tmpfs answers them just as well: /dev/shm is used
// when it is a writable, executable tmpfs with room to spare. An explicit TMPDIR always wins.
import { accessSync, constants, readFileSync, statfsSync } from "node:fs";

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
