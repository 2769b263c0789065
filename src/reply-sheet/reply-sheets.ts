// The reply sheet of a queued job, as a file the send uploads after the job's documents. Made
// once per job (every attempt and every recipient gets the same signed code) in the job's own
// folder of the store, so it goes when the job's files go: retention's purge, held while the job
// is under a legal hold (the one rule for every copy). A copy lost with a cache is made again:
// the code is the same for the same job and key. A sheet of someone who answers for exactly one
// group inbox names that group (signed): the reply lands in the group's inbox, so the group sees
// it, and still finds a home when the person has left.
import { mkdir, rename, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { encodeReplyCode } from "./reply-code.js";
import { replySheetPage } from "./reply-page.js";

export interface ReplySheetFile {
  path: string;
  name: string;
  contentType: string;
}

export const REPLY_SHEET_NAME = "reply-sheet.pdf";

export class ReplySheets {
  constructor(
    private readonly opts: {
      /** the fleet's signing key (reply-key.ts loadReplyKey, loaded once by the caller) */
      key: () => Promise<Buffer>;
      /** the store's folder of the job's files (QueueStore.jobFilesDir) */
      dirOf: (jobId: string) => string;
      /** the one group inbox (inbound.groups) the user answers for, or undefined (none, or several) */
      groupOf: (user: string) => string | undefined;
    },
  ) {}

  async fileFor(job: { id: string; user: string }): Promise<ReplySheetFile> {
    // job ids are the store's own (no path characters), checked anyway: the name is a path
    if (!/^[A-Za-z0-9_-]+$/.test(job.id)) throw new Error("a job id with characters a file name may not hold");
    const dir = this.opts.dirOf(job.id);
    const file = path.join(dir, REPLY_SHEET_NAME);
    const made = await stat(file).then(
      (s) => s.size > 0,
      () => false,
    );
    if (!made) {
      const group = this.opts.groupOf(job.user);
      const code = encodeReplyCode(await this.opts.key(), { jobId: job.id, owner: job.user, group });
      await mkdir(dir, { recursive: true, mode: 0o750 });
      await writeFile(`${file}.tmp`, await replySheetPage(code, { reference: job.id }), { mode: 0o600 });
      await rename(`${file}.tmp`, file);
    }
    return { path: file, name: "reply-sheet.pdf", contentType: "application/pdf" };
  }
}
