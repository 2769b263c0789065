// "The connector reaches only the host it names": an HTTPS agent that opens connections to one
// host and port and to nothing else, so a redirect (or anything else a library follows) toward
// another host fails before a byte leaves, whatever the library does with redirects. TLS is
// verified against the connector's own CA file, or the system's CAs when none is named.
import http from "node:http";
import https from "node:https";
import type { Duplex } from "node:stream";

export const OTHER_HOST = "ERR_CONNECTOR_OTHER_HOST";

function otherHost(host: unknown): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(`a request to another host (${String(host)}) was refused`);
  e.code = OTHER_HOST;
  return e;
}

class PinnedHttpsAgent extends https.Agent {
  constructor(
    private readonly host: string,
    private readonly port: number,
    opts: https.AgentOptions,
  ) {
    super(opts);
  }

  override createConnection(
    options: http.ClientRequestArgs,
    cb?: (err: Error | null, s: Duplex) => void,
  ): Duplex | null | undefined {
    const host = String(options.host ?? options.hostname ?? "").replace(/^\[|\]$/g, "");
    const port = Number(options.port ?? 443);
    if (host.toLowerCase() !== this.host || port !== this.port) throw otherHost(host);
    return super.createConnection(options, cb);
  }
}

/** An agent that refuses every connection (plain http: the connectors speak only https). */
class RefusingAgent extends http.Agent {
  override createConnection(options: http.ClientRequestArgs): Duplex {
    throw otherHost(options.host);
  }
}

/** The agents for one connector's URL: https to its host only, http to none. */
export function pinnedAgents(url: string, ca: string | undefined): { httpsAgent: https.Agent; httpAgent: http.Agent } {
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const port = Number(u.port || 443);
  return {
    httpsAgent: new PinnedHttpsAgent(host, port, { ...(ca ? { ca } : {}), keepAlive: false }),
    httpAgent: new RefusingAgent(),
  };
}
