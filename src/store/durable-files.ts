// Getting a document into the data folder so that it survives a power cut: copy to a temp
// name, fsync the file, rename (fs/atomic.ts replaceFile; bytes the caller holds are written with
// `flush`, so the file is not opened again to be synced), or, for a file intake already wrote
// whole, fsync it and move it in with one rename; then the caller fsyncs the folder. The job row
// is written after.
import { constants as fsConstants, promises as fsp } from "node:fs";
import path from "node:path";
import { FLUSH_ON_CLOSE, replaceFile, syncFile } from "../fs/index.js";

/**
 * Places `src` at `dest` durably; returns its size. Folder fsync is left to the caller (once per
 * folder). With `data`, those bytes (already read from `src` by the caller) are written instead.
 * A failed move leaves the file at `src`.
 */
export async function placeFile(src: string, dest: string, move: boolean, data?: Uint8Array): Promise<number> {
  if (move && !data) {
    // A file that is already whole (intake wrote it) needs no temp name: flushed where it is, then
    // one rename into the job's new folder, which nothing reads before the job row is committed.
    // If either step fails the file is still at src.
    const bytes = await syncFile(src);
    if (await moveInUnsynced(src, dest)) return bytes;
    // Another file system: copied to a temp name below, then unlinked.
  }
  // A copy: bytes the caller holds, a file the caller keeps, or one on another file system (the
  // rename above said EXDEV, and a rename into a temp name beside dest would say it again).
  const bytes = await replaceFile(
    dest,
    async (tmp) => {
      if (data) return fsp.writeFile(tmp, data, { flag: "wx", flush: FLUSH_ON_CLOSE });
      await fsp.copyFile(src, tmp, fsConstants.COPYFILE_EXCL);
    },
    {
      syncDir: false,
      flushedBytes: data && FLUSH_ON_CLOSE ? data.length : undefined,
    },
  );
  if (move) await fsp.unlink(src).catch(() => undefined);
  return bytes;
}

/**
 * The first half of placing a file intake already wrote whole, for a caller that flushes a job's
 * files and folders together: the file is renamed to `dest` now and not fsynced. The caller must
 * `syncFile(dest)` before the job is committed, and on a failure rename it back to `src`. False
 * (nothing done) when `dest` is on another file system: then `placeFile` copies it.
 */
export async function moveInUnsynced(src: string, dest: string): Promise<boolean> {
  try {
    await fsp.rename(src, dest);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EXDEV") return false;
    throw err;
  }
}

/** A stored file name from a user-supplied one: no folders, no dot files, bounded length. */
export function safeFileName(name: string, index: number): string {
  const base = path
    .basename(name)
    .replace(/[^a-zA-Z0-9._-]+/g, "_")
    .replace(/^\.+/, "")
    .slice(-80);
  return `${String(index).padStart(2, "0")}-${base || "document"}`;
}
