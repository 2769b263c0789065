// Client addresses against configured networks (smtp.trustedNetworks, web.trustedProxies, the
// loopback that may sign in without TLS): one reading of an address for SMTP and the web console.
import net from "node:net";

/** IPv4-mapped IPv6 ("::ffff:10.1.2.3") is checked as the IPv4 address it is. */
export function plainAddress(ip: string): { address: string; family: "ipv4" | "ipv6" } {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (m) return { address: m[1]!, family: "ipv4" };
  return { address: ip, family: net.isIPv6(ip) ? "ipv6" : "ipv4" };
}

export function buildBlockList(networks: readonly string[]): net.BlockList {
  const list = new net.BlockList();
  for (const n of networks) {
    const [addr, bits] = n.split("/");
    const family = net.isIPv6(addr!) ? "ipv6" : "ipv4";
    if (bits === undefined) list.addAddress(addr!, family);
    else list.addSubnet(addr!, Number(bits), family);
  }
  return list;
}

/**
 * Answers per list for the addresses seen lately: a check builds a SocketAddress, and an SMTP
 * session asks about its client three times (trusted, AUTH, the sender's rules).
 */
const answers = new WeakMap<net.BlockList, Map<string, boolean>>();
const ANSWERS_KEPT = 4096;
/** The longest address worth keeping: IPv4-mapped IPv6 is 45 characters, a zone id a few more. */
const ADDRESS_CHARS = 64;

export function inList(list: net.BlockList, ip: string | undefined): boolean {
  if (!ip) return false;
  let seen = answers.get(list);
  if (!seen) answers.set(list, (seen = new Map()));
  const known = seen.get(ip);
  if (known !== undefined) return known;
  const { address, family } = plainAddress(ip);
  const answer = net.isIP(address) !== 0 && list.check(address, family);
  // bounded: a stream of ever new clients only empties it now and then, and a long string (a
  // forwarded-for header's, which is not an address) is never kept
  if (ip.length > ADDRESS_CHARS) return answer;
  if (seen.size >= ANSWERS_KEPT) seen.clear();
  seen.set(ip, answer);
  return answer;
}

const LOOPBACK = buildBlockList(["127.0.0.0/8", "::1/128"]);

export function isLoopback(ip: string | undefined): boolean {
  return inList(LOOPBACK, ip);
}
