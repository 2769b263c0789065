// A session that has had no message accepted for smtp.idleSessionMs is closed, whatever it sends
// (issue 36 item 5): NOOPs and RSETs reset smtp-server's socket timeout, so without this a client
// could hold a slot for maxJunkCommands times socketTimeoutMs. Sessions are found by their
// socket's address and port, watched through the listening server's own 'connection' event.
import type net from "node:net";

const keyOf = (address: string | undefined, port: number | undefined): string => `${address ?? ""}|${port ?? 0}`;

export class SessionLife {
  private readonly sockets = new Map<string, net.Socket>();
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; key: string; busy: boolean; expired: boolean }>();

  constructor(
    private readonly lifeMs: number,
    private readonly onExpire: (sessionId: string) => void,
  ) {}

  /** Follows the sockets of one listening server. */
  watch(server: net.Server): void {
    server.on("connection", (socket: net.Socket) => {
      const key = keyOf(socket.remoteAddress, socket.remotePort);
      this.sockets.set(key, socket);
      socket.once("close", () => {
        if (this.sockets.get(key) === socket) this.sockets.delete(key);
      });
    });
  }

  /** A session began (or a message was accepted): its life starts again. */
  start(sessionId: string, remoteAddress: string | undefined, remotePort: number | undefined): void {
    this.stop(sessionId);
    const entry = {
      key: keyOf(remoteAddress, remotePort),
      busy: false,
      expired: false,
      timer: setTimeout(() => this.expire(sessionId), this.lifeMs),
    };
    entry.timer.unref();
    this.timers.set(sessionId, entry);
  }

  /** A message is being received: it is not cut off in the middle (the socket timeout bounds it). */
  busy(sessionId: string, busy: boolean): void {
    const e = this.timers.get(sessionId);
    if (!e) return;
    e.busy = busy;
    if (!busy && e.expired) this.expire(sessionId);
  }

  stop(sessionId: string): void {
    const e = this.timers.get(sessionId);
    if (e) clearTimeout(e.timer);
    this.timers.delete(sessionId);
  }

  private expire(sessionId: string): void {
    const e = this.timers.get(sessionId);
    if (!e) return;
    if (e.busy) {
      e.expired = true;
      return;
    }
    this.timers.delete(sessionId);
    const socket = this.sockets.get(e.key);
    this.onExpire(sessionId);
    if (!socket || socket.destroyed) return;
    // Told in plain text only while the session is plain; after STARTTLS this socket carries TLS
    // records, and a plain line would garble them: the close says enough then.
    if (!this.upgraded(socket))
      socket.end(`421 4.4.2 No message in ${Math.round(this.lifeMs / 1000)} s, closing the session\r\n`);
    else socket.end();
    setTimeout(() => socket.destroy(), 2000).unref();
  }

  private readonly upgradedSockets = new WeakSet<net.Socket>();

  /** Marks a session's socket as carrying TLS now (STARTTLS done). */
  secured(remoteAddress: string | undefined, remotePort: number | undefined): void {
    const s = this.sockets.get(keyOf(remoteAddress, remotePort));
    if (s) this.upgradedSockets.add(s);
  }

  private upgraded(socket: net.Socket): boolean {
    return this.upgradedSockets.has(socket);
  }
}
