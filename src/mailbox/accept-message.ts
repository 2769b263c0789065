// A mailbox message through the mail door (intake/accept-mail.ts), as SMTP hands one over after
// DATA: the message's bytes, its checked user and numbers; the job keeps the mailbox's own dedupe
// key, so the same message found again after a crash is the same job.
import { createHash } from "node:crypto";
import path from "node:path";
import type { MailBodyMode } from "../config/schema.js";
import { acceptMail, type MailAcceptDeps } from "../intake/accept-mail.js";
import { WorkDir } from "../intake/mail/incoming-file.js";
import type { MailboxMessage } from "./mailbox-intake.js";

export function mailboxDoor(
  deps: MailAcceptDeps,
  incomingDir: string,
  bodyMode: (user: string) => MailBodyMode | undefined,
) {
  return async (msg: MailboxMessage): Promise<{ jobId: string; duplicate: boolean }> => {
    const workDir = WorkDir.forMessage(incomingDir);
    try {
      const mode = bodyMode(msg.user);
      const { job, duplicate } = await acceptMail(deps, {
        user: msg.user,
        envelopeFrom: msg.from,
        recipients: msg.recipients,
        messageFile: path.join(workDir.path, "message.eml"),
        messageData: msg.source,
        workDir,
        sha256: createHash("sha256").update(msg.source).digest("hex"),
        source: "imap",
        dedupeKey: msg.dedupeKey,
        senderCheck: msg.senderCheck,
        ...(mode ? { bodyMode: mode } : {}),
      });
      return { jobId: job.id, duplicate };
    } finally {
      await workDir.remove();
    }
  };
}
