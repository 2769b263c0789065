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

export function inList(list: net.BlockList, ip: string | undefined): boolean {
  if (!ip) return false;
  const { address, family } = plainAddress(ip);
  if (!net.isIP(address)) return false;
  return list.check(address, family);
}

const LOOPBACK = buildBlockList(["127.0.0.0/8", "::1/128"]);

export function isLoopback(ip: string | undefined): boolean {
  return inList(LOOPBACK, ip);
}
