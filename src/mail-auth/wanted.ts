// A proved sender is not yet a wanted fax (issue 48): a DKIM signature proves who wrote a message,
// not that this copy of it, today, to these numbers, is what they meant. Anyone holding one signed
// mail can send its bytes again from anywhere, to any number. Each door asks these questions of
// a signed message after its sender is proved and before anything is kept:
//   - is it fresh: its signed Date: within smtp.senderAuth.maxMessageAgeHours, not in the future;
//   - is every fax number asked for written in its To:/Cc: (the envelope is the sender's server's
//     word, or an attacker's; the header is the sender's);
//   - are those To:/Cc: covered by the signature (then the numbers are proved), which a domain's
//     requireSignedRecipients makes a condition.
// Mail proved without a signature (SPF from the sender's own server) cannot be sent again by
// anyone else: it is not judged for freshness here, and its recipients are not proved.
import { ERROR_CATALOGUE, type ErrorCode, FaxgateError } from "../errors.js";
import type { SignedMessage } from "./signed-message.js";

/** How far in the future a signed Date: may be: clocks of sending computers drift. */
export const FUTURE_SKEW_MS = 15 * 60_000;

/** A refusal in the catalogue's reply for `code`, with the reason the sender reads. */
export function refusal(code: ErrorCode, text: string): FaxgateError {
  return new FaxgateError(code, text, { smtpReply: `${ERROR_CATALOGUE[code].smtp} ${text}` });
}

const shownTime = (at: Date): string => `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;

/**
 * Throws the refusal of a signed message that is too old, dated ahead, or whose date is not signed.
 * `now` is when the message reached us; `arrival` words it in the refusal ("ago" for SMTP).
 */
export function checkFresh(signed: SignedMessage, now: number, maxAgeHours: number, arrival = "ago"): void {
  if (signed.signers.length === 0) return;
  if (!signed.date)
    throw refusal(
      "SIGNED_MAIL_STALE",
      `The date of this signed message is not proved (${signed.dateWhy}): a copy of a signed mail could be sent again at any time, so it is not faxed`,
    );
  const age = now - signed.date.getTime();
  if (age > maxAgeHours * 3_600_000)
    throw refusal(
      "SIGNED_MAIL_STALE",
      `This signed message is dated ${shownTime(signed.date)}, more than ${maxAgeHours} hours ${arrival}: a copy of an old mail is not faxed; send a new mail`,
    );
  if (age < -FUTURE_SKEW_MS)
    throw refusal(
      "SIGNED_MAIL_STALE",
      `This signed message is dated ${shownTime(signed.date)}, in the future: check the clock of the computer that sent it`,
    );
}

export interface AskedRecipient {
  /** the address as the sender's server gave it (RCPT TO), for the refusal */
  shown: string;
  /** the fax number or contact the door reads from it (targetOf's form) */
  target: string;
}

/**
 * Throws the refusal of the first fax recipient asked for that the message's To:/Cc: does not
 * name, read the same way (`targetOf`: the door's own reading of a fax address, null for others).
 */
export function checkWritten(
  signed: SignedMessage,
  asked: readonly AskedRecipient[],
  targetOf: (address: string) => string | null,
): void {
  const written = new Set(signed.written.map(targetOf).filter((t): t is string => t !== null));
  const missing = asked.find((a) => !written.has(a.target));
  if (missing)
    throw refusal(
      "RECIPIENT_NOT_WRITTEN",
      `<${missing.shown.slice(0, 80)}> is not in the To: or Cc: of this message: a fax goes only to the numbers its sender wrote in it`,
    );
}

/** Whether the recipients are proved; throws when the domain requires that and they are not. */
export function recipientsProof(proved: boolean, domain: string, required: boolean): boolean {
  if (!proved && required)
    throw refusal(
      "RECIPIENT_NOT_WRITTEN",
      `The fax numbers of this message are not covered by a DKIM signature of ${domain.slice(0, 80)} (To:, Cc: or the subject unsigned), and this gateway requires that for ${domain.slice(0, 80)}`,
    );
  return proved;
}
