// Bounds on the console's and the webhook receiver's connections, so that idle sockets opened by
// anyone who can reach them cannot take the process's file descriptors: SMTP, the store and the
// spool scans need theirs. At start the soft RLIMIT_NOFILE is read (/proc/self/limits) and, after a
// reserve for those, each HTTP listener gets a share: a cap for the listener (server.maxConnections:
// Node closes a socket over it at once) and one per client address (counted on 'connection'). A
// socket that sends nothing is closed after a short idle time, one that sends headers slowly after
// headersTimeout; while a request is being answered the idle timer is off (a slow answer from the
// fax service must not cut it).
import { readdirSync, readFileSync } from "node:fs";
import type { Server, Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import type { Logger } from "./log/index.js";

export interface ListenerLimits {
  /** connections the listener holds at once */
  maxConnections: number;
  /** of them from one client address */
  perAddress: number;
  /** a connection without a request under way is closed after this long */
  idleMs: number;
  /** the request's headers must arrive within this */
  headersTimeoutMs: number;
  /** the whole request (an upload) must arrive within this */
  requestTimeoutMs: number;
  /** an idle keep-alive connection is closed after this */
  keepAliveMs: number;
}

export interface DescriptorBudget {
  /** the soft RLIMIT_NOFILE, or null where it cannot be read */
  softLimit: number | null;
  /** descriptors open when the budget was made */
  inUse: number;
  /** kept for SMTP, the store, the spool, the fax service's sockets and notification mail */
  reserve: number;
  web: ListenerLimits;
  webhooks: ListenerLimits;
}

const WEB_DEFAULTS = {
  maxConnections: 512,
  perAddress: 64,
  idleMs: 30_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 300_000,
  keepAliveMs: 5_000,
};
const WEBHOOK_DEFAULTS = {
  maxConnections: 256,
  perAddress: 16,
  idleMs: 10_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveMs: 5_000,
};
// the store (database, WAL, documents), spool scans, the fax service's sockets, logs, notify
const BASE_RESERVE = 128;

/** The soft limit on open files from /proc/self/limits (null: not Linux, or unlimited). */
export function softFileLimit(text?: string): number | null {
  try {
    const m = /^Max open files\s+(\S+)/m.exec(text ?? readFileSync("/proc/self/limits", "utf8"));
    const n = m ? Number(m[1]) : NaN;
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

function openDescriptors(): number {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return 0;
  }
}

/**
 * Each HTTP listener's share of the descriptors left after the reserve (a quarter each, so half of
 * what is left stays free too); `smtpConnections` is smtp.maxConnections (0 without SMTP).
 */
export function descriptorBudget(opts: {
  smtpConnections: number;
  softLimit?: number | null;
  inUse?: number;
}): DescriptorBudget {
  const softLimit = opts.softLimit === undefined ? softFileLimit() : opts.softLimit;
  const inUse = opts.inUse ?? openDescriptors();
  // an SMTP session holds its socket, a temp file and a document being written
  const reserve = BASE_RESERVE + 3 * opts.smtpConnections;
  const share = softLimit === null ? Infinity : Math.max(0, Math.floor((softLimit - inUse - reserve) / 4));
  const fit = (d: typeof WEB_DEFAULTS): ListenerLimits => {
    const maxConnections = Math.max(4, Math.min(d.maxConnections, share));
    return { ...d, maxConnections, perAddress: Math.max(2, Math.min(d.perAddress, Math.floor(maxConnections / 4))) };
  };
  return { softLimit, inUse, reserve, web: fit(WEB_DEFAULTS), webhooks: fit(WEBHOOK_DEFAULTS) };
}

/** fastify's options for these limits (before the server exists). */
export function serverOptions(
  l: ListenerLimits,
  tls: { cert: string; key: string } | undefined,
): Record<string, unknown> {
  // Node checks headersTimeout and requestTimeout every connectionsCheckingInterval (30 s by default)
  const node = {
    headersTimeout: l.headersTimeoutMs,
    requestTimeout: l.requestTimeoutMs,
    connectionsCheckingInterval: 1000,
  };
  return {
    connectionTimeout: l.idleMs,
    keepAliveTimeout: l.keepAliveMs,
    requestTimeout: l.requestTimeoutMs,
    ...(tls ? { https: { ...tls, ...node } } : { http: node }),
  };
}

/**
 * Caps the listener's connections in all and per client address (`exempt`: addresses not capped
 * one by one, e.g. a trusted proxy carrying everyone's requests), and lifts the idle timer while a
 * request is answered. Call before listen().
 */
export function applyListenerLimits(
  app: FastifyInstance,
  l: ListenerLimits,
  opts: { logger: Logger; exempt?: (address: string) => boolean },
): void {
  const server = app.server as Server;
  server.maxConnections = l.maxConnections;
  // one line for the first refusal, then at most one a minute with the count: a flood cannot flood the log
  let refused = 0;
  let loggedAt = 0;
  const note = (remote: string | undefined, why: string) => {
    refused += 1;
    const now = Date.now();
    if (now - loggedAt >= 60_000) {
      opts.logger.warn(
        { remote, refused, maxConnections: l.maxConnections, perAddress: l.perAddress },
        `connection refused: ${why}`,
      );
      loggedAt = now;
      refused = 0;
    }
  };
  server.on("drop", (d?: { remoteAddress?: string }) =>
    note(d?.remoteAddress, "the listener is at its connection cap"),
  );
  const perAddress = new Map<string, number>();
  server.on("connection", (socket: Socket) => {
    const addr = socket.remoteAddress ?? "";
    if (opts.exempt?.(addr)) return;
    const n = (perAddress.get(addr) ?? 0) + 1;
    if (n > l.perAddress) {
      note(addr, "too many connections from this address");
      socket.destroy();
      return;
    }
    perAddress.set(addr, n);
    socket.once("close", () => {
      const left = (perAddress.get(addr) ?? 1) - 1;
      if (left <= 0) perAddress.delete(addr);
      else perAddress.set(addr, left);
    });
  });
  app.addHook("onRequest", async (req) => {
    req.raw.socket.setTimeout(0);
  });
  app.addHook("onResponse", async (req) => {
    if (!req.raw.socket.destroyed) req.raw.socket.setTimeout(l.idleMs);
  });
}
