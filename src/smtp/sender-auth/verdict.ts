// A sender check's verdict and the domain alignment it rests on, shared by the check of the
// message itself (verify-sender.ts) and of a relay's Authentication-Results (relay-results.ts).
import { getDomain } from "tldts";
import type { FaxgateError } from "../../errors.js";

/** What proved the sender (or failed to): also the `check` label of the metric. */
export type VerdictCheck = "dmarc" | "spf+dkim" | "spf" | "dkim" | "arc" | "from" | "relay" | "trusted" | "auth";

export type SenderVerdict =
  | { ok: true; check: VerdictCheck /** one line for the log and the outcome mail */; detail: string }
  | { ok: false; check: VerdictCheck; temporary: boolean; refusal: FaxgateError; detail: string };

export const orgOf = (domain: string): string => getDomain(domain, { allowPrivateDomains: false }) ?? domain;

/** DMARC identifier alignment: the very domain (strict) or the same organisational domain (relaxed). */
export function aligned(a: string, b: string, strict: boolean): boolean {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return strict ? x === y : orgOf(x) === orgOf(y);
}
