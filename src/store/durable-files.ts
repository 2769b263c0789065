// Getting a document into the data folder so that it survives a power cut: copy (or move)
// to a temp name, fsync the file, rename, fsync the folder. The job row is written after.
import { promises as fsp } from 'node:fs';
import path from 'node:path';

/**
 * Places `src` at `dest` durably; returns its size. Folder fsync is left to the caller (once per
 * folder). With `data`, those bytes (already read from `src` by the caller) are written instead.
 */
export async function placeFile(src: string, dest: string, move: boolean, data?: Uint8Array): Promise<number> {
  const tmp = path.join(path.dirname(dest), `.tmp-${path.basename(dest)}`);
  let moved = false;
  if (data) {
    await fsp.writeFile(tmp, data);
  } else if (move) {
    try {
      await fsp.rename(src, tmp);
      moved = true;
    } catch (err) {
      // Another file system: fall back to copy + unlink below.
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    }
  }
  if (!moved && !data) await fsp.copyFile(src, tmp);
  const fh = await fsp.open(tmp, 'r+');
  let bytes: number;
  try {
    await fh.sync();
    bytes = (await fh.stat()).size;
  } finally {
    await fh.close();
  }
  await fsp.rename(tmp, dest);
  if (move && !moved) await fsp.unlink(src).catch(() => undefined);
  return bytes;
}

/** A stored file name from a user-supplied one: no folders, no dot files, bounded length. */
export function safeFileName(name: string, index: number): string {
  const base = path.basename(name).replace(/[^a-zA-Z0-9._-]+/g, '_').replace(/^\.+/, '').slice(-80);
  return `${String(index).padStart(2, '0')}-${base || 'document'}`;
}
