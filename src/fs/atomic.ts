// Write-then-rename with fsync, so a reader (or a crash) never sees half a file. This is the one
// place that does it: the store's documents, the outbox's mail, downloaded faxes and small state
// files all go through replaceFile().
import { randomBytes } from "node:crypto";
import { link, mkdir, open, readFile, rename, rm, unlink } from "node:fs/promises";
import path from "node:path";

/**
 * Node 20.10 and later (21+) take `flush: true` in createWriteStream and writeFile: the file is
 * fsynced before its descriptor is closed, by the same thread-pool task, so whoever wrote it need
 * not open it again to sync it. On an older Node the option is ignored, and callers must fsync.
 */
export const FLUSH_ON_CLOSE = ((): boolean => {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  return major > 20 || (major === 20 && minor >= 10);
})();

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** A temp name beside `file` that no other writer picks: hidden, random, with `suffix`. */
export function tempNameFor(file: string, suffix = ".tmp"): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString("hex")}${suffix}`);
}

export interface ReplaceFileOptions {
  /** Also fsync the folder after the rename (default true); false when the caller does it once for many files. */
  syncDir?: boolean;
  /** The temp name's ending (default ".tmp"); readers of the folder skip such names. */
  suffix?: string;
  /**
   * Undoes `fill` after a failure (default: delete the temp file). A fill that moved the caller's
   * only copy into the temp name moves it back here instead.
   */
  undo?: (tmp: string) => Promise<void>;
  /** Wraps an error of the sync, rename or folder sync (not of `fill`), e.g. to name the file. */
  wrapError?: (err: unknown) => unknown;
  /**
   * `fill` wrote the file with `flush` (FLUSH_ON_CLOSE), so it is on disk already and this long:
   * it is not opened again to be synced.
   */
  flushedBytes?: number;
}

/**
 * Puts a file at `dest` durably: `fill(tmp)` creates the temp file (a fresh name in dest's folder),
 * then it is fsynced, renamed over `dest`, and the folder fsynced. On failure the temp file is
 * removed (see `undo`) and the error rethrown. Returns the file's size.
 */
export async function replaceFile(
  dest: string,
  fill: (tmp: string) => Promise<void>,
  opts: ReplaceFileOptions = {},
): Promise<number> {
  const tmp = tempNameFor(dest, opts.suffix);
  const own = <T>(p: Promise<T>): Promise<T> =>
    opts.wrapError
      ? p.catch((err: unknown) => {
          throw opts.wrapError!(err);
        })
      : p;
  let bytes: number;
  try {
    await fill(tmp);
    bytes = opts.flushedBytes ?? (await own(syncFile(tmp)));
    await own(rename(tmp, dest));
  } catch (err) {
    await (opts.undo ?? removeQuietly)(tmp).catch(() => undefined);
    throw err;
  }
  if (opts.syncDir ?? true) await own(fsyncDir(path.dirname(dest)));
  return bytes;
}

/** fsyncs a file's data; returns its size. */
export async function syncFile(file: string): Promise<number> {
  const fh = await open(file, "r+");
  try {
    await fh.sync();
    return (await fh.stat()).size;
  } finally {
    await fh.close();
  }
}

function removeQuietly(file: string): Promise<void> {
  return unlink(file).catch(() => undefined);
}

export async function writeFileAtomic(file: string, data: string | Uint8Array, mode = 0o640): Promise<void> {
  await replaceFile(file, async (tmp) => {
    const fh = await open(tmp, "wx", mode);
    try {
      await fh.writeFile(data);
    } finally {
      await fh.close();
    }
  });
}

/**
 * A small secret file made once (0600): its text if it exists, else `make()` written whole under
 * a temporary name, fsynced, and published with link(), which fails when one exists, so two
 * processes making it at once (the daemon and a CLI command) end with the same text.
 */
export async function readOrMakeOnce(file: string, make: () => string): Promise<string> {
  const existing = await readFile(file, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    throw err;
  });
  if (existing !== null) return existing;
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = tempNameFor(file);
  const fh = await open(tmp, "wx", 0o600);
  try {
    await fh.writeFile(make());
    // on disk before it is published: a crash must not leave an empty file behind the name
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await link(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    await rm(tmp, { force: true });
  }
  return readFile(file, "utf8");
}
