// The one mail door (intake/mail-door.ts) that SMTP and every mailbox hand their messages to: the
// same limits, the same readers and converter, the same intake.partial, whichever way mail came.
// Its part opens it at start: incoming/ made, and the work folders a crash left there removed,
// also in a gateway that reads only mailboxes.
import { senderAuthOff, smtpSettings } from "../config/index.js";
import { ConfirmExpiry, MailDoor } from "../intake/index.js";
import type { Converters } from "./converters.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";
import { childLog } from "../log/index.js";

export function createMailDoor(
  core: Core,
  conv: Converters,
): { mail: MailDoor; part: Part; confirmExpiry: ConfirmExpiry; expiryPart: Part } {
  const { config } = core;
  const smtp = smtpSettings(config);
  const mail = new MailDoor({
    dataDir: config.data,
    maxMessageBytes: smtp.maxMessageBytes,
    maxMessageAgeHours: smtp.senderAuth.maxMessageAgeHours,
    store: core.store,
    ledger: core.ledger,
    log: childLog(core.logger, { component: "intake" }),
    metrics: core.metrics,
    pressure: core.pressure,
    readers: conv.readers,
    directory: core.directory,
    clock: core.clock,
    inlineImageMinBytes: smtp.inlineImageMinBytes,
    office: conv.convertQueue,
    partial: config.intake.partial,
  });
  // faxes to new numbers that wait for their owner's click (intake/confirm-new.ts) end unconfirmed
  const confirmExpiry = new ConfirmExpiry({
    store: core.store,
    clock: core.clock,
    logger: childLog(core.logger, { component: "intake" }),
    waitMs: (config.smtp?.senderAuth ?? senderAuthOff()).confirmWait,
  });
  return {
    mail,
    part: { name: "mail door", start: () => mail.open() },
    confirmExpiry,
    expiryPart: { name: "confirmation expiry", start: () => confirmExpiry.start(), stop: () => confirmExpiry.stop() },
  };
}
