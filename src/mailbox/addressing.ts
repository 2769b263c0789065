// Where a mailbox message is to be faxed. Mail to a shared mailbox has no envelope recipient per
// fax number, so the number comes from the message itself, first source that names one wins:
//   1. plus addresses of the mailbox: fax+15551234567@acme.com (or fax+acme.billing@ for a contact)
//   2. the display part of the mailbox's address in To:/Cc: ("15551234567" <fax@acme.com>, or a
//      contact's name), else subject tags: [fax 15551234567], repeatable, "," between several
//   3. names from either are looked up among the user's contacts (the caller does that)
// Several numbers make one fax to each, as several SMTP recipients do.
import { normalizeFaxNumber } from "../recipients/index.js";

export type Destination =
  | { kind: "number"; e164: string; label: string }
  | { kind: "name"; name: string; label: string };

export type Addressing =
  | { ok: true; destinations: Destination[]; from: "plus address" | "display name" | "subject" }
  | { ok: false; reason: string };

export interface AddressedMessage {
  to: Array<{ name?: string; address?: string }>;
  subject: string;
}

const NUMBER_LIKE = /^[+\d\s\-.()]+$/;
// a contact name as people write one in an address or a subject; nothing that could be markup
const NAME_LIKE = /^[\p{L}\p{N}][\p{L}\p{N} .,'&_-]{0,79}$/u;
const MAX_CANDIDATES = 100;

function split(address: string): { local: string; domain: string } | null {
  const at = address.lastIndexOf("@");
  if (at <= 0) return null;
  return { local: address.slice(0, at).toLowerCase(), domain: address.slice(at + 1).toLowerCase() };
}

function candidate(raw: string, label: string, defaultCountryCode: string): Destination | { bad: string } {
  const text = raw.trim();
  if (NUMBER_LIKE.test(text)) {
    const n = normalizeFaxNumber(text, defaultCountryCode);
    return n.ok ? { kind: "number", e164: n.e164, label } : { bad: `${label}: ${n.reason}` };
  }
  // "acme.billing" in a plus address is "acme billing" to the contact lookup
  const name = text.replace(/[._]+/g, " ").trim();
  return NAME_LIKE.test(name)
    ? { kind: "name", name, label }
    : { bad: `${label}: "${text.slice(0, 40)}" is neither a fax number nor a contact name` };
}

/** Subject tags "[fax 1555...]" and "[fax 1555..., Acme Billing]", read in one pass. */
export function subjectTags(subject: string): string[] {
  const out: string[] = [];
  const text = subject.slice(0, 1000);
  let open = -1;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === "[") open = i;
    else if (c === "]" && open >= 0) {
      const m = /^\s*fax\s*:?\s+(.+)$/i.exec(text.slice(open + 1, i));
      if (m)
        out.push(
          ...m[1]!
            .split(/[,;]/)
            .map((s) => s.trim())
            .filter(Boolean),
        );
      open = -1;
    }
  }
  return out;
}

export function addressMessage(
  msg: AddressedMessage,
  mailboxAddress: string | undefined,
  defaultCountryCode: string,
): Addressing {
  const base = mailboxAddress ? split(mailboxAddress) : null;
  const plus: string[] = [];
  const display: string[] = [];
  for (const r of msg.to.slice(0, MAX_CANDIDATES)) {
    const a = r.address ? split(r.address) : null;
    if (!a || !base || a.domain !== base.domain) continue;
    const cut = a.local.indexOf("+");
    if (cut > 0 && a.local.slice(0, cut) === base.local)
      plus.push(r.address!.slice(cut + 1, r.address!.lastIndexOf("@")));
    else if (a.local === base.local && r.name?.trim()) display.push(r.name.trim());
  }
  const sources: Array<[Exclude<Addressing, { ok: false }>["from"], string[]]> = [
    ["plus address", plus],
    ["display name", display],
    ["subject", subjectTags(msg.subject)],
  ];
  for (const [from, raws] of sources) {
    if (raws.length === 0) continue;
    const destinations: Destination[] = [];
    const bad: string[] = [];
    for (const raw of raws.slice(0, MAX_CANDIDATES)) {
      const c = candidate(raw, `the ${from} "${raw.slice(0, 40)}"`, defaultCountryCode);
      if ("bad" in c) bad.push(c.bad);
      else destinations.push(c);
    }
    // never fewer faxes than the sender named: one bad destination refuses the message
    if (bad.length) return { ok: false, reason: bad.join("; ") };
    return { ok: true, destinations, from };
  }
  const how = base ? `${base.local}+15551234567@${base.domain}, ` : "";
  return {
    ok: false,
    reason: `no fax number was found: write it as ${how}"15551234567" as the recipient's name, or [fax 15551234567] in the subject`,
  };
}
