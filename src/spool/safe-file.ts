// A spool folder is writable by people and programs we do not control, so a name in it may be
// a symlink to /etc/shadow, a hard link to someone else's file, or a FIFO that blocks whoever
// opens it. Names are judged by lstat (never following links) and the file is opened with
// O_NOFOLLOW | O_NONBLOCK and checked again with fstat, so what is read is what was judged.
// The looks (lstat, open, fstat, close) are made on the main thread: a few microseconds each
// there, where a trip through the thread pool costs the main thread 15-20, and a print burst
// makes several a file (docs/bench.md). With O_NONBLOCK not even a FIFO put in a file's place
// makes the open wait. The read of a file of up to 256 KB too (a printed letter: a few KB, just
// written, so in the page cache; tens of microseconds at most); a larger one is read on the pool.
import { closeSync, constants, fstatSync, lstatSync, openSync, read, readSync, type Stats } from 'node:fs';
import { promisify } from 'node:util';
import { FaxgateError } from '../errors.js';

const readAt = promisify(read);

/** Files up to this size are read on the main thread. */
const READ_HERE_BYTES = 256 * 1024;

/** Names that are still being written or belong to the system: never touched at all. */
export function isIgnoredName(name: string): boolean {
  if (name.startsWith('.') || name.startsWith('~$')) return true;
  return /\.(part|tmp|crdownload|partial|download|swp)$/i.test(name) || name.endsWith('~');
}

/** Sidecar tickets are read with their document, never faxed themselves. */
export function isTicketName(name: string): boolean {
  return name.toLowerCase().endsWith('.json');
}

export type Verdict = { ok: true; stat: Stats } | { ok: false; reason: string; stat: Stats };

/** Judges what lstat says about a name in the spool folder. */
export function judgeStat(stat: Stats, maxBytes: number): Verdict {
  if (stat.isSymbolicLink()) return { ok: false, reason: 'it is a symbolic link; only regular files are faxed', stat };
  if (stat.isFIFO()) return { ok: false, reason: 'it is a named pipe (FIFO); only regular files are faxed', stat };
  if (stat.isSocket()) return { ok: false, reason: 'it is a socket; only regular files are faxed', stat };
  if (stat.isBlockDevice() || stat.isCharacterDevice()) return { ok: false, reason: 'it is a device; only regular files are faxed', stat };
  if (!stat.isFile()) return { ok: false, reason: 'it is not a regular file', stat };
  if (stat.nlink > 1) return { ok: false, reason: `it has ${stat.nlink} hard links; copy the file into the folder instead of linking it`, stat };
  if (stat.size > maxBytes) return { ok: false, reason: `it is ${stat.size} bytes, over the limit of ${maxBytes} bytes`, stat };
  if (stat.size === 0) return { ok: false, reason: 'the file is empty', stat };
  return { ok: true, stat };
}

/** What lstat says of `file`, or null if there is nothing there (or it cannot be looked at). */
export function lookAt(file: string): Stats | null {
  try {
    return lstatSync(file, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

/**
 * Reads a whole file judged safe, refusing (UNSAFE_FILE) if what is opened is not the very
 * regular file that was judged: a swap between lstat and open cannot make us read elsewhere.
 */
export async function readSafely(file: string, judged: Stats, maxBytes: number): Promise<Buffer> {
  let fd;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') throw new FaxgateError('UNSAFE_FILE', 'it became a symbolic link while being taken', { cause: err });
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.dev !== judged.dev || st.ino !== judged.ino) {
      throw new FaxgateError('UNSAFE_FILE', 'it was replaced by another file while being taken');
    }
    if (st.nlink > 1) throw new FaxgateError('UNSAFE_FILE', `it has ${st.nlink} hard links`);
    if (st.size > maxBytes) throw new FaxgateError('TOO_LARGE', `it is ${st.size} bytes, over the limit of ${maxBytes} bytes`);
    // Read up to one byte more than the limit so growth after fstat is noticed too.
    const buf = Buffer.allocUnsafe(Math.min(st.size, maxBytes) + 1);
    let off = 0;
    const here = buf.length <= READ_HERE_BYTES;
    for (;;) {
      const bytesRead = here ? readSync(fd, buf, off, buf.length - off, off) : (await readAt(fd, buf, off, buf.length - off, off)).bytesRead;
      if (bytesRead === 0) break;
      off += bytesRead;
      if (off >= buf.length) break;
    }
    if (off > maxBytes) throw new FaxgateError('TOO_LARGE', `it is over the limit of ${maxBytes} bytes`);
    return buf.subarray(0, off);
  } finally {
    closeSync(fd);
  }
}
