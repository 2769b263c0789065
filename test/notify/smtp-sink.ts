// A real SMTP server on 127.0.0.1:0 that keeps every message it receives, parsed by mailparser:
// the smarthost that notification mail goes to in these tests. It can be stopped and started
// again on the same port to play a relay that is down for a while.
import type { AddressInfo } from "node:net";
import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  envelope: { from: string; to: string[] };
  raw: Buffer;
  parsed: ParsedMail;
}

export interface SinkOptions {
  /** Require AUTH PLAIN/LOGIN with these credentials. */
  auth?: { user: string; pass: string };
  /** Implicit TLS from the first byte (smtps://) with this key and certificate. */
  tls?: { key: string; cert: string };
}

export class SmtpSink {
  readonly messages: ReceivedMail[] = [];
  port = 0;
  private server: SMTPServer | null = null;
  private waiters: Array<() => void> = [];

  constructor(private readonly opts: SinkOptions = {}) {}

  get url(): string {
    const auth = this.opts.auth
      ? `${encodeURIComponent(this.opts.auth.user)}:${encodeURIComponent(this.opts.auth.pass)}@`
      : "";
    return `${this.opts.tls ? "smtps" : "smtp"}://${auth}127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const auth = this.opts.auth;
    const server = new SMTPServer({
      ...(this.opts.tls ? { secure: true, key: this.opts.tls.key, cert: this.opts.tls.cert } : {}),
      disabledCommands: auth ? ["STARTTLS"] : ["STARTTLS", "AUTH"],
      allowInsecureAuth: true,
      authOptional: !auth,
      logger: false,
      onAuth(a, _session, cb) {
        if (auth && a.username === auth.user && a.password === auth.pass) cb(null, { user: a.username });
        else cb(new Error("Invalid username or password"));
      },
      onData: (stream, session, cb) => {
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => {
          const raw = Buffer.concat(chunks);
          simpleParser(raw)
            .then((parsed) => {
              this.messages.push({
                envelope: {
                  from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
                  to: session.envelope.rcptTo.map((r) => r.address),
                },
                raw,
                parsed,
              });
              for (const w of this.waiters.splice(0)) w();
              cb();
            })
            .catch(cb);
        });
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.port = (server.server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** Resolves once at least `n` messages have arrived (the test's own timeout bounds it). */
  async waitFor(n: number): Promise<ReceivedMail[]> {
    while (this.messages.length < n) await new Promise<void>((r) => this.waiters.push(r));
    return this.messages;
  }
}
