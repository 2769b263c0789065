// A bare SMTP client for saying exactly what a hostile or broken client says (nodemailer would
// refuse to send most of it). One command at a time, one (possibly multi-line) reply each.
import net from "node:net";

export class RawSmtp {
  private buf = "";
  private waiters: Array<() => void> = [];
  closed = false;

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding("latin1");
    socket.on("data", (d: string) => {
      this.buf += d;
      this.wake();
    });
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
    socket.on("error", () => {
      this.closed = true;
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  static async connect(
    port: number,
    host = "127.0.0.1",
    localAddress?: string,
  ): Promise<{ client: RawSmtp; banner: string }> {
    const socket = net.connect({ port, host, ...(localAddress ? { localAddress } : {}) });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    const client = new RawSmtp(socket);
    return { client, banner: await client.reply() };
  }

  /** The next complete reply ("250-a\r\n250 b\r\n" is one), or "" if the server closed. */
  async reply(timeoutMs = 15_000): Promise<string> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const m = /^(?:\d{3}-[^\n]*\n)*\d{3}(?: [^\n]*)?\n/.exec(this.buf);
      if (m) {
        this.buf = this.buf.slice(m[0].length);
        return m[0].trimEnd();
      }
      if (this.closed) return "";
      if (Date.now() > until)
        throw new Error(`no SMTP reply in ${timeoutMs} ms (got ${JSON.stringify(this.buf.slice(0, 200))})`);
      // woken by data or close; the timer only ends the wait at the bound (no 100 ms polling)
      await new Promise<void>((resolve) => {
        const bound = setTimeout(resolve, until - Date.now() + 1);
        this.waiters.push(() => {
          clearTimeout(bound);
          resolve();
        });
      });
    }
  }

  async cmd(line: string): Promise<string> {
    this.socket.write(`${line}\r\n`);
    return this.reply();
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** A complete conversation up to DATA's reply; returns every reply in order. */
export async function converse(port: number, from: string, rcpts: string[], message: string | null): Promise<string[]> {
  const { client, banner } = await RawSmtp.connect(port);
  const replies = [banner, await client.cmd("EHLO tester.example")];
  try {
    replies.push(await client.cmd(`MAIL FROM:<${from}>`));
    for (const r of rcpts) replies.push(await client.cmd(`RCPT TO:<${r}>`));
    if (message !== null) {
      const data = await client.cmd("DATA");
      replies.push(data);
      if (data.startsWith("354")) {
        client.write(`${message.replace(/\r?\n/g, "\r\n").replace(/^\./gm, "..")}\r\n.\r\n`);
        replies.push(await client.reply(60_000));
      }
    }
    replies.push(await client.cmd("QUIT"));
  } finally {
    client.close();
  }
  return replies;
}
