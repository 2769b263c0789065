// Who may fax from a mailbox: the From: of a configured user, proven by the mailbox provider's own
// Authentication-Results (RFC 8601). Anyone can write any From: into a mail that lands in a shared
// mailbox, so the provider's verdict is the only evidence. Which header is the provider's, and what
// it proves, is the one rule of every door (mail-auth/relay-verdict.ts): the topmost only.
import type { UserConfig } from "../config/index.js";
import type { UserIndex } from "../auth/index.js";
import { judgeTopmost } from "../mail-auth/index.js";

export type SenderProof =
  | { ok: true; user: UserConfig; check: string }
  | { ok: false; reason: string; claimed?: UserConfig };

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf("@") + 1).toLowerCase();
}

export interface ProofInput {
  /** the From: addresses of the message (one is required) */
  from: string[];
  /** the raw Authentication-Results header values, topmost first */
  authResults: string[];
  trustedAuthservIds: readonly string[];
  /** mailbox.provider: exchange-online's topmost header names no authserv-id and is still its own */
  provider: "other" | "exchange-online";
  users: UserIndex;
}

export function proveSender(input: ProofInput): SenderProof {
  if (input.from.length !== 1)
    return { ok: false, reason: `the message must have exactly one From: address (it has ${input.from.length})` };
  const from = input.from[0]!;
  const user = input.users.byEmail(from);
  if (!user && input.users.hasLeft(from))
    return { ok: false, reason: `${clip(from)} has left: the directory ended their access to this fax gateway` };
  if (!user) return { ok: false, reason: `${clip(from)} is not the address of a user of this fax gateway` };
  const domain = domainOf(from);
  const idLess = input.provider === "exchange-online";
  const provider = [...input.trustedAuthservIds, ...(idLess ? ["Exchange Online"] : [])].join(", ");
  const v = judgeTopmost(input.authResults, domain, {
    authservIds: input.trustedAuthservIds,
    idLess,
    // a mailbox has no alignment setting: relaxed, as DMARC's default
    strict: false,
  });
  // v.by is null only for the id-less header the exchange-online switch makes the provider's
  const refused = (reason: string): SenderProof => ({ ok: false, claimed: user, reason });
  switch (v.kind) {
    case "absent":
      return refused(
        `the mailbox provider's Authentication-Results (${provider}) are missing, so ${domain} cannot be verified`,
      );
    case "untrusted":
      return refused(
        `${v.why} (the mailbox provider's); a header below it came with the message and proves nothing, so ${domain} cannot be verified`,
      );
    case "pass":
      return {
        ok: true,
        user,
        check: `${v.how} (${v.by ?? "Exchange Online"})`,
      };
    case "fail":
      return refused(
        `the From: address ${clip(from)} is not proven: ${v.by ?? "Exchange Online"} reports ${v.method === "dmarc" ? "DMARC fail" : "SPF fail and no DKIM signature"} for ${domain}`,
      );
    case "none":
      return refused(
        `the From: address ${clip(from)} is not proven: ${v.by ?? "Exchange Online"} reports no DMARC pass and no DKIM signature of that domain for ${domain}`,
      );
  }
}

function clip(s: string): string {
  const line = s.replace(/[\u0000-\u001f\u007f]+/g, " ");
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}
