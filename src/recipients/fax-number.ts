// Fax numbers as people write them ("+1 (555) 123-4567", "15551234567", "555.123.4567") turned
// into E.164 ("+15551234567"). Shared by SMTP, spool, CLI and CUPS tickets so they all agree.
// We check that a number is *possible* (right length for its country), not that it is assigned:
// fictional 555 numbers must work for tests and demos, and the service has the last word.
import {
  getCountries,
  getCountryCallingCode,
  parsePhoneNumberFromString,
  validatePhoneNumberLength,
  type CountryCode,
} from "libphonenumber-js";
import { faxNumber } from "../format.js";
import { memoize } from "../memo.js";

export type FaxNumberResult = { ok: true; e164: string } | { ok: false; reason: string };

const IGNORED = /[\s+\-.()]/g;
const MAX_INPUT_CHARS = 100;
const LENGTH_REASONS: Record<string, string> = {
  TOO_SHORT: "is too short",
  TOO_LONG: "is too long",
  INVALID_LENGTH: "has the wrong number of digits",
  INVALID_COUNTRY: "has no valid country code",
  NOT_A_NUMBER: "is not a number",
};

export function normalizeFaxNumber(raw: string, defaultCountryCode: string): FaxNumberResult {
  // the answers are frozen: one is handed to every caller that asks about the same number
  return normalizeKnown(`${defaultCountryCode}\n${raw}`);
}

const normalizeKnown = memoize((key: string): FaxNumberResult => {
  const nl = key.indexOf("\n");
  return Object.freeze(normalize(key.slice(nl + 1), key.slice(0, nl)));
});

function normalize(raw: string, defaultCountryCode: string): FaxNumberResult {
  const input = raw.trim();
  // no number people write is this long: refused before any work that grows with it
  if (input.length > MAX_INPUT_CHARS) return { ok: false, reason: `"${clip(input)}" is too long for a fax number` };
  // dialled from here to abroad: "011 44 20 7946 0958" where the default country is 1, "0011 ..."
  // for 61, "810 ..." for 7; libphonenumber's metadata knows each country's international prefix
  const country = countryOf(defaultCountryCode);
  if (country && !input.startsWith("+") && /^[\d\s\-.()]+$/.test(input)) {
    const abroad = parsePhoneNumberFromString(input, country);
    if (abroad && abroad.countryCallingCode !== defaultCountryCode && abroad.isPossible())
      return { ok: true, e164: abroad.number };
  }
  const international = input.startsWith("+") || input.startsWith("00");
  let digits = input.replace(IGNORED, "");
  if (digits === "") return { ok: false, reason: "no fax number was given" };
  if (!/^\d+$/.test(digits))
    return { ok: false, reason: `"${clip(input)}" contains characters other than digits and + - . ( ) spaces` };
  if (!input.startsWith("+") && digits.startsWith("00")) digits = digits.slice(2);
  if (digits.length < 4 || digits.length > 15)
    return { ok: false, reason: `"${clip(input)}" must have 4 to 15 digits` };

  const candidates = international
    ? [`+${digits}`]
    : digits.startsWith(defaultCountryCode)
      ? [`+${digits}`, `+${defaultCountryCode}${digits}`]
      : [`+${defaultCountryCode}${digits}`, `+${digits}`];

  for (const c of candidates) {
    const parsed = parsePhoneNumberFromString(c);
    if (parsed?.isPossible()) return { ok: true, e164: parsed.number };
  }
  // the international prefix followed by our own country code: "011 1 555 123 4567"
  if (!international && country) {
    const parsed = parsePhoneNumberFromString(input, country);
    if (parsed?.isPossible()) return { ok: true, e164: parsed.number };
  }
  const why = validatePhoneNumberLength(candidates[0]!) ?? "INVALID_LENGTH";
  return { ok: false, reason: `"${clip(input)}" ${LENGTH_REASONS[why] ?? "is not a possible fax number"}` };
}

/** A country that uses this calling code (they share their international prefix), or null. */
const countryOf = memoize(
  (code: string): CountryCode | null => getCountries().find((c) => getCountryCallingCode(c) === code) ?? null,
);

/** "+15551234567" -> "+1 555-123-4567" for people: src/format.ts's faxNumber, the one way. */
export function formatFaxNumber(e164: string): string {
  return faxNumber(e164) ?? e164;
}

/** The service's contact format "(***) ***-****" for a NANP number, else E.164. */
export function toContactFormat(e164: string): string {
  const m = /^\+1(\d{3})(\d{3})(\d{4})$/.exec(e164);
  return m ? `(${m[1]}) ${m[2]}-${m[3]}` : e164;
}

function clip(s: string): string {
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}
