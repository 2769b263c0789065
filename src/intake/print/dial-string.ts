// The print dialog's fax number: CUPS hands an IPP FaxOut job's destination to the backend as the
// job options `phone` (a dial string) and `faxPrefix` (the outside-line prefix, IPP's
// pre-dial-string), and `lp -o phone=...` sets the same options on any CUPS. A dial string is
// made for a modem: "9,15551234567" dials 9, waits, then dials the number; "p"/"w" are pauses.
// A cloud fax service dials E.164 numbers, so the pauses go (with a note) and the prefix is
// stripped or kept by the operator's rule (spool.faxPrefix). CUPS joins several values of one
// option with commas, so a comma both ends a prefix and separates numbers: a piece too short to
// be a fax number is never guessed at, it refuses the job saying how to write it.

export type FaxPrefixRule = "strip" | "keep";

export type DialResult = { ok: true; numbers: string[]; notes: string[] } | { ok: false; reason: string };

/** What CUPS lets through in a tel: dial string: digits, + * # ( ) . - space, and , p w pauses. */
const ALLOWED = /^[0-9+*#().\- ,pPwW]*$/;
const PAUSES = /[pPwW]/g;
const MIN_DIGITS = 4;

export function readPhoneOption(phone: string, faxPrefix: string | undefined, rule: FaxPrefixRule): DialResult {
  const raw = phone.trim();
  if (!ALLOWED.test(raw)) {
    return {
      ok: false,
      reason: `the phone option "${clip(raw)}" has characters a dial string cannot have; use digits, + ( ) . - and spaces`,
    };
  }
  if (/[*#]/.test(raw)) {
    return {
      ok: false,
      reason: `the phone option "${clip(raw)}" has * or #, tones the fax service cannot dial; give the fax number alone`,
    };
  }
  const notes: string[] = [];
  const prefixRaw = (faxPrefix ?? "").trim();
  if (prefixRaw && !/^[0-9 ,pPwW-]*$/.test(prefixRaw)) {
    return {
      ok: false,
      reason: `the faxPrefix option "${clip(prefixRaw)}" is not an outside-line prefix (digits only)`,
    };
  }
  const prefix = prefixRaw.replace(/[^0-9]/g, "");

  let pieces = raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  // "9,1555..." or "9p1555...": the prefix dialled first, then a pause
  let prefixDialled = false;
  if (prefix) {
    if (pieces[0] !== undefined && digitsOf(pieces[0]) === prefix && !/[pPwW]/.test(pieces[0])) {
      pieces = pieces.slice(1);
      prefixDialled = true;
    } else if (pieces[0] !== undefined) {
      const m = /^\s*([0-9]+)\s*[pPwW]+(.*)$/.exec(pieces[0]);
      if (m && m[1] === prefix) {
        pieces[0] = m[2]!;
        prefixDialled = true;
      }
    }
  }
  const paused = pieces.some((p) => /[pPwW]/.test(p));
  pieces = pieces.map((p) => p.replace(PAUSES, "").trim()).filter(Boolean);
  if (paused) notes.push("pauses (p, w) in the phone option were dropped: the fax service dials the number itself");

  const numbers: string[] = [];
  for (const p of pieces) {
    const digits = digitsOf(p);
    if (digits.length < MIN_DIGITS) {
      const hint =
        numbers.length === 0 && !prefix
          ? `; if ${p} is the outside-line prefix, say so: -o faxPrefix=${digits}`
          : "; give each fax number whole, separated by commas";
      return {
        ok: false,
        reason: `"${clip(p)}" in the phone option "${clip(raw)}" is too short to be a fax number${hint}`,
      };
    }
    numbers.push(prefix && rule === "keep" && !p.startsWith("+") ? `${prefix}${digits}` : p);
  }
  if (prefix) {
    notes.push(
      rule === "keep"
        ? `the outside-line prefix ${prefix} was kept in front of each number (spool.faxPrefix: keep)`
        : `the outside-line prefix ${prefix} was ${prefixDialled ? "stripped" : "not dialled"}: the fax service dials out itself (spool.faxPrefix: strip)`,
    );
  }
  if (numbers.length === 0) return { ok: false, reason: `the phone option "${clip(raw)}" has no fax number in it` };
  return { ok: true, numbers, notes };
}

function digitsOf(s: string): string {
  return s.replace(/[^0-9]/g, "");
}

function clip(s: string): string {
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
