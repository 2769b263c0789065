// The resolver SPF, DKIM and DMARC checks use: the configured servers (dns.servers, "host:port"
// each) or the system's. node:dns does not tell a TXT or MX answer's TTL, so the questions are
// asked with dns2's client (UDP, TCP when the answer is truncated), which does; answers, and
// "no such name" for the zone's negative TTL, are kept for as long as they say. Lookups already in
// flight for the same name and type are shared, so a burst of mail from one domain asks once.
import { getServers } from "node:dns";
import net from "node:net";
import dns2 from "dns2";
import { type DnsConfig, parseHostPort } from "../config/index.js";
import { FaxgateError } from "../errors.js";

/** mailauth's resolver shape: dns.promises.resolve(name, rrtype), answers as node:dns gives them. */
export type DnsResolve = (name: string, rrtype: string) => Promise<unknown[]>;

export interface ResolverOptions {
  /** per try, in milliseconds (default: dns.timeoutMs) */
  timeoutMs?: number;
  /** tries per server (default 2) */
  tries?: number;
  /** the clock, for TTLs */
  now?: () => number;
}

const NEGATIVE_TTL_S = 60;
const NXDOMAIN = 3;
/** names kept at most: a flood of made-up domains cannot grow the cache without end */
const CACHE_MAX = 10_000;
const MAX_TTL_S = 86_400;

interface Server {
  host: string;
  port: number;
}

function parseServer(entry: string): Server {
  // the system's servers come bare ("192.0.2.53", "2001:db8::53", "[2001:db8::53]"): port 53
  if (net.isIP(entry)) return { host: entry, port: 53 };
  const { host, port } = parseHostPort(/^\[.*\]$/.test(entry) ? `${entry}:53` : entry, "dns.servers");
  if (!net.isIP(host)) {
    throw new FaxgateError(
      "CONFIG_INVALID",
      `dns.servers: "${entry}" is not an IP address with an optional port (e.g. "192.0.2.53:53", "[2001:db8::53]:53")`,
      { field: "dns.servers" },
    );
  }
  return { host, port };
}

function dnsError(code: string, name: string, rrtype: string): Error {
  return Object.assign(new Error(`query${rrtype} ${code} ${name}`), { code, hostname: name });
}

interface Record_ {
  type: number;
  ttl: number;
  address?: string;
  data?: string | string[];
  exchange?: string;
  priority?: number;
  domain?: string;
  minimum?: number;
}

/** An answer's records in node:dns's shapes (TXT: one array of strings per record). */
function shaped(rrtype: string, records: Record_[]): unknown[] {
  switch (rrtype) {
    case "A":
    case "AAAA":
      return records.map((r) => r.address);
    case "TXT":
      return records.map((r) => (Array.isArray(r.data) ? r.data : [r.data ?? ""]));
    case "MX":
      return records.map((r) => ({ exchange: r.exchange, priority: r.priority }));
    case "PTR":
    case "CNAME":
      return records.map((r) => r.domain);
    default:
      return records.map((r) => r.data);
  }
}

export function makeResolver(config: DnsConfig, opts: ResolverOptions = {}): DnsResolve {
  const servers = (config.servers?.length ? config.servers : getServers()).map(parseServer);
  const timeout = opts.timeoutMs ?? config.timeout;
  const tries = opts.tries ?? 2;
  const now = opts.now ?? Date.now;
  const clients = servers.map((s) =>
    dns2.UDPClient({ dns: s.host, port: s.port, timeout, socketType: net.isIPv6(s.host) ? "udp6" : "udp4" }),
  );
  const cache = new Map<string, { until: number; answer: unknown[] | Error }>();
  const inflight = new Map<string, Promise<unknown[]>>();

  const ask = async (name: string, rrtype: string): Promise<{ answer: unknown[] | Error; ttl: number }> => {
    const type = (dns2.Packet.TYPE as Record<string, number>)[rrtype];
    if (type === undefined) throw dnsError("ENOTIMP", name, rrtype);
    let last: Error = dnsError("ETIMEOUT", name, rrtype);
    for (const client of clients) {
      for (let t = 0; t < tries; t += 1) {
        let res: Awaited<ReturnType<typeof client>>;
        try {
          res = await client(name, rrtype as never);
        } catch (err) {
          last = dnsError(/timeout/i.test(String((err as Error).message)) ? "ETIMEOUT" : "ECONNREFUSED", name, rrtype);
          continue;
        }
        const rcode = (res.header as { rcode?: number }).rcode ?? 0;
        const soa = (res.authorities as unknown as Record_[]).find((r) => r.type === dns2.Packet.TYPE.SOA);
        const negative = Math.min(soa?.minimum ?? NEGATIVE_TTL_S, soa?.ttl ?? NEGATIVE_TTL_S);
        if (rcode === NXDOMAIN) return { answer: dnsError("ENOTFOUND", name, rrtype), ttl: negative };
        if (rcode !== 0) {
          last = dnsError("ESERVFAIL", name, rrtype);
          break; // the next server
        }
        const records = (res.answers as unknown as Record_[]).filter((r) => r.type === type);
        if (records.length === 0) return { answer: dnsError("ENODATA", name, rrtype), ttl: negative };
        return { answer: shaped(rrtype, records), ttl: Math.min(...records.map((r) => r.ttl)) };
      }
    }
    // no answer at all: not cached, the next mail asks again
    throw last;
  };

  return (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`;
    const hit = cache.get(key);
    if (hit && hit.until > now())
      return hit.answer instanceof Error ? Promise.reject(hit.answer) : Promise.resolve(hit.answer);
    let p = inflight.get(key);
    if (!p) {
      p = ask(name, rrtype)
        .then(({ answer, ttl }) => {
          if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
          cache.set(key, { until: now() + Math.min(Math.max(ttl, 0), MAX_TTL_S) * 1000, answer });
          if (answer instanceof Error) throw answer;
          return answer;
        })
        .finally(() => inflight.delete(key));
      inflight.set(key, p);
    }
    return p;
  };
}
