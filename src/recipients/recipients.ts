// The one recipient decision for every caller (SMTP RCPT, the print spool, the mailbox,
// `faxgate send`, the console, and the dispatcher's last look before a send): what was named, a
// number or a contact's name, becomes an E.164 number, and the destination policy says whether
// this user may dial it, by the user's own rules first, then the gateway's, then the built-in
// refusals. Each caller words the refusal for its own client; the decision is made here once.
import type { FaxApi } from "../fax/index.js";
import type { NewRecipient } from "../store/index.js";
import { resolveContact } from "./contact-lookup.js";
import {
  checkDestination,
  type DestinationCheck,
  type DestinationRules,
  type GatewayDestinations,
} from "./destination-policy.js";
import { normalizeFaxNumber } from "./fax-number.js";

/** A number as a person wrote it, one already in E.164, or a contact's name. */
export type RecipientEntry = { number: string } | { e164: string } | { contact: string };

export type RecipientDecision =
  | { ok: true; recipient: NewRecipient }
  | { ok: false; code: "BAD_NUMBER"; reason: string }
  | { ok: false; code: "DESTINATION_REFUSED"; number: string; reason: string };

export interface RecipientRules {
  /** The destination policy (destinationPolicy()). */
  destinations: DestinationCheck;
  defaultCountryCode: string;
  /** The user's API client, to look contact names up (called only for a contact). */
  contacts?: () => FaxApi;
}

type UserRules = { name: string; destinations?: DestinationRules };

/**
 * The destination policy of a gateway config and its users: the user's own rules, then the
 * gateway's (destinations.rules), then the built-in categories. Both are read at each call, so a
 * reload (SIGHUP) applies at once.
 */
export function destinationPolicy(
  gateway: () => GatewayDestinations | undefined,
  users: () => ReadonlyArray<UserRules>,
): DestinationCheck {
  return (userName, e164) =>
    checkDestination(e164, gateway() ?? {}, users().find((u) => u.name === userName) ?? { name: userName });
}

/**
 * The number an entry names, without the policy: a contact is looked up with the user's key
 * (its errors, UNKNOWN_CONTACT and the service's, are thrown as they are).
 */
export async function recipientNumber(
  entry: RecipientEntry,
  rules: Pick<RecipientRules, "defaultCountryCode" | "contacts">,
): Promise<{ ok: true; recipient: NewRecipient } | { ok: false; code: "BAD_NUMBER"; reason: string }> {
  if ("e164" in entry) return { ok: true, recipient: { number: entry.e164 } };
  if ("contact" in entry && rules.contacts) {
    const c = await resolveContact(rules.contacts(), entry.contact, rules.defaultCountryCode);
    return { ok: true, recipient: { number: c.e164, name: c.name } };
  }
  const raw = "contact" in entry ? entry.contact : entry.number;
  const n = normalizeFaxNumber(raw, rules.defaultCountryCode);
  return n.ok ? { ok: true, recipient: { number: n.e164 } } : { ok: false, code: "BAD_NUMBER", reason: n.reason };
}

/** An entry to a recipient this user may fax, or the reason it may not be. */
export async function decideRecipient(
  user: string,
  entry: RecipientEntry,
  rules: RecipientRules,
): Promise<RecipientDecision> {
  const found = await recipientNumber(entry, rules);
  if (!found.ok) return found;
  const v = rules.destinations(user, found.recipient.number);
  return v.ok ? found : { ok: false, code: "DESTINATION_REFUSED", number: found.recipient.number, reason: v.reason };
}
