// One watcher per configured mailbox (imap.mailboxes): mail fetched over IMAP goes through the
// same door into the queue as mail over SMTP (parts/mail-door.ts), with the SMTP limits unless the
// mailbox sets its own.
import { senderAuthOff, smtpSettings } from "../config/index.js";
import { makeResolver } from "../dns/index.js";
import { confirmsNewDestinations, type MailDoor } from "../intake/index.js";
import { mailboxDoor, MailboxIntake } from "../mailbox/index.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";
import { childLog } from "../log/index.js";

export function createMailboxes(core: Core, mail: MailDoor): Part {
  const { config, live } = core;
  const mailboxes = config.imap?.mailboxes ?? [];
  const log = childLog(core.logger, { component: "imap" });
  const door = mailboxDoor(
    mail,
    (name) => live.users().find((u) => u.name === name)?.mailBody ?? config.smtp?.body,
    log,
    (name, from) =>
      confirmsNewDestinations(
        live.config().smtp?.senderAuth ?? senderAuthOff(),
        live.users().find((u) => u.name === name),
        from.slice(from.lastIndexOf("@") + 1),
      ),
  );
  // the mailboxes' own DKIM checks (mailbox/signed-mailbox.ts), with the resolvers SMTP uses
  const resolve = makeResolver(config.dns);
  const intakes = mailboxes.map(
    (mailbox) =>
      new MailboxIntake({
        mailbox,
        users: () => live.users(),
        leaver: (login) => live.leaver(login),
        store: core.store,
        clientFor: (user) => core.api.clientFor(user),
        destinations: core.destinations,
        defaultCountryCode: () => smtpSettings(live.config()).defaultCountryCode,
        maxRecipients: smtpSettings(config).maxRecipients,
        maxMessageBytes: mailbox.maxMessageBytes ?? smtpSettings(config).maxMessageBytes,
        accept: door,
        signed: {
          resolve,
          senderAuth: () => smtpSettings(live.config()).senderAuth,
          now: () => core.clock.now(),
        },
        logger: core.refusals.tap(log, "imap"),
      }),
  );
  return {
    name: "imap",
    start: () => {
      for (const m of intakes) m.start();
    },
    stop: async () => {
      await Promise.all(intakes.map((m) => m.stop()));
    },
    checks: () =>
      Object.fromEntries(
        intakes.map((m) => [
          `imap ${m.name}`,
          { ok: m.isConnected, detail: m.isConnected ? "connected" : "not connected" },
        ]),
      ),
  };
}
