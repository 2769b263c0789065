// A received fax written into a folder another program imports from (practice software, a
// document system): under a temporary hidden name, fsynced, given its mode, then linked to its
// final name (never over an existing file) and the folder fsynced, so the importer never sees half
// a file. The daemon's user owns it; the mode is the rule's.
import { readFileSync } from "node:fs";
import { chmod, chown, link, mkdir, open, unlink } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { FaxgateError } from "../errors.js";
import { fsyncDir } from "../fs/index.js";
import { namePart } from "../connectors/index.js";

export interface FolderFacts {
  id: string;
  messageId: string;
  receivedAt: string;
  sender: string | null;
  csid: string | null;
  dialled: string | null;
  pages: number | null;
}

/** Characters a name part may keep: anything else (slashes, spaces, quotes) becomes "_". */
const part = namePart;

/** `{date}_{time}_{sender}_{pages}p.pdf` and friends; times in UTC. */
export function folderFileName(pattern: string, f: FolderFacts): string {
  const t = new Date(f.receivedAt);
  const iso = Number.isNaN(t.getTime()) ? "" : t.toISOString();
  const values: Record<string, string> = {
    date: part(iso.slice(0, 10)),
    time: part(iso.slice(11, 19).replace(/:/g, "")),
    sender: part(f.sender),
    csid: part(f.csid),
    dialled: part(f.dialled),
    pages: f.pages != null ? String(f.pages) : "0",
    id: part(f.id),
    messageId: part(f.messageId),
  };
  const name = pattern.replace(/\{(\w+)\}/g, (m, k: string) => values[k] ?? part(m));
  // the pattern itself cannot lead out of the folder either
  return part(path.basename(name), `fax-${values.id}.pdf`);
}

/** A user or group name (or number) as its number, from /etc/passwd or /etc/group; null if unknown. */
export function idOf(file: "/etc/passwd" | "/etc/group", name: string): number | null {
  if (/^\d+$/.test(name)) return Number(name);
  try {
    const line = readFileSync(file, "utf8")
      .split("\n")
      .find((l) => l.split(":")[0] === name);
    const id = line?.split(":")[2];
    return id !== undefined && /^\d+$/.test(id) ? Number(id) : null;
  } catch {
    return null;
  }
}

/**
 * Writes `data` as `name` in `folder` (a numbered name when taken); returns the path written.
 * `owner`/`group`: given to the file before it appears under its name.
 */
export async function writeToFolder(
  folder: string,
  name: string,
  data: Uint8Array,
  mode: number,
  who: { owner?: string; group?: string } = {},
): Promise<string> {
  // the folder itself is made if missing, not its parents: a recursive mkdir under /proc never
  // returns (Node 20), and a missing parent is a config mistake worth an error naming it
  await mkdir(folder, { mode: 0o750 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "EEXIST") return;
    throw new FaxgateError(
      "INTERNAL",
      `the folder ${folder} cannot be made (${err.code ?? err.message}); its parent must exist`,
      { cause: err, temporary: true },
    );
  });
  const tmp = path.join(folder, `.faxgate-${randomBytes(6).toString("hex")}.tmp`);
  const fh = await open(tmp, "wx", 0o600);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    // the mode is set exactly, whatever the daemon's umask
    await chmod(tmp, mode);
    if (who.owner !== undefined || who.group !== undefined) {
      const uid = who.owner === undefined ? -1 : idOf("/etc/passwd", who.owner);
      const gid = who.group === undefined ? -1 : idOf("/etc/group", who.group);
      if (uid === null || gid === null)
        throw new FaxgateError(
          "CONFIG_INVALID",
          `no such ${uid === null ? `user "${who.owner}"` : `group "${who.group}"`} for the folder ${folder}`,
        );
      await chown(tmp, uid, gid);
    }
    const ext = path.extname(name);
    const stem = name.slice(0, name.length - ext.length);
    for (let n = 1; ; n++) {
      const dest = path.join(folder, n === 1 ? name : `${stem}-${n}${ext}`);
      try {
        await link(tmp, dest);
        await fsyncDir(folder);
        return dest;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST" || n >= 1000) throw err;
      }
    }
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}
