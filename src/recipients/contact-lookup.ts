// "acme.billing@fax.example.com" or "@@TO Acme Billing@@": a name instead of a number is looked
// up among the user's contacts (their own and the account's public ones) through the API.
import { FaxgateError } from "../errors.js";
import type { Contact, FaxApi } from "../fax/index.js";
import { normalizeFaxNumber } from "./fax-number.js";

export interface ResolvedContact {
  e164: string;
  name: string;
  contactId: string;
}

/** Compare names loosely: "acme.billing", "Acme Billing" and "acme_billing" are one name. */
export function nameKey(name: string): string {
  // bounded: no contact name is longer, and the work stays small whatever an address holds
  return name
    .slice(0, 200)
    .toLowerCase()
    .replace(/[\s._-]+/g, " ")
    .trim();
}

function flatten(rows: Contact[]): Contact[] {
  return rows.flatMap((c) => [c, ...(c.contacts ?? [])]);
}

/**
 * Finds exactly one contact whose name matches and who has a fax number.
 * Throws UNKNOWN_CONTACT (permanent, with a 553 reply) when there is none or several.
 */
export async function resolveContact(api: FaxApi, name: string, defaultCountryCode: string): Promise<ResolvedContact> {
  const wanted = nameKey(name);
  const search = wanted.split(" ")[0] ?? wanted;
  const page = await api.listContacts({ query: search, limit: 100 });
  const matches = flatten(page.rows).filter((c) => nameKey(c.name) === wanted && c.faxNumber);
  const unique = [...new Map(matches.map((c) => [c.uuid, c])).values()];
  if (unique.length === 0) {
    throw new FaxgateError("UNKNOWN_CONTACT", `no contact named "${name}" with a fax number`, {
      smtpReply: `553 5.1.1 No contact named "${name}" with a fax number`,
    });
  }
  if (unique.length > 1) {
    throw new FaxgateError("UNKNOWN_CONTACT", `several contacts are named "${name}"; use the fax number`, {
      smtpReply: `553 5.1.1 Several contacts are named "${name}"; use the fax number`,
    });
  }
  const c = unique[0]!;
  const n = normalizeFaxNumber(c.faxNumber!, defaultCountryCode);
  if (!n.ok) {
    throw new FaxgateError("BAD_NUMBER", `contact "${c.name}" has an unusable fax number: ${n.reason}`, {
      smtpReply: `553 5.1.3 Contact "${c.name}" has an unusable fax number`,
    });
  }
  return { e164: n.e164, name: c.name, contactId: c.uuid };
}
