// The resolver SPF, DKIM and DMARC checks use: the configured servers (dns.servers, "host:port"
// each) or the system's. Answers are cached per their TTL by c-ares itself (its query cache, on by
// default in the c-ares Node 20 carries), so a second mail from the same domain asks nothing;
// lookups already in flight for the same name and type are shared here, so a burst of mail from
// one domain asks once.
import { promises as dnsp } from 'node:dns';
import type { DnsConfig } from '../config/schema.js';

/** mailauth's resolver shape: dns.promises.resolve(name, rrtype). */
export type DnsResolve = (name: string, rrtype: string) => Promise<unknown[]>;

export interface ResolverOptions {
  /** per try, in milliseconds (default 3000) */
  timeoutMs?: number;
  /** tries per server (default 2) */
  tries?: number;
}

export function makeResolver(config: DnsConfig, opts: ResolverOptions = {}): DnsResolve {
  const resolver = new dnsp.Resolver({ timeout: opts.timeoutMs ?? 3000, tries: opts.tries ?? 2 });
  if (config.servers?.length) resolver.setServers(config.servers);
  const inflight = new Map<string, Promise<unknown[]>>();
  return (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`;
    let p = inflight.get(key);
    if (!p) {
      p = (resolver.resolve(name, rrtype) as Promise<unknown[]>).finally(() => inflight.delete(key));
      inflight.set(key, p);
    }
    return p;
  };
}
