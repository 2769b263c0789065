// Notification mail as .eml files in a folder. The file is written under a temp name, fsynced and
// renamed, so a reader never sees half a message. Its name comes from the Message-ID, so a retry
// of the same notification (after a crash between writing and recording) replaces the file
// instead of adding a second one.
import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import nodemailer, { type SendMailOptions } from "nodemailer";
import { replaceFile } from "../fs/index.js";
import type { MailTransport } from "./mail-transport.js";
import { sha256Hex } from "../sha256.js";

export class OutboxTransport implements MailTransport {
  readonly dir: string;
  private readonly composer = nodemailer.createTransport({ streamTransport: true, buffer: false, newline: "unix" });

  constructor(dir: string) {
    this.dir = path.resolve(dir);
  }

  async send(mail: SendMailOptions): Promise<{ messageId: string }> {
    await mkdir(this.dir, { recursive: true, mode: 0o750 });
    const info = await this.composer.sendMail(mail);
    const name = `${fileStem(info.messageId)}.eml`;
    await replaceFile(path.join(this.dir, name), (tmp) =>
      pipeline(info.message as Readable, createWriteStream(tmp, { flags: "wx", mode: 0o640 })),
    );
    return { messageId: info.messageId };
  }

  close(): void {}
}

/** A safe file name from a Message-ID: its readable characters, plus a hash when any were dropped. */
export function fileStem(messageId: string): string {
  const inner = messageId.replace(/^<|>$/g, "");
  const safe = inner.replace(/[^A-Za-z0-9._@-]/g, "_").slice(0, 150);
  if (safe === inner && safe.length > 0 && !safe.startsWith(".")) return safe;
  return `${safe.replace(/^\.+/, "") || "mail"}-${sha256Hex(messageId).slice(0, 8)}`;
}
