// smtp-server guesses an enhanced status code from the reply code alone (550 -> 5.1.1), which
// would contradict our own (550 5.7.1 relay denied). This subclass sends a reply whose text
// already starts with an enhanced code exactly as written, and reports every reply to a hook.
// It also bounds "junk" commands per session, which smtp-server does not: a client that only
// sends NOOP or RSET could otherwise hold a connection slot forever. And it sets the pause before
// the greeting per client: smtp-server waits a fixed 100 ms on every connection to catch clients
// that talk first (421 "You talk too soon"); here that pause is the caller's choice per address.
// These reach into SMTPConnection (send, the handlers, connectionReady): smtp-server is pinned to
// an exact version, and test/smtp/exact-reply-server.test.ts fails on an upgrade that moves them.
import type net from 'node:net';
import type tls from 'node:tls';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { installDataScan } from './data-scan.js';

export type ReplyHook = (code: number, context: unknown) => void;

type Handler = (command: unknown, callback: () => void) => void;

interface Connection {
  send(code: number, data?: unknown, context?: unknown): void;
  connectionReady(next?: () => void): void;
  remoteAddress: string;
  [handler: string]: unknown;
}

export interface ExactReplyOptions {
  /** NOOP, RSET, VRFY and HELP allowed between two accepted messages (as Postfix's smtpd_junk_command_limit). */
  maxJunkCommands?: number;
  /**
   * Milliseconds before the 220 greeting for a client at this address (smtp-server's own pause is
   * 100 ms for all). A client that talks before it is answered 421 and cut.
   */
  greetingDelayMs?: (remoteAddress: string) => number;
}

/** smtp-server's fixed pause before the greeting (init() in its smtp-connection.js). */
const SMTP_SERVER_GREETING_DELAY_MS = 100;
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
    // the end of a message's data found by a native search, not byte by byte (data-scan.ts)
    installDataScan();
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
    for (const name of max === undefined ? [] : JUNK) {
      const handler = conn[name];
      if (typeof handler !== 'function') continue;
      conn[name] = (command: unknown, callback: () => void): void => {
        junk += 1;
        // 421 makes smtp-server close the connection after the reply
        if (junk > max!) return conn.send(421, '4.7.0 Too many NOOP, RSET, VRFY or HELP commands without a message, closing');
        (handler as Handler).call(conn, command, callback);
      };
    }
    // last: a greeting at once runs onConnect now, whose refusal must go through the send above
    this.setGreetingDelay(conn);
  }

  /**
   * smtp-server's init() has just armed its fixed 100 ms timer, which will call connectionReady()
   * (the greeting). Greet once, at the chosen time: earlier by calling it ourselves, later by
   * holding the timer's call back; whichever comes second does nothing.
   */
  private setGreetingDelay(conn: Connection): void {
    const delayOf = this.limits.greetingDelayMs;
    if (!delayOf) return;
    const delay = Math.max(0, delayOf(conn.remoteAddress));
    const start = Date.now();
    const ready = conn.connectionReady.bind(conn);
    let greeted = false;
    const greet = (next?: () => void): void => {
      if (greeted) return;
      greeted = true;
      ready(next);
    };
    conn.connectionReady = (next?: () => void): void => {
      const left = delay - (Date.now() - start);
      if (left <= 0) return greet(next);
      setTimeout(() => greet(next), left).unref();
    };
    if (delay === 0) greet();
    else if (delay < SMTP_SERVER_GREETING_DELAY_MS) setTimeout(() => greet(), delay).unref();
  }
}
