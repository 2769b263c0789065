// What the Authentication-Results of a host we trust (a relay in trustedNetworks, a mailbox
// provider) say about a sender's domain: one rule for every door. Only the TOPMOST field counts:
// the trusted host adds its own on top, and every field below came with the message, written by
// whoever sent it. So a topmost field that cannot be read, or that is not the trusted host's,
// refuses; nothing lower is ever searched for a better answer. A *pass* is believed only from a
// host named by its authserv-id (or, for Exchange Online, by the operator's provider switch); a
// *fail* is believed from any, since a forged fail only hurts its forger.
import { aligned } from "./alignment.js";
import { parseAuthResults, type AuthResult } from "./auth-results.js";

export interface TrustedHost {
  /** the authserv-ids whose passes count; with none named, only failures are read */
  authservIds: readonly string[];
  /** the topmost field names no authserv-id and is still the provider's (Exchange Online) */
  idLess?: boolean;
  /** DMARC alignment of the results' domains with the sender's: strict or relaxed */
  strict: boolean;
}

export type HostVerdict =
  /** no Authentication-Results at all */
  | { kind: "absent" }
  /** the topmost field cannot be read, or is not the trusted host's: `why` says which */
  | { kind: "untrusted"; why: string; summary: string }
  /** the trusted host recorded that the domain's own mail system did not send it */
  | { kind: "fail"; method: "dmarc" | "spf"; by: Author; dkimUnnamed: boolean; summary: string }
  /** a named host recorded a DMARC pass, or an aligned DKIM pass where the domain has no DMARC */
  | { kind: "pass"; how: string; by: Author; summary: string }
  /** neither: the field says nothing decisive about this domain */
  | { kind: "none"; by: Author; named: boolean; summary: string };

/** Who wrote the topmost field: its authserv-id (clipped for replies), or null when it names nobody. */
export type Author = string | null;

const domainPart = (v: string | undefined): string | undefined =>
  v === undefined || v === "" ? undefined : v.slice(v.lastIndexOf("@") + 1).toLowerCase();

/** How a field's author is shown in a reply or a log line. */
export const authorOf = (id: Author): string => (id === null ? "a header with no authserv-id" : id);

/**
 * The verdict of the topmost of `fields` (the Authentication-Results values, top first) on
 * `domain`, the sender's domain.
 */
export function judgeTopmost(fields: readonly string[], domain: string, host: TrustedHost): HostVerdict {
  if (fields.length === 0) return { kind: "absent" };
  const top = parseAuthResults(fields[0]!);
  const ids = host.authservIds.map((i) => i.toLowerCase());
  if (!top)
    return { kind: "untrusted", why: "the topmost Authentication-Results cannot be read", summary: "unreadable" };
  const by = top.authservId === null ? null : top.authservId.slice(0, 80);
  const named = top.authservId === null ? host.idLess === true : ids.includes(top.authservId);
  const summary = `${authorOf(by)}: ${top.results.map((r) => `${r.method}=${r.result}`).join(" ") || "none"}`;
  if (!named && (ids.length > 0 || host.idLess))
    return {
      kind: "untrusted",
      why: `the topmost Authentication-Results is by ${authorOf(by)}, not by ${trustedList(host)}`,
      summary,
    };

  // a result about another domain (a From: the host checked for someone else) says nothing here
  const about = (r: AuthResult, ...keys: string[]): boolean => {
    const d = keys.map((k) => domainPart(r.props[k])).find((v) => v !== undefined);
    return d === undefined || aligned(d, domain, host.strict);
  };
  const dmarc = top.results.find((r) => r.method === "dmarc" && about(r, "header.from"));
  const spfFail = top.results.some(
    (r) => r.method === "spf" && r.result === "fail" && about(r, "smtp.mailfrom", "smtp.mail"),
  );
  const dkimPass = top.results.some(
    (r) => r.method === "dkim" && r.result === "pass" && about(r, "header.d", "header.i") && hasDomain(r),
  );

  if (dmarc?.result === "fail") return { kind: "fail", method: "dmarc", by, dkimUnnamed: false, summary };
  if (spfFail && !(named && dkimPass)) return { kind: "fail", method: "spf", by, dkimUnnamed: dkimPass, summary };
  if (named && dmarc?.result === "pass") return { kind: "pass", how: `DMARC pass for ${domain}`, by, summary };
  if (named && dkimPass && (!dmarc || dmarc.result === "none"))
    return { kind: "pass", how: `DKIM pass aligned with ${domain}`, by, summary };
  return { kind: "none", by, named, summary };
}

/** A DKIM result counts only when it says whose signature it was. */
const hasDomain = (r: AuthResult): boolean => domainPart(r.props["header.d"] ?? r.props["header.i"]) !== undefined;

function trustedList(host: TrustedHost): string {
  const names = [...host.authservIds, ...(host.idLess ? ["the provider's header with no authserv-id"] : [])];
  return names.join(", ");
}
