// A ticket whose document never came (or came after its document was already faxed) would
// otherwise wait forever and address the next file of that name by surprise. After an hour
// alone it is moved to failed/ with a reason.
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../log/index.js";
import type { UserFolders } from "./folders.js";
import { freeName, moveInto, writeReason } from "./outcome-files.js";
import { isIgnoredName, isTicketName } from "./safe-file.js";

export const ORPHAN_TICKET_MS = 60 * 60 * 1000;

export async function parkOrphanTickets(
  f: UserFolders,
  now: number,
  logger: Logger,
  maxAgeMs = ORPHAN_TICKET_MS,
): Promise<number> {
  let parked = 0;
  const names = await readdir(f.root).catch(() => [] as string[]);
  const present = new Set(names);
  for (const name of names) {
    if (!isTicketName(name) || isIgnoredName(name)) continue;
    if (present.has(name.slice(0, -".json".length))) continue;
    const st = await lstat(path.join(f.root, name)).catch(() => null);
    if (!st?.isFile() || now - st.mtimeMs < maxAgeMs) continue;
    const target = await freeName(f.failed, name);
    await writeReason(
      f.failed,
      target,
      `the ticket ${name} waited ${Math.round((now - st.mtimeMs) / 60_000)} minutes without its document ${name.slice(0, -5)}; it was not used`,
    );
    await moveInto(path.join(f.root, name), f.failed, target);
    logger.warn({ user: f.user, file: name }, "REJECTED ticket without a document");
    parked += 1;
  }
  return parked;
}
