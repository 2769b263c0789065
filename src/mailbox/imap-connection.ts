// How faxgate reaches a configured mailbox: the sign-in (a password, or an OAuth2 token a command
// prints) and the IMAP client's connection settings. The intake and `faxgate doctor` both use it,
// so doctor tries exactly what the daemon will do.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { ImapFlow, type ImapFlowOptions } from "imapflow";
import type { MailboxConfig } from "../config/index.js";

const TOKEN_TIMEOUT_MS = 30_000;

export type MailboxCredentials = { user: string; pass?: string; accessToken?: string };

/** The password, or the access token the mailbox's tokenCommand prints (run before each connection). */
export async function mailboxCredentials(m: MailboxConfig): Promise<MailboxCredentials> {
  if (m.password !== undefined) return { user: m.user, pass: m.password };
  const token = await new Promise<string>((resolve, reject) => {
    execFile("/bin/sh", ["-c", m.tokenCommand!], { timeout: TOKEN_TIMEOUT_MS, maxBuffer: 64 * 1024 }, (err, stdout) => {
      // the command's output is a secret: never in the error
      if (err) reject(new Error(`the token command failed (${(err as NodeJS.ErrnoException).code ?? "exit"})`));
      else resolve(stdout.trim());
    });
  });
  if (!token) throw new Error("the token command printed nothing");
  return { user: m.user, accessToken: token };
}

/** An IMAP client for the mailbox, not yet connected; `more` adds the caller's timeouts and limits. */
export function imapClient(m: MailboxConfig, auth: MailboxCredentials, more: Partial<ImapFlowOptions> = {}): ImapFlow {
  return new ImapFlow({
    host: m.host,
    port: m.port,
    secure: m.tls === "implicit",
    doSTARTTLS: m.tls === "starttls" ? true : m.tls === "off" ? false : undefined,
    ...(m.caFile ? { tls: { ca: readFileSync(m.caFile) } } : {}),
    auth,
    logger: false,
    ...more,
  });
}
