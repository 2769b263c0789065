// The SMTP receiver: listens on smtp.listen. It reads the live users, so a reload applies from
// the next MAIL FROM (open sessions stay up); a reload also gives it a renewed certificate. At
// stop it answers 421 and lets sessions finish for a few seconds.
import { makeResolver } from "../dns/index.js";
import type { MailDoor } from "../intake/index.js";
import { SmtpGateway } from "../smtp/index.js";
import type { Core } from "./core.js";
import type { Part } from "./part.js";
import { childLog } from "../log/index.js";

export function createSmtp(core: Core, mail: MailDoor): { smtp: SmtpGateway | null; part: Part } {
  const { config, live, addresses } = core;
  if (!config.smtp) return { smtp: null, part: { name: "smtp" } };
  const smtp = new SmtpGateway({
    mail,
    ledger: core.ledger,
    clock: core.clock,
    metrics: core.metrics,
    destinations: core.destinations,
    smtp: config.smtp,
    users: () => live.users(),
    leaver: (login) => live.leaver(login),
    resolve: makeResolver(config.dns),
    clientFor: (user) => core.api.clientFor(user, "intake"),
    counters: core.counters,
    logger: core.refusals.tap(childLog(core.logger, { component: "smtp" }), "smtp"),
  });
  const part: Part = {
    name: "smtp",
    start: async () => {
      addresses.smtp = await smtp.listen();
    },
    stop: (left) => smtp.close({ timeoutMs: Math.min(5000, left()) }),
    checks: () => ({
      smtp: { ok: addresses.smtp.length > 0, detail: addresses.smtp.map((a) => `${a.host}:${a.port}`).join(" ") },
    }),
  };
  return { smtp, part };
}
