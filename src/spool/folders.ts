// One folder per user under the spool root, with the outcome folders inside it. Folders are
// created 0770 (group: the people who drop files; the person's own folder sticky) and never made
// looser. Who may write a person's files is decided by their owner (writers.ts).
import { chmod, lstat, mkdir } from "node:fs/promises";
import path from "node:path";
import { FaxgateError } from "../errors.js";
import type { UserConfig } from "../config/index.js";
import { poolCalls, type FolderCalls } from "../fs/index.js";

export const WORK_DIR = ".work";
export const DONE_DIR = "done";
export const FAILED_DIR = "failed";
const FOLDER_MODE = 0o770;

export interface UserFolders {
  user: string;
  root: string;
  work: string;
  done: string;
  failed: string;
  /** How file calls in these folders are made (folder-calls.ts: here on a local disk). */
  calls: FolderCalls;
}

/** Whose folder: a user, or someone who has left (their name only). */
export type FolderOwner = Pick<UserConfig, "name" | "spool">;

export function folderName(user: FolderOwner): string {
  return user.spool ?? user.name;
}

export function userFolders(spoolRoot: string, user: FolderOwner, calls: FolderCalls = poolCalls): UserFolders {
  const root = path.join(path.resolve(spoolRoot), folderName(user));
  return {
    user: user.name,
    root,
    work: path.join(root, WORK_DIR),
    done: path.join(root, DONE_DIR),
    failed: path.join(root, FAILED_DIR),
    calls,
  };
}

/** Creates the folders (or checks existing ones are real folders, not links) with safe modes. */
export async function ensureFolders(spoolRoot: string, f: UserFolders): Promise<void> {
  await mkdir(spoolRoot, { recursive: true, mode: 0o755 });
  for (const dir of [f.root, f.work, f.done, f.failed]) {
    const created = await mkdir(dir, { mode: FOLDER_MODE }).then(
      () => true,
      (err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw err;
        return false;
      },
    );
    const st = await lstat(dir);
    if (!st.isDirectory())
      throw new FaxgateError("UNSAFE_FILE", `${dir} is not a folder (a link or a file is in its place)`);
    // New folders get exactly 0770 (the umask would take the group's write, which the print
    // service needs); existing ones are tightened, never loosened: an admin may want 0750.
    const mode = st.mode & 0o777;
    // The person's folder gets the sticky bit too: a member of the group may still create files
    // there (the owner check in writers.ts refuses them) but not delete, rename or replace the
    // person's own files waiting to be taken. faxgate owns the folder, so it can still claim them.
    if (created && dir === f.root) await chmod(dir, FOLDER_MODE | 0o1000);
    else if (created && mode !== FOLDER_MODE) await chmod(dir, FOLDER_MODE);
    else if ((mode & ~FOLDER_MODE) !== 0) await chmod(dir, mode & FOLDER_MODE);
  }
}
