// RCPT TO rules: only `<number or name>@<one of smtp.domains>`, nothing that any mail software
// could route further. Every relay trick (a%b@, @a:b@c source routes, quoted local parts, a second
// @, ! bang paths, sub- or look-alike domains) is refused here, before any lookup happens.
import type { FaxgateError } from "../errors.js";
import { normalizeFaxNumber } from "../recipients/index.js";
import { refuse } from "./smtp-reply.js";

export type RecipientTarget =
  | { kind: "number"; e164: string; local: string }
  | { kind: "name"; name: string; local: string };

export type RecipientCheck = { ok: true; target: RecipientTarget } | { ok: false; refusal: FaxgateError };

// Digits, letters and the separators people put in numbers and contact names. No %, !, ", @, :.
const LOCAL_OK = /^[A-Za-z0-9+\-.()_]+$/;

function relayDenied(address: string, why: string): RecipientCheck {
  return { ok: false, refusal: refuse("RELAY_DENIED", `Relay denied for <${clip(address)}>: ${why}`) };
}

export function checkRecipient(
  address: string,
  domains: readonly string[],
  defaultCountryCode: string,
): RecipientCheck {
  const a = address.trim();
  if (a.startsWith("@") || a.includes(":") || a.includes(",")) return relayDenied(a, "source routes are not accepted");
  if (a.includes('"') || a.includes("\\")) return relayDenied(a, "quoted local parts are not accepted");
  const at = a.lastIndexOf("@");
  if (at <= 0) return relayDenied(a, "only <fax number>@<fax domain> addresses are accepted");
  if (a.indexOf("@") !== at) return relayDenied(a, "the address has more than one @");
  const local = a.slice(0, at);
  const domain = a
    .slice(at + 1)
    .toLowerCase()
    .replace(/\.$/, "");
  if (local.includes("%")) return relayDenied(a, "% routing is not accepted");
  if (local.includes("!")) return relayDenied(a, "! bang paths are not accepted");
  if (!domains.some((d) => d.toLowerCase().replace(/\.$/, "") === domain)) {
    return relayDenied(a, `this gateway only accepts mail for ${domains.join(", ")}`);
  }
  if (!LOCAL_OK.test(local)) return relayDenied(a, "the local part may only hold a fax number or a contact name");

  if (/[A-Za-z]/.test(local)) return { ok: true, target: { kind: "name", name: local, local } };
  const n = normalizeFaxNumber(local, defaultCountryCode);
  if (!n.ok) return { ok: false, refusal: refuse("BAD_NUMBER", `Bad fax number in <${clip(a)}>: ${n.reason}`) };
  return { ok: true, target: { kind: "number", e164: n.e164, local } };
}

function clip(s: string): string {
  // an address is shown to its sender and logged: one line, bounded
  const line = s.replace(/[\u0000-\u001f\u007f]+/g, " ");
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}
