// Who an ID token names, and whether faxgate lets them in: the person must be one faxgate knows
// (the live users list: by e-mail, alias or name, case-insensitive), in one of the allowed groups
// when groups are set, and, with requireMfa, proved with a second factor. Each refusal names its
// reason, for the page the person sees and the ledger row.

/** `amr` values (RFC 8176, and Entra ID's/Okta's usual ones) that name a second factor. */
const SECOND_FACTORS = new Set([
  "mfa",
  "otp",
  "hwk",
  "swk",
  "fido",
  "sc",
  "sms",
  "tel",
  "face",
  "fpt",
  "iris",
  "retina",
  "vbm",
  "pop",
  "wia",
]);

export interface ClaimRules {
  personClaim: string;
  groups?: readonly string[];
  requireMfa: boolean;
  mfaAcr: readonly string[];
}

export interface KnownPerson {
  name: string;
  email: string;
  aliases?: readonly string[];
}

export type ClaimVerdict<P> =
  | { ok: true; person: P; mfa: boolean }
  | { ok: false; reason: "no-person-claim" | "unknown-person" | "not-in-groups" | "no-second-factor"; message: string };

/** Whether the token proved a second factor: an `amr` naming one, or an `acr` the config counts as one. */
export function provedSecondFactor(claims: Record<string, unknown>, mfaAcr: readonly string[]): boolean {
  const amr = Array.isArray(claims.amr) ? claims.amr.filter((v): v is string => typeof v === "string") : [];
  if (amr.some((m) => SECOND_FACTORS.has(m.toLowerCase()))) return true;
  return typeof claims.acr === "string" && mfaAcr.includes(claims.acr);
}

export function judgeClaims<P extends KnownPerson>(
  claims: Record<string, unknown>,
  rules: ClaimRules,
  people: readonly P[],
): ClaimVerdict<P> {
  const named = claims[rules.personClaim];
  if (typeof named !== "string" || named === "") {
    return {
      ok: false,
      reason: "no-person-claim",
      message: `the provider's ID token has no "${rules.personClaim}" claim (web.oidc.personClaim)`,
    };
  }
  const want = named.toLowerCase();
  const person = people.find(
    (p) =>
      p.email.toLowerCase() === want ||
      p.name.toLowerCase() === want ||
      (p.aliases ?? []).some((a) => a.toLowerCase() === want),
  );
  if (!person)
    return {
      ok: false,
      reason: "unknown-person",
      message: "your account at the provider is not a person this gateway knows",
    };
  if (rules.groups) {
    const groups = Array.isArray(claims.groups) ? claims.groups.filter((g): g is string => typeof g === "string") : [];
    if (!groups.some((g) => rules.groups!.includes(g)))
      return {
        ok: false,
        reason: "not-in-groups",
        message: "your account is in none of the groups allowed to use this console",
      };
  }
  const mfa = provedSecondFactor(claims, rules.mfaAcr);
  if (rules.requireMfa && !mfa)
    return {
      ok: false,
      reason: "no-second-factor",
      message:
        "this console needs a sign-in with a second factor (a passkey, an authenticator app code); sign in again with one",
    };
  return { ok: true, person, mfa };
}
