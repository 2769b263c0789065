// The folders faxgate writes in a spool (.work, done, failed) sit inside a folder its users can
// write: a user (or anyone with the print group) can delete one, or put a symbolic link in its
// place, at any time after start. A link there once made the daemon prune files in the link's
// target. So every move, reason file and prune goes through withFolder(): the folder is opened
// with O_NOFOLLOW | O_DIRECTORY, checked by fstat (a real folder, owned by faxgate), and worked
// on through /proc/self/fd/N, which names the very folder that was checked whatever happens to
// its path meanwhile. A missing folder is made again; anything else in its place is moved aside.
// The open, fstat and close are made on the main thread: each takes a few microseconds there,
// where a trip through the thread pool costs the main thread 15-20 (a burst of print files makes
// two of these checks a file; docs/bench.md). O_DIRECTORY fails at once on anything that is not
// a folder, a FIFO too, so the open never waits.
import { closeSync, constants, existsSync, fstatSync, openSync } from 'node:fs';
import { chmod, mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { FaxgateError } from '../errors.js';

export const FOLDER_MODE = 0o770;

/** Linux names an open folder by its descriptor; elsewhere the checked path is used as it is. */
const procFd = existsSync('/proc/self/fd');

export interface FolderEvents {
  /** A folder was missing and made again, or something in its place was moved aside. */
  onRepair?: (what: string) => void;
}

/** Makes `dir` a new folder of mode 0770 (the umask would take the group's write). */
async function makeFolder(dir: string): Promise<void> {
  await mkdir(dir, { mode: FOLDER_MODE });
  await chmod(dir, FOLDER_MODE);
}

/** The folder's descriptor, or why it is not a folder faxgate may write in. */
function openFolder(dir: string): number | string {
  try {
    const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    let st;
    try {
      st = fstatSync(fd);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    const uid = process.geteuid?.();
    if (!st.isDirectory()) {
      closeSync(fd);
      return 'it is not a folder';
    }
    if (uid !== undefined && st.uid !== uid) {
      closeSync(fd);
      return `it belongs to uid ${st.uid}, not to faxgate (uid ${uid})`;
    }
    return fd;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'missing';
    if (code === 'ELOOP' || code === 'ENOTDIR') return 'a symbolic link or a file is in its place';
    throw err;
  }
}

/**
 * Runs `fn` with a path that names the checked folder `dir` (its descriptor's /proc path on Linux).
 * The path is valid only while `fn` runs.
 */
export async function withFolder<T>(dir: string, fn: (at: string) => Promise<T>, events: FolderEvents = {}): Promise<T> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const got = openFolder(dir);
    if (typeof got !== 'string') {
      try {
        return await fn(procFd ? `/proc/self/fd/${got}` : dir);
      } finally {
        closeSync(got);
      }
    }
    if (got === 'missing') {
      await makeFolder(dir).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      events.onRepair?.(`${dir} was missing and was made again`);
      continue;
    }
    // Never followed, never deleted: what is there is renamed (a link is renamed as a link), to a
    // dot-name that the watcher never takes up as a document.
    const aside = path.join(path.dirname(dir), `.${path.basename(dir)}.not-a-folder-${Date.now()}`);
    await rename(dir, aside).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    events.onRepair?.(`${dir} was replaced (${got}); it was moved aside to ${path.basename(aside)} and a new folder made`);
  }
  throw new FaxgateError('UNSAFE_FILE', `${dir} keeps being replaced; faxgate does not write there`);
}
