// A mailbox message through the mail door (intake/mail-door.ts), as SMTP hands one over after
// DATA: the message's bytes, its checked user and numbers; the job keeps the mailbox's own dedupe
// key, so the same message found again after a crash is the same job.
import type { MailBodyMode } from "../config/index.js";
import type { MailDoor } from "../intake/index.js";
import { childLog, type Logger } from "../log/index.js";
import type { MailboxMessage } from "./mailbox-intake.js";

/**
 * `confirmNew`: whether this user's mail from this address asks before a first fax to a new
 * number (intake/confirm-new.ts): a mailbox's recipients are not proved unless a signature covers To/Cc.
 */
export function mailboxDoor(
  door: MailDoor,
  bodyMode: (user: string) => MailBodyMode | undefined,
  log?: Logger,
  confirmNew: (user: string, from: string) => boolean = () => false,
) {
  return async (msg: MailboxMessage): Promise<{ jobId: string; duplicate: boolean }> => {
    const mode = bodyMode(msg.user);
    const { job, duplicate } = await door.accept(
      {
        user: msg.user,
        from: msg.from,
        recipients: msg.recipients,
        source: "imap",
        dedupeKey: msg.dedupeKey,
        senderCheck: msg.senderCheck,
        ...(mode ? { bodyMode: mode } : {}),
        ...(confirmNew(msg.user, msg.from) ? { confirmNewDestinations: true } : {}),
      },
      msg.source,
      {
        ...(log ? { log: childLog(log, { user: msg.user }) } : {}),
        // the signed message's use is recorded by the door, before the job (mail-auth/replay.ts)
        vet: async () => ({
          recipientsProved: msg.recipientsProved,
          ...(msg.replay.keys.length ? { replay: msg.replay } : {}),
        }),
      },
    );
    return { jobId: job.id, duplicate };
  };
}
