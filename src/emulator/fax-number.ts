// Destination numbers as the service checks them: E.164 ("+" and 8 to 15 digits), or digits and
// the usual punctuation that form one. Ten bare digits are a North American number (+1), which is
// how the service's own contacts are written: "(555) 010-0100".
import { invalid } from "./api-error.js";

export function parseDestination(raw: string): string {
  const input = raw.trim();
  if (input === "") throw invalid("faxNumber is required");
  if (!/^\+?[\d\s().-]+$/.test(input))
    throw invalid(`fax number "${input.slice(0, 40)}" is not valid: only digits, + ( ) - . and spaces are allowed`);
  const digits = input.replace(/\D/g, "");
  if (input.startsWith("+")) {
    if (digits.length < 8 || digits.length > 15)
      throw invalid(`fax number "${input}" is not valid: E.164 numbers have 8 to 15 digits`);
    return `+${digits}`;
  }
  if (digits.length === 10) return `+1${digits}`;
  if (digits.length < 8 || digits.length > 15)
    throw invalid(`fax number "${input}" is not valid: use + and the country code, 8 to 15 digits`);
  return `+${digits}`;
}

/** Contact phone/fax fields: the (***) ***-**** form, or any 7 to 15 digit number. */
export function formatContactNumber(raw: string | undefined, field: string): string | null | undefined {
  if (raw === undefined) return undefined;
  const v = raw.trim();
  if (v === "") return null;
  if (!/^\+?[\d\s().-]+$/.test(v)) throw invalid(`${field} "${v.slice(0, 40)}" is not a phone number`);
  const d = v.replace(/\D/g, "");
  if (d.length < 7 || d.length > 15) throw invalid(`${field} "${v}" must have 7 to 15 digits`);
  if (d.length === 10 && !v.startsWith("+")) return `(${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`;
  return v;
}
