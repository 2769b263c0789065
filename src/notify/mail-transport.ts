// What the notifier hands its mail to. The implementations (smtp-transport.ts, outbox-transport.ts,
// the copy wrapper in mail-copy.ts) import only this file; the factory that picks one from the
// config is transport.ts, so no implementation imports the module that imports it.
import type { SendMailOptions } from "nodemailer";

export type { SendMailOptions };

/** send() resolves once the mail is handed over for good (accepted by the relay, or fsynced and renamed into the outbox). */
export interface MailTransport {
  send(mail: SendMailOptions): Promise<{ messageId: string }>;
  close(): void;
}
