// The reply sheet of a queued job, as a file the send uploads after the job's documents. Made
// once per job (every attempt and every recipient gets the same signed code) in the data folder's
// reply-sheets/; the key is read on first use.
import { mkdir, rename, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { encodeReplyCode } from "./reply-code.js";
import { loadReplyKey } from "./reply-key.js";
import { replySheetPage } from "./reply-page.js";

export interface ReplySheetFile {
  path: string;
  name: string;
  contentType: string;
}

export class ReplySheets {
  private key: Promise<Buffer> | null = null;

  constructor(private readonly opts: { dataDir: string; configured?: string }) {}

  async fileFor(job: { id: string; user: string }): Promise<ReplySheetFile> {
    const dir = path.join(this.opts.dataDir, "reply-sheets");
    // job ids are the store's own (no path characters), checked anyway: the name is a path
    const file = path.join(dir, `${job.id.replace(/[^A-Za-z0-9_-]/g, "_")}.pdf`);
    const made = await stat(file).then(
      (s) => s.size > 0,
      () => false,
    );
    if (!made) {
      this.key ??= loadReplyKey({ dataDir: this.opts.dataDir, configured: this.opts.configured });
      const code = encodeReplyCode(await this.key, { jobId: job.id, owner: job.user });
      await mkdir(dir, { recursive: true });
      await writeFile(`${file}.tmp`, await replySheetPage(code, { reference: job.id }), { mode: 0o600 });
      await rename(`${file}.tmp`, file);
    }
    return { path: file, name: "reply-sheet.pdf", contentType: "application/pdf" };
  }
}
