// A spool job that fails for good after it was queued (busy line, bad number at the service)
// leaves its trace where the user looks: "<file>.reason.txt" in failed/, and the original
// moved there from done/. The mail about it is the notifier's; this is the folder's side.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describeError } from "../errors.js";
import { formatFaxNumber } from "../recipients/index.js";
import type { Logger } from "../log/index.js";
import type { QueueStore, Job } from "../store/index.js";
import { sha256Hex } from "../sha256.js";
import type { UserFolders } from "./folders.js";
import { moveInto, writeReason } from "./outcome-files.js";
import { withFolder } from "./safe-folder.js";

const MARKER = (id: string) => `spool:final:${id}`;

export function failureText(job: Job): string {
  const lines = [`The fax job ${job.id} for this file ended as ${job.state}.`, ""];
  for (const r of job.recipients) {
    const who = `${r.name ? `${r.name} ` : ""}${formatFaxNumber(r.number)}`;
    const why = r.errorInfo ?? r.resultInfo ?? r.lastError ?? r.errorCode ?? r.resultCode ?? "";
    lines.push(`${who}: ${r.state}${why ? ` (${why})` : ""}`);
  }
  return lines.join("\n");
}

/** Looks in done/ for the file a job came from, by its name (or "name (n)") and content hash. */
async function findInDone(done: string, name: string, sha: string | undefined): Promise<string | null> {
  if (!sha) return null;
  const dot = name.lastIndexOf(".");
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const candidates = (await readdir(done).catch(() => [] as string[])).filter(
    (n) => n === name || n.startsWith(`${stem} (`),
  );
  for (const c of candidates) {
    if (c.endsWith(".json")) continue;
    const data = await readFile(path.join(done, c)).catch(() => null);
    if (data && sha256Hex(data) === sha) return c;
  }
  return null;
}

export async function sweepFailedJobs(
  store: QueueStore,
  foldersOf: (user: string) => UserFolders | null,
  logger: Logger,
): Promise<number> {
  let handled = 0;
  for (const state of ["failed", "partial"] as const) {
    for (const job of await store.listJobs({ source: "spool", state, limit: 1000 })) {
      if (await store.getState(MARKER(job.id))) continue;
      const f = foldersOf(job.user);
      const name = job.meta.origin?.file;
      if (!f || !name || job.meta.origin?.folder !== path.basename(f.root)) {
        await store.setState(MARKER(job.id), "no-folder");
        continue;
      }
      try {
        let fileName = name;
        if (state === "failed") {
          // done/ is read and moved from through its checked descriptor, never through a link.
          fileName = await withFolder(f.done, async (done) => {
            const inDone = await findInDone(done, name, job.meta.origin?.sha256);
            return inDone ? path.basename(await moveInto(path.join(done, inDone), f.failed, name)) : fileName;
          });
        }
        await writeReason(f.failed, fileName, failureText(job));
        await store.setState(MARKER(job.id), state);
        logger.info({ job: job.id, user: job.user, file: fileName }, "FAILED spool job recorded in failed/");
        handled += 1;
      } catch (err) {
        logger.warn({ job: job.id, err: describeError(err) }, "could not record a failed spool job");
      }
    }
  }
  return handled;
}
