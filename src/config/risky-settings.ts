// Settings that are valid but dangerous: each one is a warning at start (log) and in `faxgate
// doctor`, never a refusal (a lab or a container may mean them). The list is the review's:
// admin port on a public address, trusted relays that cover the Internet, SMTP without AUTH on a
// public listener, web console or webhook receiver without TLS beyond loopback, a webhook URL in
// clear.
import net from "node:net";
import { privacyContradictions } from "./privacy-settings.js";
import type { Config } from "./schema.js";

/** True for addresses only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h === "::1") return true;
  if (net.isIPv4(h)) return h.startsWith("127.");
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
  return mapped ? mapped[1]!.startsWith("127.") : false;
}

function hostOf(listen: string): string {
  const m = /^(?:\[([^\]]+)\]|([^:\s]+)):\d+$/.exec(listen.trim());
  return m ? (m[1] ?? m[2])! : listen;
}

function publicListen(listen: string): boolean {
  return !isLoopbackHost(hostOf(listen));
}

/** How many addresses a network of trustedNetworks covers, as a prefix length and family. */
function tooWide(cidr: string): string | null {
  const [addr = "", bits] = cidr.split("/");
  if (bits === undefined) return null;
  const len = Number(bits);
  if (net.isIPv4(addr) && len < 8)
    return `${cidr} covers ${len === 0 ? "every IPv4 address" : `2^${32 - len} IPv4 addresses`}`;
  if (net.isIPv6(addr) && len < 32) return `${cidr} covers ${len === 0 ? "every IPv6 address" : `a /${len} of IPv6`}`;
  return null;
}

/** A network of /16 or wider inside 172.16.0.0/12, where Docker puts its bridge networks. */
function dockerBridge(cidr: string): boolean {
  const [addr = "", bits] = cidr.split("/");
  const octets = addr.split(".").map(Number);
  if (!net.isIPv4(addr) || bits === undefined || Number(bits) > 16) return false;
  return octets[0] === 172 && octets[1]! >= 16 && octets[1]! <= 31;
}

interface ListenWithTls {
  listen?: unknown;
  tls?: unknown;
}

/** Warnings, one sentence each naming the key, for the log at start and for doctor. */
export function riskySettings(config: Config): string[] {
  const out: string[] = [];
  if (config.admin && publicListen(config.admin.listen)) {
    out.push(
      `admin.listen ${config.admin.listen} is not loopback: /metrics and the health checks (which name users) are open to the network; bind it to 127.0.0.1 or a management network behind a firewall`,
    );
  }
  const smtp = config.smtp;
  if (smtp) {
    for (const n of smtp.trustedNetworks) {
      const wide = tooWide(n);
      if (wide)
        out.push(
          `smtp.trustedNetworks ${wide}: every host in it may submit mail for any configured user without AUTH (an open fax relay); list only your mail relays`,
        );
      else if (dockerBridge(n))
        out.push(
          `smtp.trustedNetworks ${n} is a Docker bridge range: behind a published port (-p 25:2525) every client, the Internet included, comes from the bridge gateway, so this is an open fax relay; list only your mail relay's own address`,
        );
    }
    const open = smtp.listen.filter(publicListen);
    if (smtp.auth === "off" && open.length > 0) {
      out.push(
        `smtp.auth is "off" on a non-loopback listener (${open.join(", ")}): anyone who can reach it and writes a user's address in MAIL FROM sends faxes as that user; use "optional" or "required"`,
      );
    }
    if (open.length > 0 && !smtp.tls && smtp.auth !== "off") {
      out.push(
        `smtp.listen ${open.join(", ")} is not loopback and smtp.tls is not set: clients on other hosts cannot use AUTH (it needs STARTTLS) and mail crosses the network in clear`,
      );
    }
  }
  // web and webhooks may be absent from this version's schema; read them without assuming.
  const extra = config as unknown as { web?: ListenWithTls; webhooks?: ListenWithTls };
  for (const key of ["web", "webhooks"] as const) {
    const section = extra[key];
    if (section && typeof section.listen === "string" && publicListen(section.listen) && !section.tls) {
      out.push(
        `${key}.listen ${section.listen} is not loopback and ${key}.tls is not set: passwords and session cookies cross the network in clear; set ${key}.tls or put a TLS proxy in front and bind to loopback`,
      );
    }
  }
  for (const m of config.imap?.mailboxes ?? []) {
    if (m.tls === "off" && !isLoopbackHost(m.host)) {
      out.push(
        `imap.mailboxes ${m.name ?? `${m.user}@${m.host}`}: tls is "off" to ${m.host}: the mailbox password and every document cross the network in clear; use "implicit" (993) or "starttls"`,
      );
    }
  }
  // the service posts fax records and our Basic credentials to this URL: in clear over the Internet
  const hook = extra.webhooks as { url?: unknown } | undefined;
  if (hook && typeof hook.url === "string") {
    try {
      const u = new URL(hook.url);
      if (u.protocol === "http:" && !isLoopbackHost(u.hostname)) {
        out.push(
          `webhooks.url ${u.origin} is http:// on a non-loopback host: the service would post fax records and the webhook password in clear; use an https:// URL (webhooks.tls, or a TLS proxy in front)`,
        );
      }
    } catch {
      // the schema has already said what is wrong with it
    }
  }
  out.push(...privacyContradictions(config));
  return out;
}
