// smtp-server guesses an enhanced status code from the reply code alone (550 -> 5.1.1), which
// would contradict our own (550 5.7.1 relay denied). This subclass sends a reply whose text
// already starts with an enhanced code exactly as written, and reports every reply to a hook.
// It also bounds "junk" commands per session, which smtp-server does not: a client that only
// sends NOOP or RSET could otherwise hold a connection slot forever.
import type net from 'node:net';
import type tls from 'node:tls';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export type ReplyHook = (code: number, context: unknown) => void;

type Handler = (command: unknown, callback: () => void) => void;

interface Connection {
  send(code: number, data?: unknown, context?: unknown): void;
  [handler: string]: unknown;
}

export interface ExactReplyOptions {
  /** NOOP, RSET, VRFY and HELP allowed between two accepted messages (as Postfix's smtpd_junk_command_limit). */
  maxJunkCommands?: number;
}

const ENHANCED = /^[245]\.\d{1,3}\.\d{1,3} /;
const JUNK = ['handler_NOOP', 'handler_RSET', 'handler_VRFY', 'handler_HELP'];

export class ExactReplyServer extends SMTPServer {
  private readonly patched = new WeakSet<object>();

  constructor(
    options: SMTPServerOptions,
    private readonly onReply: ReplyHook,
    private readonly limits: ExactReplyOptions = {},
  ) {
    super(options);
  }

  override connect(socket: net.Socket | tls.TLSSocket, socketOptions?: Parameters<SMTPServer['connect']>[1]): void {
    super.connect(socket, socketOptions);
    // The connection just made is the last one in the (insertion-ordered) set.
    let last: Connection | undefined;
    for (const c of this.connections) last = c as unknown as Connection;
    if (!last || this.patched.has(last)) return;
    this.patched.add(last);
    const conn = last;
    const original = conn.send.bind(conn);
    const hook = this.onReply;
    let junk = 0;
    conn.send = (code: number, data?: unknown, context?: unknown): void => {
      // a message accepted: the client is doing real work, its junk allowance starts again
      if (context === 'DATA_OK') junk = 0;
      try {
        hook(code, context);
      } catch {
        // metrics never break a session
      }
      if (typeof data === 'string' && ENHANCED.test(data)) return original(code, data, false);
      return original(code, data, context);
    };
    const max = this.limits.maxJunkCommands;
    if (max === undefined) return;
    for (const name of JUNK) {
      const handler = conn[name];
      if (typeof handler !== 'function') continue;
      conn[name] = (command: unknown, callback: () => void): void => {
        junk += 1;
        // 421 makes smtp-server close the connection after the reply
        if (junk > max) return conn.send(421, '4.7.0 Too many NOOP, RSET, VRFY or HELP commands without a message, closing');
        (handler as Handler).call(conn, command, callback);
      };
    }
  }
}
