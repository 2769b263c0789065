// DMARC identifier alignment (RFC 7489 3.1), the one rule every door judges a domain by: the MX
// mode's own check, a relay's verdict header and a mailbox provider's.
import { getDomain } from "tldts";

/** The organisational domain by the public suffix list (example.co.uk for mail.example.co.uk). */
export const orgOf = (domain: string): string => getDomain(domain, { allowPrivateDomains: false }) ?? domain;

/** The very domain (strict) or the same organisational domain (relaxed). */
export function aligned(a: string, b: string, strict: boolean): boolean {
  const x = a.toLowerCase().replace(/^@/, "").replace(/\.$/, "");
  const y = b.toLowerCase().replace(/^@/, "").replace(/\.$/, "");
  return strict ? x === y : orgOf(x) === orgOf(y);
}
