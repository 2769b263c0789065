// smtp-server guesses an enhanced status code from the reply code alone (550 -> 5.1.1), which
// would contradict our own (550 5.7.1 relay denied). This subclass sends a reply whose text
// already starts with an enhanced code exactly as written, and reports every reply to a hook.
import type net from 'node:net';
import type tls from 'node:tls';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export type ReplyHook = (code: number, context: unknown) => void;

interface Sendable {
  send(code: number, data?: unknown, context?: unknown): void;
}

const ENHANCED = /^[245]\.\d{1,3}\.\d{1,3} /;

export class ExactReplyServer extends SMTPServer {
  private readonly patched = new WeakSet<object>();

  constructor(options: SMTPServerOptions, private readonly onReply: ReplyHook) {
    super(options);
  }

  override connect(socket: net.Socket | tls.TLSSocket, socketOptions?: Parameters<SMTPServer['connect']>[1]): void {
    super.connect(socket, socketOptions);
    // The connection just made is the last one in the (insertion-ordered) set.
    let last: Sendable | undefined;
    for (const c of this.connections) last = c as unknown as Sendable;
    if (!last || this.patched.has(last)) return;
    this.patched.add(last);
    const original = last.send.bind(last);
    const hook = this.onReply;
    last.send = (code: number, data?: unknown, context?: unknown): void => {
      try {
        hook(code, context);
      } catch {
        // metrics never break a session
      }
      if (typeof data === 'string' && ENHANCED.test(data)) return original(code, data, false);
      return original(code, data, context);
    };
  }
}
