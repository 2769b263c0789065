// The public MX's questions after a stranger proved its sender (mail-auth/wanted.ts): is this
// signed message fresh, is every RCPT TO written in its To:/Cc: (read the way RCPT is read,
// recipient-address.ts), are those headers signed, and its use to record so that a copy is
// refused. Answers what the mail door keeps with the job.
import type { SmtpConfig } from "../../config/index.js";
import type { Vetted } from "../../intake/index.js";
import { type SignedMessage, checkFresh, checkWritten, recipientsProof } from "../../mail-auth/index.js";
import { checkRecipient } from "../recipient-address.js";

export function wantedMail(
  signed: SignedMessage,
  /** the envelope: its sender, and every RCPT TO address (contacts not yet looked up) */
  envelope: { from: string; recipients: ReadonlyArray<{ address: string }> },
  smtp: SmtpConfig,
  now: number,
): Omit<Vetted, "senderCheck"> {
  const domain = envelope.from.slice(envelope.from.lastIndexOf("@") + 1).toLowerCase();
  checkFresh(signed, now, smtp.senderAuth.maxMessageAgeHours);
  // a fax address as RCPT reads it: the number, or the contact name; null for any other address
  const targetOf = (address: string): string | null => {
    const c = checkRecipient(address, smtp.domains, smtp.defaultCountryCode);
    if (!c.ok) return null;
    // a contact name has a letter, a number none: the two cannot meet
    return c.target.kind === "number" ? c.target.e164 : `contact ${c.target.name.toLowerCase()}`;
  };
  const asked = envelope.recipients.map((r) => ({ shown: r.address, target: targetOf(r.address) ?? "" }));
  checkWritten(signed, asked, targetOf);
  const required = smtp.senderAuth.domains[domain]?.requireSignedRecipients === true;
  const recipientsProved = recipientsProof(signed.recipientsSigned, domain, required);
  return {
    recipientsProved,
    // Each number once, whichever transaction of a split delivery brings it; but where the To/Cc
    // are not signed, anyone may add a number to them: then the message is used once, whole.
    ...(signed.keys.length
      ? {
          replay: {
            keys: signed.keys,
            // by the number or contact as written: recorded before any contact is looked up
            ...(recipientsProved ? { numbers: [...new Set(asked.map((a) => a.target))] } : {}),
          },
        }
      : {}),
  };
}
