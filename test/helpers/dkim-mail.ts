// Mail as a hosted mail service sends it: composed and DKIM-signed by nodemailer, then sent over
// real SMTP from a chosen loopback address (127.0.0.x), so that the receiver's SPF check decides
// by that address. Used by the sender-auth tests, the fault suite and the bench.
import { generateKeyPairSync } from "node:crypto";
import nodemailer from "nodemailer";
import type SMTPTransport from "nodemailer/lib/smtp-transport/index.js";

export interface DkimKey {
  privateKey: string;
  /** the TXT record to publish at <selector>._domainkey.<domain> */
  record: string;
}

export function dkimKey(bits = 1024): DkimKey {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: bits });
  const der = publicKey.export({ type: "spki", format: "der" }).toString("base64");
  return {
    privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    record: `v=DKIM1; k=rsa; p=${der}`,
  };
}

export interface Outgoing {
  /** envelope sender */
  from: string;
  to: string;
  /** From: header (default: the envelope sender) */
  headerFrom?: string;
  /** the source address of the connection */
  ip: string;
  sign?: {
    domain: string;
    key: string;
    selector?: string;
    /** the fields signed (h=), e.g. Microsoft 365's "from:date:subject:message-id"; default nodemailer's (To and Cc among them) */
    headerFieldNames?: string;
  };
  /** envelope recipients (default: `to`) */
  rcpt?: string[];
  /** To: header (default: `to`) and Cc: */
  headerTo?: string | string[];
  cc?: string | string[];
  /** the Date: header (default: now) */
  date?: Date;
  /** change the body after signing */
  tamper?: boolean;
  extraHeaders?: Record<string, string | string[]>;
  attachments?: Array<{ filename: string; content: Buffer; contentType?: string }>;
  subject?: string;
}

/** The message as nodemailer writes (and signs) it. */
export async function composeSigned(m: Outgoing): Promise<Buffer> {
  const t = nodemailer.createTransport({
    streamTransport: true,
    buffer: true,
    ...(m.sign
      ? {
          dkim: {
            domainName: m.sign.domain,
            keySelector: m.sign.selector ?? "sel",
            privateKey: m.sign.key,
            ...(m.sign.headerFieldNames ? { headerFieldNames: m.sign.headerFieldNames } : {}),
          },
        }
      : {}),
  });
  const info = await t.sendMail({
    from: m.headerFrom ?? m.from,
    to: m.headerTo ?? m.to,
    ...(m.cc ? { cc: m.cc } : {}),
    ...(m.date ? { date: m.date } : {}),
    subject: m.subject ?? "verified fax",
    text: "Please fax the attached page.",
    headers: m.extraHeaders ?? {},
    attachments: m.attachments ?? [],
  });
  let raw = info.message as Buffer;
  // a body changed after signing: what a careless forwarder (or a forger) does
  if (m.tamper) raw = Buffer.from(raw.toString("latin1").replace("Please fax", "Please FAX"), "latin1");
  return raw;
}

/** Sends over real SMTP from `m.ip`: the server's final reply (250 ... or the refusal). */
export async function sendFrom(port: number, m: Outgoing, raw?: Buffer): Promise<string> {
  const message = raw ?? (await composeSigned(m));
  const t = nodemailer.createTransport({
    host: "127.0.0.1",
    port,
    secure: false,
    ignoreTLS: true,
    localAddress: m.ip,
    name: "mail.sender.test",
  } as SMTPTransport.Options);
  try {
    const info = await t.sendMail({ envelope: { from: m.from, to: m.rcpt ?? [m.to] }, raw: message });
    return info.response;
  } catch (err) {
    return String((err as { response?: string }).response ?? (err as Error).message);
  } finally {
    t.close();
  }
}
