// Notification mail through a smarthost. One connection per mail: notifications are few, and a
// fresh connection means a relay that went away and came back needs no pool recovery.
import nodemailer, { type SendMailOptions, type Transporter } from "nodemailer";
import { maskUrl } from "../config/index.js";
import { FaxgateError } from "../errors.js";
import type { Logger } from "../log/index.js";
import type { MailTransport } from "./mail-transport.js";

export class SmtpRelayTransport implements MailTransport {
  private readonly transporter: Transporter;
  readonly description: string;

  constructor(url: string, logger: Logger) {
    this.description = maskUrl(url);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch (err) {
      throw new FaxgateError("CONFIG_INVALID", `notify.transport is not a valid URL: ${this.description}`, {
        field: "notify.transport",
        cause: err,
      });
    }
    if (!parsed.hostname)
      throw new FaxgateError("CONFIG_INVALID", `notify.transport names no host: ${this.description}`, {
        field: "notify.transport",
      });
    // nodemailer reads host, port, secure, auth and `?tls.x=y` options from the URL itself;
    // its own logger stays off because it would print the AUTH exchange.
    // Timeouts shorter than nodemailer's minutes-long defaults: a hung relay defers the mail.
    this.transporter = nodemailer.createTransport({
      url,
      connectionTimeout: 30_000,
      greetingTimeout: 30_000,
      socketTimeout: 120_000,
    });
    this.transporter.set("logger", false);
    logger.debug({ transport: this.description }, "notification relay configured");
  }

  async send(mail: SendMailOptions): Promise<{ messageId: string }> {
    const info = await this.transporter.sendMail(mail);
    return { messageId: info.messageId };
  }

  close(): void {
    this.transporter.close();
  }
}

/** The transport spec with any password replaced, for logs and error messages. */
export { maskUrl };
