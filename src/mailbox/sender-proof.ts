// Who may fax from a mailbox: the From: of a configured user, proven by the mailbox provider's own
// Authentication-Results (RFC 8601). Anyone can write any From: into a mail that lands in a shared
// mailbox, so the provider's verdict is the only evidence; headers from other hosts, or below the
// provider's topmost one, are the sender's own words and prove nothing.
import type { UserConfig } from "../config/schema.js";
import type { UserIndex } from "../auth/user-index.js";

export type SenderProof =
  | { ok: true; user: UserConfig; check: string }
  | { ok: false; reason: string; claimed?: UserConfig };

interface MethodResult {
  method: string;
  result: string;
  props: Map<string, string>;
}

/** One Authentication-Results value: its authserv-id and each method's result with its properties. */
export function parseAuthResults(value: string): { authservId: string; results: MethodResult[] } | null {
  // comments (RFC 5322 CFWS) carry prose such as "(sender IP is ...)": dropped, not nested deeper than one level
  const text = value.replace(/\r?\n[ \t]+/g, " ").replace(/\([^()]*\)/g, " ");
  const parts = text.split(";").map((p) => p.trim());
  const head = parts.shift() ?? "";
  // "mx.google.com" or "mx.example.com 1" (a version after the id)
  const authservId = head.split(/\s+/)[0] ?? "";
  if (!authservId || authservId.includes("=")) return null;
  const results: MethodResult[] = [];
  for (const p of parts) {
    const tokens = p.split(/\s+/).filter(Boolean);
    const first = tokens.shift();
    const m = first ? /^([a-z0-9_.-]+)(?:\/[0-9]+)?=([a-z]+)$/i.exec(first) : null;
    if (!m) continue;
    const props = new Map<string, string>();
    for (const t of tokens) {
      const kv = /^([a-z0-9_-]+\.[a-z0-9_.-]+)=(.+)$/i.exec(t);
      if (kv) props.set(kv[1]!.toLowerCase(), kv[2]!.replace(/^"|"$/g, ""));
    }
    results.push({ method: m[1]!.toLowerCase(), result: m[2]!.toLowerCase(), props });
  }
  return { authservId: authservId.toLowerCase(), results };
}

/** Relaxed alignment without a public-suffix list: the same domain, or one a parent of the other. */
function aligned(a: string, b: string): boolean {
  const x = a.toLowerCase().replace(/^@/, "").replace(/\.$/, "");
  const y = b.toLowerCase().replace(/^@/, "").replace(/\.$/, "");
  return x === y || x.endsWith(`.${y}`) || y.endsWith(`.${x}`);
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf("@") + 1).toLowerCase();
}

export interface ProofInput {
  /** the From: addresses of the message (one is required) */
  from: string[];
  /** the raw Authentication-Results header values, topmost first */
  authResults: string[];
  trustedAuthservIds: readonly string[];
  users: UserIndex;
}

export function proveSender(input: ProofInput): SenderProof {
  if (input.from.length !== 1)
    return { ok: false, reason: `the message must have exactly one From: address (it has ${input.from.length})` };
  const from = input.from[0]!;
  const user = input.users.byEmail(from);
  if (!user) return { ok: false, reason: `${clip(from)} is not the address of a user of this fax gateway` };
  const domain = domainOf(from);
  const trusted = new Set(input.trustedAuthservIds.map((i) => i.toLowerCase()));
  // the provider's header is the topmost of its own; any further ones with its id came with the mail
  const header = input.authResults.map(parseAuthResults).find((h) => h !== null && trusted.has(h.authservId));
  if (!header) {
    return {
      ok: false,
      claimed: user,
      reason: `the mailbox provider's Authentication-Results (${[...trusted].join(", ")}) are missing, so ${domain} cannot be verified`,
    };
  }
  const dmarc = header.results.find(
    (r) => r.method === "dmarc" && aligned(r.props.get("header.from") ?? domain, domain),
  );
  if (dmarc?.result === "pass") return { ok: true, user, check: `DMARC pass for ${domain} (${header.authservId})` };
  const dkim = header.results.find(
    (r) =>
      r.method === "dkim" &&
      r.result === "pass" &&
      aligned(r.props.get("header.d") ?? domainOf(r.props.get("header.i") ?? ""), domain),
  );
  if (dkim && (!dmarc || dmarc.result === "none")) {
    return { ok: true, user, check: `DKIM pass aligned with ${domain} (${header.authservId})` };
  }
  const words = dmarc ? `DMARC ${dmarc.result}` : "no DMARC pass and no DKIM signature of that domain";
  return {
    ok: false,
    claimed: user,
    reason: `the From: address ${clip(from)} is not proven: ${header.authservId} reports ${words} for ${domain}`,
  };
}

function clip(s: string): string {
  const line = s.replace(/[\u0000-\u001f\u007f]+/g, " ");
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}
