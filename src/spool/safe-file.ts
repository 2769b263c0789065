// A spool folder is writable by people and programs we do not control, so a name in it may be
// a symlink to /etc/shadow, a hard link to someone else's file, or a FIFO that blocks whoever
// opens it. Names are judged by lstat (never following links) and the file is opened with
// O_NOFOLLOW | O_NONBLOCK and checked again with fstat, so what is read is what was judged.
// With O_NONBLOCK not even a FIFO put in a file's place makes the open wait.
import { constants, type Stats } from "node:fs";
import { FaxgateError } from "../errors.js";
import { size as formatSize } from "../format.js";
import { poolCalls, type FolderCalls } from "../fs/index.js";

/** Names that are still being written or belong to the system: never touched at all. */
export function isIgnoredName(name: string): boolean {
  if (name.startsWith(".") || name.startsWith("~$")) return true;
  return /\.(part|tmp|crdownload|partial|download|swp)$/i.test(name) || name.endsWith("~");
}

/** Sidecar tickets are read with their document, never faxed themselves. */
export function isTicketName(name: string): boolean {
  return name.toLowerCase().endsWith(".json");
}

export type Verdict = { ok: true; stat: Stats } | { ok: false; reason: string; stat: Stats };

/** Judges what lstat says about a name in the spool folder. */
export function judgeStat(stat: Stats, maxBytes: number): Verdict {
  if (stat.isSymbolicLink()) return { ok: false, reason: "it is a symbolic link; only regular files are faxed", stat };
  if (stat.isFIFO()) return { ok: false, reason: "it is a named pipe (FIFO); only regular files are faxed", stat };
  if (stat.isSocket()) return { ok: false, reason: "it is a socket; only regular files are faxed", stat };
  if (stat.isBlockDevice() || stat.isCharacterDevice())
    return { ok: false, reason: "it is a device; only regular files are faxed", stat };
  if (!stat.isFile()) return { ok: false, reason: "it is not a regular file", stat };
  if (stat.nlink > 1)
    return {
      ok: false,
      reason: `it has ${stat.nlink} hard links; copy the file into the folder instead of linking it`,
      stat,
    };
  if (stat.size > maxBytes)
    return { ok: false, reason: `it is ${formatSize(stat.size)}, over the limit of ${formatSize(maxBytes)}`, stat };
  if (stat.size === 0) return { ok: false, reason: "the file is empty", stat };
  return { ok: true, stat };
}

/**
 * Reads a whole file judged safe, refusing (UNSAFE_FILE) if what is opened is not the very
 * regular file that was judged: a swap between lstat and open cannot make us read elsewhere.
 */
export async function readSafely(
  file: string,
  judged: Stats,
  maxBytes: number,
  calls: FolderCalls = poolCalls,
  /** Throws if the owner of the file as opened may not have it faxed (before a byte is read). */
  checkOwner?: (uid: number) => Promise<void>,
): Promise<Buffer> {
  let fd: Awaited<ReturnType<typeof calls.open>>;
  try {
    fd = await calls.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "EMLINK")
      throw new FaxgateError("UNSAFE_FILE", "it became a symbolic link while being taken", { cause: err });
    throw err;
  }
  try {
    const st = await calls.fstat(fd);
    if (!st.isFile() || st.dev !== judged.dev || st.ino !== judged.ino) {
      throw new FaxgateError("UNSAFE_FILE", "it was replaced by another file while being taken");
    }
    if (st.nlink > 1) throw new FaxgateError("UNSAFE_FILE", `it has ${st.nlink} hard links`);
    await checkOwner?.(st.uid);
    if (st.size > maxBytes)
      throw new FaxgateError("TOO_LARGE", `it is ${formatSize(st.size)}, over the limit of ${formatSize(maxBytes)}`);
    // Read up to one byte more than the limit so growth after fstat is noticed too.
    const buf = Buffer.allocUnsafe(Math.min(st.size, maxBytes) + 1);
    let off = 0;
    for (;;) {
      const bytesRead = await calls.read(fd, buf, off, buf.length - off, off);
      if (bytesRead === 0) break;
      off += bytesRead;
      if (off >= buf.length) break;
    }
    if (off > maxBytes) throw new FaxgateError("TOO_LARGE", `it is over the limit of ${formatSize(maxBytes)}`);
    return buf.subarray(0, off);
  } finally {
    await calls.close(fd);
  }
}
