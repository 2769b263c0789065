// What a trusted relay's Authentication-Results say about the envelope sender's domain. A relay
// that let an Internet forgery of a colleague's address through has usually recorded so (dmarc=fail,
// or spf=fail with no DKIM pass): that is refused. A forged field saying "fail" only hurts its
// forger, so without named authserv-ids every field is read; with them, only the relay's own
// fields are, and `pass` mode also requires one of them to record a pass.
import { aligned, type SenderVerdict } from "./verdict.js";
import { headerFields, parseAuthResults, type AuthResult } from "./auth-results.js";
import { refuseWith } from "../smtp-reply.js";

export interface RelayCheckOptions {
  mode: "failures" | "pass";
  authservIds: readonly string[];
  strict: boolean;
}

const domainPart = (v: string | undefined): string | undefined =>
  v === undefined ? undefined : v.slice(v.lastIndexOf("@") + 1).toLowerCase();

function refused(reply: string, detail: string): SenderVerdict {
  return { ok: false, check: "relay", temporary: false, refusal: refuseWith("SENDER_UNVERIFIED", reply), detail };
}

export function checkRelayResults(headers: string, domain: string, opts: RelayCheckOptions): SenderVerdict {
  const ids = opts.authservIds.map((i) => i.toLowerCase());
  const fields = headerFields(headers, "authentication-results")
    .map(parseAuthResults)
    .filter((f): f is NonNullable<typeof f> => f !== null && (ids.length === 0 || ids.includes(f.authservId)));
  // a result about another domain (a From: the relay checked for someone else) says nothing here
  const about = (r: AuthResult, key: string): boolean => {
    const d = domainPart(r.props[key]);
    return d === undefined || aligned(d, domain, opts.strict);
  };
  const results = fields.flatMap((f) => f.results.map((r) => ({ ...r, by: f.authservId })));
  const dmarc = results.filter((r) => r.method === "dmarc" && about(r, "header.from"));
  const spf = results.filter((r) => r.method === "spf" && about(r, "smtp.mailfrom"));
  const dkimPass = results.some((r) => r.method === "dkim" && r.result === "pass" && about(r, "header.d"));
  const summary = `relay results: ${results.map((r) => `${r.method}=${r.result} by ${r.by}`).join(", ") || "none"}`;

  const dmarcFail = dmarc.find((r) => r.result === "fail");
  if (dmarcFail) {
    return refused(
      `550 5.7.26 Your mail relay (${dmarcFail.by}) found that this message fails the DMARC policy of ${domain}: it was not sent by ${domain}'s own mail system, so it is not faxed`,
      summary,
    );
  }
  const spfFail = spf.find((r) => r.result === "fail");
  if (spfFail && !dkimPass) {
    return refused(
      `550 5.7.23 Your mail relay (${spfFail.by}) found that this message fails SPF for ${domain} and carries no valid DKIM signature: it was not sent by ${domain}'s own mail system, so it is not faxed`,
      summary,
    );
  }
  if (opts.mode === "pass") {
    const passed = dmarc.some((r) => r.result === "pass") || (spf.some((r) => r.result === "pass") && dkimPass);
    if (!passed) {
      return refused(
        `550 5.7.26 Your mail relay (${ids.join(", ") || "any"}) recorded no DMARC pass (or SPF and DKIM pass) for ${domain}: only mail it has verified is faxed`,
        summary,
      );
    }
    return { ok: true, check: "relay", detail: `relay recorded a pass for ${domain}; ${summary}` };
  }
  return { ok: true, check: "trusted", detail: `trusted network; ${summary}` };
}
