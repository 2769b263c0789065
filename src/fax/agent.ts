// One keep-alive HTTPS agent per process, shared by every user's client, so that calls reuse
// connections instead of paying a TLS handshake each. An extra CA (the emulator's) is trusted in
// addition to the system's: Node's `ca` option replaces the defaults, hence the combination.
import { readFileSync } from "node:fs";
import tls from "node:tls";
import { Agent } from "undici";
import { FaxgateError } from "../errors.js";

export interface FaxAgentOptions {
  caFile?: string;
  ca?: string | Buffer;
  timeoutMs?: number;
  /** Most connections per origin (default 16). */
  connections?: number;
}

export const DEFAULT_TIMEOUT_MS = 30_000;

/** The system roots plus the extra CA, or undefined (Node's defaults) when there is none. */
export function trustedCas(opts: { caFile?: string; ca?: string | Buffer }): string[] | undefined {
  const extra: string[] = [];
  if (opts.caFile) {
    try {
      extra.push(readFileSync(opts.caFile, "utf8"));
    } catch (err) {
      throw new FaxgateError(
        "CONFIG_INVALID",
        `the CA file ${opts.caFile} cannot be read: ${(err as NodeJS.ErrnoException).code ?? "error"}`,
        { field: "api.caFile", cause: err },
      );
    }
  }
  if (opts.ca) extra.push(typeof opts.ca === "string" ? opts.ca : opts.ca.toString("utf8"));
  if (extra.length === 0) return undefined;
  return [...tls.rootCertificates, ...extra];
}

export function createFaxAgent(opts: FaxAgentOptions = {}): Agent {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const ca = trustedCas(opts);
  return new Agent({
    connections: opts.connections ?? 16,
    keepAliveTimeout: 10_000,
    keepAliveMaxTimeout: 60_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: { timeout: Math.min(timeoutMs, 10_000), ...(ca ? { ca } : {}) },
  });
}
