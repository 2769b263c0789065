// The one mail door (intake/mail-door.ts) that SMTP and every mailbox hand their messages to: the
// same limits, the same readers and converter, the same intake.partial, whichever way mail came.
// Its part opens it at start: incoming/ made, and the work folders a crash left there removed,
// also in a gateway that reads only mailboxes.
import { MailDoor } from "../intake/mail-door.js";
import type { Converters } from "./converters.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";

/** smtp.maxMessageBytes' default, for a daemon that reads mailboxes and has no smtp section. */
const DEFAULT_MAX_MESSAGE_BYTES = 26_214_400;
/** smtp.inlineImageMinBytes' default, likewise. */
const DEFAULT_INLINE_IMAGE_MIN_BYTES = 20_480;

export function createMailDoor(core: Core, conv: Converters): { mail: MailDoor; part: Part } {
  const { config } = core;
  const mail = new MailDoor({
    dataDir: config.data,
    maxMessageBytes: config.smtp?.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    store: core.store,
    log: core.logger.child({ component: "intake" }),
    metrics: core.metrics,
    readers: conv.readers,
    directory: core.directory,
    clock: core.clock,
    inlineImageMinBytes: config.smtp?.inlineImageMinBytes ?? DEFAULT_INLINE_IMAGE_MIN_BYTES,
    office: conv.convertQueue,
    partial: config.intake.partial,
  });
  return { mail, part: { name: "mail door", start: () => mail.open() } };
}
