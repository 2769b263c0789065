// FAXGATE_MAIL_COPY=FILE appends, for every mail handed over, one JSON line with what a reader
// sees (envelope, headers, subject, text and HTML bodies, attachment names) to FILE. The test
// suites set it and afterwards check the file for secrets, as they do the log copy.
import { appendFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import type { SendMailOptions } from "nodemailer";
import type { MailTransport } from "./mail-transport.js";

function textOf(v: SendMailOptions["text"]): string | null {
  if (typeof v === "string") return v;
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  return null;
}

function copyLine(mail: SendMailOptions, messageId: string): string {
  return JSON.stringify({
    at: new Date().toISOString(),
    messageId,
    from: mail.from,
    to: mail.to,
    cc: mail.cc,
    subject: mail.subject,
    headers: mail.headers,
    text: textOf(mail.text),
    html: textOf(mail.html as SendMailOptions["text"]),
    attachments: (mail.attachments ?? []).map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      // inline text attachments (an original message, a reason) are what a reader could see
      content: typeof a.content === "string" ? a.content : undefined,
    })),
  });
}

export function withMailCopy(transport: MailTransport, file = process.env.FAXGATE_MAIL_COPY): MailTransport {
  if (!file) return transport;
  mkdirSync(path.dirname(file), { recursive: true });
  return {
    async send(mail) {
      const result = await transport.send(mail);
      appendFileSync(file, `${copyLine(mail, result.messageId)}\n`);
      return result;
    },
    close: () => transport.close(),
  };
}
