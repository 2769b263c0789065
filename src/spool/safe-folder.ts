// The folders faxgate writes in a spool (.work, done, failed) sit inside a folder its users can
// write: a user (or anyone with the print group) can delete one, or put a symbolic link in its
// place, at any time after start. A link there once made the daemon prune files in the link's
// target. So every move, reason file and prune goes through withFolder(): the folder is opened
// with O_NOFOLLOW | O_DIRECTORY, checked by fstat (a real folder, owned by faxgate), and worked
// on through /proc/self/fd/N, which names the very folder that was checked whatever happens to
// its path meanwhile. A missing folder is made again; anything else in its place is moved aside.
// O_DIRECTORY fails at once on anything that is not a folder, a FIFO too, so the open never waits.
import { constants, existsSync } from "node:fs";
import { chmod, mkdir, rename } from "node:fs/promises";
import path from "node:path";
import { FaxgateError } from "../errors.js";
import { poolCalls, type FolderCalls } from "../fs/index.js";

export const FOLDER_MODE = 0o770;

/** Linux names an open folder by its descriptor; elsewhere the checked path is used as it is. */
const procFd = existsSync("/proc/self/fd");

export interface FolderOptions {
  /** A folder was missing and made again, or something in its place was moved aside. */
  onRepair?: (what: string) => void;
  /** How the folder's file calls are made (folder-calls.ts; default: through the thread pool). */
  calls?: FolderCalls;
}

/** Makes `dir` a new folder of mode 0770 (the umask would take the group's write). */
async function makeFolder(dir: string): Promise<void> {
  await mkdir(dir, { mode: FOLDER_MODE });
  await chmod(dir, FOLDER_MODE);
}

/** The folder's descriptor, or why it is not a folder faxgate may write in. */
async function openFolder(dir: string, calls: FolderCalls): Promise<number | string> {
  try {
    const fd = await calls.open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    let st: Awaited<ReturnType<typeof calls.fstat>>;
    try {
      st = await calls.fstat(fd);
    } catch (err) {
      await calls.close(fd);
      throw err;
    }
    const uid = process.geteuid?.();
    if (!st.isDirectory()) {
      await calls.close(fd);
      return "it is not a folder";
    }
    if (uid !== undefined && st.uid !== uid) {
      await calls.close(fd);
      return `it belongs to uid ${st.uid}, not to faxgate (uid ${uid})`;
    }
    return fd;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return "missing";
    if (code === "ELOOP" || code === "ENOTDIR") return "a symbolic link or a file is in its place";
    throw err;
  }
}

/**
 * Runs `fn` with a path that names the checked folder `dir` (its descriptor's /proc path on Linux).
 * The path is valid only while `fn` runs.
 */
export async function withFolder<T>(
  dir: string,
  fn: (at: string) => Promise<T>,
  options: FolderOptions = {},
): Promise<T> {
  const calls = options.calls ?? poolCalls;
  for (let attempt = 0; attempt < 3; attempt++) {
    const got = await openFolder(dir, calls);
    if (typeof got !== "string") {
      try {
        return await fn(procFd ? `/proc/self/fd/${got}` : dir);
      } finally {
        await calls.close(got);
      }
    }
    if (got === "missing") {
      await makeFolder(dir).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw err;
      });
      options.onRepair?.(`${dir} was missing and was made again`);
      continue;
    }
    // Never followed, never deleted: what is there is renamed (a link is renamed as a link), to a
    // dot-name that the watcher never takes up as a document.
    const aside = path.join(path.dirname(dir), `.${path.basename(dir)}.not-a-folder-${Date.now()}`);
    await rename(dir, aside).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err;
    });
    options.onRepair?.(
      `${dir} was replaced (${got}); it was moved aside to ${path.basename(aside)} and a new folder made`,
    );
  }
  throw new FaxgateError("UNSAFE_FILE", `${dir} keeps being replaced; faxgate does not write there`);
}
