// Where notification mail goes: a smarthost over SMTP (smtp://, smtps://, optional user:pass in
// the URL) or an outbox folder of .eml files (sandbox, air-gapped sites, tests). The notifier
// only sees MailTransport (mail-transport.ts), so both behave the same to it. This file only
// picks one from the config.
import { FaxgateError } from "../errors.js";
import type { Logger } from "../log/index.js";
import { withMailCopy } from "./mail-copy.js";
import type { MailTransport } from "./mail-transport.js";
import { OutboxTransport } from "./outbox-transport.js";
import { maskUrl, SmtpRelayTransport } from "./smtp-transport.js";

export { maskUrl };

export type { MailTransport, SendMailOptions } from "./mail-transport.js";

/** `smtp://host:port`, `smtps://user:pass@host:port` (query options as nodemailer reads them), or `outbox:DIR`. */
export function createTransport(spec: string, logger: Logger): MailTransport {
  if (spec.startsWith("outbox:")) {
    const dir = spec.slice("outbox:".length);
    if (!dir)
      throw new FaxgateError(
        "CONFIG_INVALID",
        'notify.transport "outbox:" needs a folder, e.g. outbox:/var/lib/faxgate/outbox',
        { field: "notify.transport" },
      );
    return withMailCopy(new OutboxTransport(dir));
  }
  if (/^smtps?:\/\//i.test(spec)) return withMailCopy(new SmtpRelayTransport(spec, logger));
  throw new FaxgateError(
    "CONFIG_INVALID",
    `notify.transport must be smtp://, smtps:// or outbox:DIR, not "${maskUrl(spec)}"`,
    { field: "notify.transport" },
  );
}
