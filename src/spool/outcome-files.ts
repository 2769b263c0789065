// Moving a spool file to done/ or failed/ and writing its reason file. Names in the outcome
// folders never overwrite each other: a second "invoice.pdf" becomes "invoice (2).pdf".
// Every operation names its folder through withFolder() (./safe-folder.ts): checked, never
// followed through a link, made again when missing.
import { lstat, readdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { fsyncDir, writeFileAtomic, poolCalls, type FolderCalls } from "../fs/index.js";
import { withFolder, type FolderOptions } from "./safe-folder.js";

/** A name in `dir` that is free now, based on `name`. */
export async function freeName(dir: string, name: string, folder: FolderOptions = {}): Promise<string> {
  return withFolder(dir, (at) => freeNameIn(at, name, folder.calls ?? poolCalls), folder);
}

async function freeNameIn(dir: string, name: string, calls: FolderCalls): Promise<string> {
  const exists = async (p: string) => (await calls.look(p)) !== null;
  if (!(await exists(path.join(dir, name)))) return name;
  const dot = name.lastIndexOf(".");
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : "";
  for (let i = 2; i < 10_000; i++) {
    const candidate = `${stem} (${i})${ext}`;
    if (!(await exists(path.join(dir, candidate)))) return candidate;
  }
  return `${stem} (${Date.now()})${ext}`;
}

/**
 * Moves `from` into `dir` under a free name based on `name`, without ever replacing a file
 * (link + unlink fails on an existing name; rename is the fallback for what cannot be linked).
 */
export async function moveInto(
  from: string,
  dir: string,
  name: string,
  opts: { sync?: boolean; touch?: Date; folder?: FolderOptions } = {},
): Promise<string> {
  const sync = opts.sync ?? true;
  const calls = opts.folder?.calls ?? poolCalls;
  const placed = await withFolder(
    dir,
    async (at) => {
      const done = async (target: string) => {
        // never through a link that someone with the folder's group put in the name's place meanwhile;
        // only the age done/ is pruned by: the file is placed all the same if it fails
        if (opts.touch) await calls.touch(path.join(at, target), opts.touch).catch(() => {});
        return target;
      };
      for (let attempt = 0; attempt < 5; attempt++) {
        // the name itself is tried first without a look (link fails on a name that is taken)
        const target = attempt === 0 ? name : await freeNameIn(at, name, calls);
        const to = path.join(at, target);
        try {
          await calls.link(from, to);
          await calls.unlink(from);
          if (sync) await fsyncDir(at);
          return done(target);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === "EEXIST") continue;
          if (code === "EPERM" || code === "EXDEV" || code === "ENOTSUP" || code === "EOPNOTSUPP") {
            // FIFOs on some filesystems, or links not allowed: rename is the only way. It replaces
            // a file of that name, so only onto a name looked at and found free.
            const free = attempt === 0 ? await freeNameIn(at, name, calls) : target;
            await rename(from, path.join(at, free));
            await fsyncDir(at);
            return done(free);
          }
          throw err;
        }
      }
      const target = `${name}.${Date.now()}`;
      await rename(from, path.join(at, target));
      return done(target);
    },
    opts.folder,
  );
  return path.join(dir, placed);
}

export async function writeReason(
  failedDir: string,
  fileName: string,
  reason: string,
  folder?: FolderOptions,
): Promise<string> {
  const name = `${fileName}.reason.txt`;
  await withFolder(failedDir, (at) => writeFileAtomic(path.join(at, name), `${reason.trim()}\n`, 0o660), folder);
  return path.join(failedDir, name);
}

/** Removes files in `dir` older than `days` (by mtime); returns how many. */
export async function pruneOlderThan(dir: string, days: number, now: number, folder?: FolderOptions): Promise<number> {
  if (days <= 0) return 0;
  const limit = now - days * 86_400_000;
  return withFolder(
    dir,
    async (at) => {
      let removed = 0;
      for (const name of await readdir(at).catch(() => [] as string[])) {
        const p = path.join(at, name);
        const st = await lstat(p).catch(() => null);
        if (!st || st.isDirectory() || st.mtimeMs >= limit) continue;
        await rm(p, { force: true });
        removed += 1;
      }
      return removed;
    },
    folder,
  );
}
