// Which fax numbers this gateway dials at all (toll fraud: a stolen password or a hostile document
// must not call a premium-rate line). One pure function, called wherever a number is accepted and
// again by the dispatcher before a send. Order: the user's rules, then the gateway's (first match
// wins), then the built-in categories in `destinations.refuse`. Patterns are digit strings with
// `#` and a trailing `*`, never a regular expression, so matching stays linear.
import { parsePhoneNumberFromString, type PhoneNumber } from "libphonenumber-js/max";

import { DESTINATION_CATEGORIES } from "../config/index.js";
import { memoize } from "../memo.js";

export { DESTINATION_CATEGORIES };
export type DestinationCategory = (typeof DESTINATION_CATEGORIES)[number];

const CATEGORY_TEXT: Record<DestinationCategory, string> = {
  "premium-rate": "a premium-rate number",
  "shared-cost": "a shared-cost number",
  "personal-number": "a personal (follow-me) number",
  voicemail: "a voicemail access number",
  pager: "a pager number",
  "international-network": "an international network or satellite number",
  emergency: "an emergency or special-service number",
};

export interface DestinationRule {
  action: "allow" | "deny";
  /** ISO 3166 region of the number, e.g. "GB" (numbers libphonenumber cannot place have none) */
  country?: string;
  /** the number starts with this, e.g. "+1900" */
  prefix?: string;
  /** the whole number: digits, `#` for any one digit, optional trailing `*` for any rest */
  pattern?: string;
  category?: DestinationCategory;
}

export interface DestinationRules {
  rules?: DestinationRule[];
}

export interface GatewayDestinations extends DestinationRules {
  refuse?: readonly DestinationCategory[];
}

export type DestinationVerdict = { ok: true } | { ok: false; rule: string; reason: string };

/** Checks one user's number against their rules, the gateway's rules, and the built-in categories. */
export type DestinationCheck = (user: string, e164: string) => DestinationVerdict;

// Emergency codes that begin a dialled string in many countries; only a number that is not a
// valid subscriber number counts (a real London number may well begin 0112...).
const EMERGENCY_STARTS = ["112", "911", "999", "000", "110", "119", "100", "101", "102", "108", "118"];
// Inmarsat, global satellite and international networks: charged as premium, popular for fraud.
const NETWORK_CODES = new Set(["870", "881", "882", "883"]);
// International premium rate (ITU +979) and NANP area codes reserved for pay-per-call.
const PREMIUM_PREFIXES = ["+979", "+1900", "+1976"];

/** Strips what people put between digits; keeps a leading + and the # and * of patterns. */
export function compactNumberSpec(spec: string): string {
  return spec.replace(/[\s\-.()]/g, "");
}

/** The built-in category of a number (E.164), or null for an ordinary one. */
export function categoryOf(e164: string, parsed = parsePhoneNumberFromString(e164)): DestinationCategory | null {
  if (PREMIUM_PREFIXES.some((p) => e164.startsWith(p))) return "premium-rate";
  if (!parsed) return null;
  const cc = parsed.countryCallingCode;
  const national = parsed.nationalNumber;
  if (NETWORK_CODES.has(cc)) return "international-network";
  if (isEmergency(parsed, cc, national)) return "emergency";
  switch (parsed.getType()) {
    case "PREMIUM_RATE":
      return "premium-rate";
    case "SHARED_COST":
      return "shared-cost";
    case "PERSONAL_NUMBER":
      return "personal-number";
    case "VOICEMAIL":
      return "voicemail";
    case "PAGER":
      return "pager";
    default:
      return null;
  }
}

function isEmergency(parsed: PhoneNumber, cc: string, national: string): boolean {
  // NANP N11 codes (211 ... 911) are service codes, never an area code or exchange.
  if (cc === "1" && (/^[2-9]11/.test(national) || /^\d{3}[2-9]11/.test(national))) return true;
  return !parsed.isValid() && EMERGENCY_STARTS.some((s) => national.startsWith(s));
}

function describeRule(r: DestinationRule): string {
  const parts = [
    r.country ? `country ${r.country}` : "",
    r.prefix ? `prefix ${r.prefix}` : "",
    r.pattern ? `pattern ${r.pattern}` : "",
    r.category ? `category ${r.category}` : "",
  ].filter(Boolean);
  return `${r.action} ${parts.join(" ")}`;
}

/** True when every matcher the rule has matches the number. */
export function ruleMatches(
  r: DestinationRule,
  e164: string,
  region: string | undefined,
  category: DestinationCategory | null,
): boolean {
  if (r.country && r.country.toUpperCase() !== region) return false;
  if (r.prefix && !e164.startsWith(withPlus(compactNumberSpec(r.prefix)))) return false;
  if (r.pattern && !patternMatches(withPlus(compactNumberSpec(r.pattern)), e164)) return false;
  if (r.category && r.category !== category) return false;
  return Boolean(r.country || r.prefix || r.pattern || r.category);
}

function withPlus(s: string): string {
  return s.startsWith("+") ? s : `+${s}`;
}

/** `#` is one digit, a trailing `*` any rest; one pass over the number, no backtracking. */
export function patternMatches(pattern: string, e164: string): boolean {
  const open = pattern.endsWith("*");
  const p = open ? pattern.slice(0, -1) : pattern;
  if (open ? e164.length < p.length : e164.length !== p.length) return false;
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    const d = e164[i]!;
    if (c === "#" ? !/\d/.test(d) : c !== d) return false;
  }
  return true;
}

/** A number's built-in category and country, worked out once per number (see memo.ts). */
const numberFacts = memoize((e164: string): { category: DestinationCategory | null; region: string | undefined } => {
  const parsed = parsePhoneNumberFromString(e164);
  return Object.freeze({ category: categoryOf(e164, parsed), region: parsed?.country });
});

export function checkDestination(
  e164: string,
  gateway: GatewayDestinations = {},
  user?: { name: string; destinations?: DestinationRules },
): DestinationVerdict {
  const { category, region } = numberFacts(e164);
  const lists: Array<[string, DestinationRule[]]> = [
    [`users[${user?.name ?? "?"}].destinations.rules`, user?.destinations?.rules ?? []],
    ["destinations.rules", gateway.rules ?? []],
  ];
  for (const [where, rules] of lists) {
    const i = rules.findIndex((r) => ruleMatches(r, e164, region, category));
    if (i < 0) continue;
    const r = rules[i]!;
    if (r.action === "allow") return { ok: true };
    const name = `${where}[${i}] (${describeRule(r)})`;
    return {
      ok: false,
      rule: name,
      reason: `${e164} is refused by the rule ${name}${category ? `; it is ${CATEGORY_TEXT[category]}` : ""}`,
    };
  }
  const refuse = gateway.refuse ?? DESTINATION_CATEGORIES;
  if (category && refuse.includes(category)) {
    return {
      ok: false,
      rule: category,
      reason: `${e164} is ${CATEGORY_TEXT[category]}, refused by the destination policy (built-in rule "${category}"; an administrator can allow it in destinations.rules)`,
    };
  }
  return { ok: true };
}
