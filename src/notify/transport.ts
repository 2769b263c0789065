// Where notification mail goes: a smarthost over SMTP (smtp://, smtps://, optional user:pass in
// the URL) or an outbox folder of .eml files (sandbox, air-gapped sites, tests). The notifier
// only sees MailTransport, so both behave the same to it: send() resolves once the mail is
// handed over for good (accepted by the relay, or fsynced and renamed into the outbox).
import type { SendMailOptions } from 'nodemailer';
import { FaxgateError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { withMailCopy } from './mail-copy.js';
import { OutboxTransport } from './outbox-transport.js';
import { maskUrl, SmtpRelayTransport } from './smtp-transport.js';

export { maskUrl };

export type { SendMailOptions };

export interface MailTransport {
  send(mail: SendMailOptions): Promise<{ messageId: string }>;
  close(): void;
}

/** `smtp://host:port`, `smtps://user:pass@host:port` (query options as nodemailer reads them), or `outbox:DIR`. */
export function createTransport(spec: string, logger: Logger): MailTransport {
  if (spec.startsWith('outbox:')) {
    const dir = spec.slice('outbox:'.length);
    if (!dir) throw new FaxgateError('CONFIG_INVALID', 'notify.transport "outbox:" needs a folder, e.g. outbox:/var/lib/faxgate/outbox', { field: 'notify.transport' });
    return withMailCopy(new OutboxTransport(dir));
  }
  if (/^smtps?:\/\//i.test(spec)) return withMailCopy(new SmtpRelayTransport(spec, logger));
  throw new FaxgateError('CONFIG_INVALID', `notify.transport must be smtp://, smtps:// or outbox:DIR, not "${maskUrl(spec)}"`, { field: 'notify.transport' });
}
