// The mailbox door's own look at a fetched message's DKIM signature (mail-auth/): the provider's
// Authentication-Results prove the sender (sender-proof.ts), not that this copy is new, fresh and
// addressed by its sender. A Cc'd colleague can rewrite To: of a Microsoft 365 mail (To is not
// signed there) and send it to the fax mailbox; the provider then reports a pass again.
//   - a signature of the sender's domain that verifies here marks the message in the replay
//     record (whole: a mailbox message is one delivery), so a copy is refused;
//   - its signed Date: must be within smtp.senderAuth.maxMessageAgeHours;
//   - the numbers are proved when the field they were read from (To/Cc, or the subject) is signed;
//     requireSignedRecipients makes that a condition for the domain.
// A message whose signature does not verify on the stored copy (a provider that rewrites links
// does that) is marked by its Message-ID, and its date and numbers are not proved.
import type { SenderAuthConfig } from "../config/index.js";
import type { DnsResolve } from "../dns/index.js";
import { FaxgateError } from "../errors.js";
import {
  type ReplayClaim,
  messageIdKey,
  verifySignedMessage,
  checkFresh,
  recipientsProof,
} from "../mail-auth/index.js";

export interface SignedMailboxOptions {
  resolve: DnsResolve;
  /** smtp.senderAuth as it is now (maxMessageAgeHours, minKeyBits, alignment, domains) */
  senderAuth: () => SenderAuthConfig;
  now: () => number;
}

export interface SignedVerdict {
  recipientsProved: boolean;
  replay: ReplayClaim;
}

export async function judgeSignedMailbox(
  opts: SignedMailboxOptions,
  msg: {
    source: Buffer;
    from: string;
    messageId?: string;
    /** where the numbers were read (addressing.ts) */
    numbersFrom: "plus address" | "display name" | "subject";
    /** the mailbox message's own key: found again after a crash, it is the same use */
    dedupeKey: string;
    /** when the provider delivered it into the mailbox (IMAP INTERNALDATE) */
    arrivedAt?: Date;
  },
): Promise<SignedVerdict> {
  const cfg = opts.senderAuth();
  const domain = msg.from.slice(msg.from.lastIndexOf("@") + 1).toLowerCase();
  const signed = await verifySignedMessage(msg.source, domain, {
    resolve: opts.resolve,
    minKeyBits: cfg.minKeyBits,
    strict: cfg.alignment === "strict",
  });
  if (signed.temporary)
    throw new FaxgateError("SENDER_CHECK_TEMPORARY", `the DKIM key of ${domain} cannot be looked up right now`, {
      temporary: true,
    });
  // Freshness is judged at the message's arrival in the mailbox, not when faxgate reads it: mail
  // that waited while the gateway was stopped is still the sender's fresh mail. The provider sets
  // the arrival time; a sender cannot.
  const now = opts.now();
  const arrived = msg.arrivedAt?.getTime();
  const at = arrived !== undefined && Number.isFinite(arrived) && arrived <= now ? arrived : now;
  checkFresh(signed, at, cfg.maxMessageAgeHours, at === now ? "ago" : "before it reached the mailbox");
  const covered = msg.numbersFrom === "subject" ? signed.subjectSigned : signed.recipientsSigned;
  const recipientsProved = recipientsProof(covered, domain, cfg.domains[domain]?.requireSignedRecipients === true);
  const keys = signed.keys.length ? signed.keys : msg.messageId ? [messageIdKey(domain, msg.messageId)] : [];
  return { recipientsProved, replay: { keys, claim: msg.dedupeKey } };
}
