// The public MX mode's one question (smtp.senderAuth, docs/mx.md): does this message prove that it
// comes from its envelope sender's domain? mailauth answers SPF, DKIM, DMARC and ARC; this file
// only decides what those answers mean for a fax and words the refusal (RFC 7372 codes) so that the
// sender can act on it. It runs once the message's bytes are in (DKIM needs the body) and before
// anything of the message is kept: the caller holds the job until the verdict is known.
import type { Readable } from "node:stream";
import { authenticate, dmarc as dmarcCheck, spf as spfCheck } from "mailauth";
import type { SenderAuthConfig } from "../../config/index.js";
import type { DnsResolve } from "../../dns/index.js";
import type { FaxgateError } from "../../errors.js";
import {
  type DkimOutcome,
  readSignedMessage,
  aligned,
  headerFields,
  readHeaderBlock,
  judgeTopmost,
} from "../../mail-auth/index.js";
import { refuseWith } from "../smtp-reply.js";
import { UnverifiedSlots } from "./unverified-slots.js";
import type { SenderVerdict, VerdictCheck } from "./verdict.js";

export type { SenderVerdict, VerdictCheck } from "./verdict.js";

export interface SenderInput {
  envelopeFrom: string;
  remoteAddress: string;
  /** the name the client gave at EHLO/HELO */
  clientHostname: string;
  /** how the session came: a trusted network, SMTP AUTH, or a stranger (the public MX case) */
  via: "trusted" | "auth" | "stranger";
  /** a fresh reader of the whole message each call (the held bytes, or its file) */
  message: () => Buffer | Readable;
}

const domainOf = (address: string): string => address.slice(address.lastIndexOf("@") + 1).toLowerCase();

/** A domain name read from the message, fit to be quoted in a reply (the sender wrote it). */
const shownDomain = (v: unknown): string | undefined =>
  String(v ?? "")
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, "?")
    .slice(0, 80) || undefined;

function refusal(reply: string): FaxgateError {
  return refuseWith(reply.startsWith("4") ? "SENDER_CHECK_TEMPORARY" : "SENDER_UNVERIFIED", reply);
}

function fail(check: VerdictCheck, reply: string, detail: string): SenderVerdict {
  return { ok: false, check, temporary: reply.startsWith("4"), refusal: refusal(reply), detail };
}

// mailauth's result shapes, as far as they are read here
interface DkimRow {
  signingDomain?: string;
  status: { result: string; comment?: string | false; aligned?: string | false; underSized?: number };
}
interface AuthOutcome {
  dkim: { headerFrom?: string[]; results?: DkimRow[] } & DkimOutcome;
  spf: { status: { result: string; comment?: string }; domain?: string } | false;
  dmarc:
    | {
        status: { result: string };
        policy?: string;
        domain?: string;
        alignment?: { spf?: { result?: string | false }; dkim?: { result?: string | false } };
      }
    | false;
  arc:
    | {
        status: { result: string; comment?: string | false };
        authenticationResults?: { dmarc?: { result?: string; header?: { from?: string } } };
        /** the ARC sets, oldest first (mailauth: a non-enumerable property) */
        chain?: Array<{ "arc-seal"?: { parsed?: { d?: { value?: string | number } } } }> | false;
      }
    | false;
}

/** What mailauth found, read once for every rule that judges it. */
interface Evidence {
  spfResult: string;
  /** DKIM signatures found (an unsigned message's one row "none" left out) */
  dkimRows: DkimRow[];
  dkimPass: DkimRow[];
  /** a passing signature of the sender's own domain (aligned as the config says) */
  alignedDkim: DkimRow | undefined;
  dmarc: string;
  /** one line for the log: spf=... dkim=... dmarc=... */
  summary: string;
}

function readEvidence(res: AuthOutcome, domain: string, strict: boolean): Evidence {
  const spfResult = res.spf ? res.spf.status.result : "none";
  // mailauth reports an unsigned message as one row 'none': no signature at all
  const dkimRows = (res.dkim.results ?? []).filter((r) => r.status.result !== "none");
  const dkimPass = dkimRows.filter((r) => r.status.result === "pass" && r.signingDomain);
  const alignedDkim = dkimPass.find((r) => aligned(r.signingDomain!, domain, strict));
  const dmarc = res.dmarc ? res.dmarc.status.result : "none";
  const summary = `spf=${spfResult} dkim=${alignedDkim ? `pass (${alignedDkim.signingDomain})` : dkimRows.map((r) => r.status.result).join(",") || "none"} dmarc=${dmarc}`;
  return { spfResult, dkimRows, dkimPass, alignedDkim, dmarc, summary };
}

/** DMARC judges the From: domain; a fax is charged to the envelope sender: they must be one. */
function fromIsNotSender(res: AuthOutcome, sender: string): SenderVerdict | null {
  const from = (res.dkim.headerFrom ?? []).map((a) => a.toLowerCase());
  if (from.length === 1 && from[0] === sender) return null;
  const shown =
    from.length === 0 ? "missing" : from.length > 1 ? `${from.length} addresses` : `<${from[0]!.slice(0, 80)}>`;
  return fail(
    "from",
    `550 5.7.26 The From: header (${shown}) is not the envelope sender <${sender.slice(0, 80)}>: faxes are taken only from mail whose From: is the sending user's own address`,
    `from=${shown}`,
  );
}

export class SenderVerifier {
  private readonly slots: UnverifiedSlots;

  constructor(
    private readonly config: SenderAuthConfig,
    private readonly resolve: DnsResolve,
    /** our name in the Authentication-Results mailauth writes (not kept) */
    private readonly hostname: string,
  ) {
    this.slots = new UnverifiedSlots(config.maxUnverifiedSessions);
  }

  /**
   * A session from outside trustedNetworks is greeted (`greet` runs) at once when its address
   * has sent verified mail lately or a slot is free, else when a slot frees (unverified-slots.ts).
   * Only in verify mode: otherwise strangers cannot send at all and are greeted at once.
   */
  admitStranger(sessionId: string, client: string, greet: () => void): void {
    if (!this.verifying) return greet();
    this.slots.enter(sessionId, client, greet);
  }

  /** A session closed: a slot it held (or its place in the queue) is given up. */
  sessionClosed(sessionId: string): void {
    this.slots.leave(sessionId);
  }

  /** Sessions waiting for a slot. */
  get queuedStrangers(): number {
    return this.slots.queued;
  }

  /** A stranger's verdict is remembered for its address: a pass skips the queue next time. */
  private remember(client: string, verdict: SenderVerdict | null): SenderVerdict | null {
    if (verdict?.ok) this.slots.passed(client);
    else if (verdict && !verdict.temporary) this.slots.failed(client);
    return verdict;
  }

  /** Strangers may send (with proof) only in verify mode. */
  get verifying(): boolean {
    return this.config.mode === "verify";
  }

  /**
   * At MAIL FROM, before the body is sent: a domain without DMARC whose rule needs SPF, and whose
   * SPF does not pass for this client, cannot pass at DATA either (From: must be the envelope
   * sender), so it is refused now and the body is never read. Anything else waits for DATA.
   */
  async precheck(input: Omit<SenderInput, "via" | "message">): Promise<SenderVerdict | null> {
    const sender = input.envelopeFrom.toLowerCase();
    const domain = domainOf(sender);
    const need = this.config.domains[domain]?.withoutDmarc ?? this.config.withoutDmarc;
    if (need === "dkim") return null;
    const record = (await dmarcCheck({
      headerFrom: sender,
      spfDomains: [],
      dkimDomains: [],
      resolver: this.resolve as never,
    })) as { status: { result: string } } | false;
    // biome-ignore lint/complexity/useOptionalChain: the value is false, not undefined, when absent
    if (!record || record.status.result !== "none") return null;
    const res = (await spfCheck({
      sender: input.envelopeFrom,
      ip: input.remoteAddress.replace(/^::ffff:(?=\d+\.)/i, ""),
      helo: input.clientHostname,
      mta: this.hostname,
      resolver: this.resolve as never,
    })) as { status: { result: string } };
    return this.remember(
      input.remoteAddress,
      this.spfVerdict(
        res.status.result,
        domain,
        need,
        input.remoteAddress,
        `spf=${res.status.result} dmarc=none (at MAIL FROM)`,
      ),
    );
  }

  private spfVerdict(
    spfResult: string,
    domain: string,
    need: string,
    remoteAddress: string,
    summary: string,
  ): SenderVerdict | null {
    const noDmarc = `${domain} publishes no DMARC record, so ${need === "spf-and-dkim" ? "SPF and DKIM must both pass" : `${need.toUpperCase()} must pass`}`;
    if (spfResult === "temperror")
      return fail(
        "spf",
        `451 4.7.24 Cannot check the SPF record of ${domain} right now (DNS did not answer); try again later`,
        summary,
      );
    if (spfResult === "permerror")
      return fail(
        "spf",
        `550 5.7.24 The SPF record of ${domain} is broken (permerror); ask its mail admin to fix it (${noDmarc})`,
        summary,
      );
    if (spfResult !== "pass")
      return fail(
        "spf",
        `550 5.7.23 SPF check failed: ${domain} does not list ${remoteAddress} among the servers that may send its mail (spf=${spfResult}; ${noDmarc}). Send through your domain's own mail servers`,
        summary,
      );
    return null;
  }

  async verify(input: SenderInput): Promise<SenderVerdict> {
    if (input.via === "auth") return { ok: true, check: "auth", detail: "SMTP AUTH" };
    if (input.via === "trusted") {
      if (this.config.relays.check === "off") return { ok: true, check: "trusted", detail: "trusted network" };
      return this.relayVerdict(await readHeaderBlock(input.message()), domainOf(input.envelopeFrom));
    }
    return this.remember(input.remoteAddress, await this.verifyStranger(input))!;
  }

  /**
   * A trusted relay's verdict on the message (smtp.senderAuth.relays, mail-auth/relay-verdict.ts):
   * its topmost Authentication-Results only. `failures` refuses what it recorded as forged;
   * `pass` also requires a pass recorded by a relay named in authservIds.
   */
  private relayVerdict(headers: string, domain: string): SenderVerdict {
    const { check, authservIds } = this.config.relays;
    const v = judgeTopmost(headerFields(headers, "authentication-results"), domain, {
      authservIds,
      strict: this.config.alignment === "strict",
    });
    const summary = `relay results: ${v.kind === "absent" ? "none" : v.summary}`;
    const named = authservIds.join(", ");
    // Exchange Online as the relay names no authserv-id in its header
    const relay = (by: string | null): string => (by === null ? "Your mail relay" : `Your mail relay (${by})`);
    if (v.kind === "untrusted")
      return fail(
        "relay",
        `550 5.7.1 Your mail relay's verdict cannot be believed: ${v.why}, so ${domain} is not proved and the message is not faxed`,
        summary,
      );
    if (v.kind === "fail" && v.method === "dmarc")
      return fail(
        "relay",
        `550 5.7.26 ${relay(v.by)} found that this message fails the DMARC policy of ${domain}: it was not sent by ${domain}'s own mail system, so it is not faxed`,
        summary,
      );
    if (v.kind === "fail")
      return fail(
        "relay",
        `550 5.7.23 ${relay(v.by)} found that this message fails SPF for ${domain} and carries no DKIM signature it verified${v.dkimUnnamed ? " (a dkim=pass counts only from a relay named in smtp.senderAuth.relays.authservIds)" : ""}: it was not sent by ${domain}'s own mail system, so it is not faxed`,
        summary,
      );
    if (v.kind === "pass")
      return { ok: true, check: "relay", detail: `relay${v.by ? ` ${v.by}` : ""} recorded ${v.how}; ${summary}` };
    if (check === "pass")
      return fail(
        "relay",
        `550 5.7.26 Your mail relay (${named}) recorded no DMARC pass (or aligned DKIM pass) for ${domain}: only mail it has verified is faxed`,
        summary,
      );
    return { ok: true, check: "trusted", detail: `trusted network; ${summary}` };
  }

  private async verifyStranger(input: SenderInput): Promise<SenderVerdict> {
    const res = (await authenticate(input.message(), {
      ip: input.remoteAddress.replace(/^::ffff:(?=\d+\.)/i, ""),
      helo: input.clientHostname,
      sender: input.envelopeFrom,
      mta: this.hostname,
      resolver: this.resolve as never,
      minBitLength: this.config.minKeyBits,
      disableArc: this.config.arcForwarders.length === 0,
      disableBimi: true,
    })) as unknown as AuthOutcome;
    const verdict = this.judgeStranger(input, res);
    // what the signature proves beyond the sender (mail-auth/wanted.ts judges it)
    if (!verdict.ok) return verdict;
    const signed = readSignedMessage(res.dkim, domainOf(input.envelopeFrom), this.config.alignment === "strict");
    return { ...verdict, signed };
  }

  private judgeStranger(input: SenderInput, res: AuthOutcome): SenderVerdict {
    const sender = input.envelopeFrom.toLowerCase();
    const refused = fromIsNotSender(res, sender);
    if (refused) return refused;
    const domain = domainOf(sender);
    const strict = this.config.alignment === "strict";
    const ev = readEvidence(res, domain, strict);
    return this.dmarcVerdict(input, res, ev, domain, strict) ?? this.withoutDmarc(input, ev, domain);
  }

  /** The domain's DMARC record decides, where it has one (or could not be read); null when it has none. */
  private dmarcVerdict(
    input: SenderInput,
    res: AuthOutcome,
    ev: Evidence,
    domain: string,
    strict: boolean,
  ): SenderVerdict | null {
    const { dmarc, summary, spfResult, alignedDkim, dkimPass } = ev;
    if (dmarc === "temperror") {
      return fail(
        "dmarc",
        `451 4.7.0 Cannot look up the DMARC record of ${domain} right now (DNS did not answer); try again later`,
        summary,
      );
    }
    if (dmarc === "pass" && res.dmarc) {
      const by = res.dmarc.alignment?.dkim?.result ? "dkim" : "spf";
      const alignedDomain = (res.dmarc.alignment?.dkim?.result || res.dmarc.alignment?.spf?.result || "") as string;
      if (!strict || alignedDomain.toLowerCase() === domain)
        return { ok: true, check: "dmarc", detail: `DMARC pass for ${domain} (aligned ${by}); ${summary}` };
    }
    if (dmarc !== "pass" && dmarc !== "fail") return null;
    const arc = this.arcVerdict(res, domain, strict);
    if (arc?.pass) return arc.pass;
    // biome-ignore lint/complexity/useOptionalChain: the value is false, not undefined, when absent
    const policy = res.dmarc && res.dmarc.policy ? ` (p=${res.dmarc.policy})` : "";
    const spfWhy =
      spfResult === "pass"
        ? `SPF passes but not for ${strict ? "exactly " : ""}${domain}`
        : `SPF ${spfResult} for ${input.remoteAddress}`;
    const dkimWhy = alignedDkim
      ? "a DKIM signature"
      : dkimPass.length
        ? `DKIM signed by ${dkimPass[0]!.signingDomain} only`
        : "no valid DKIM signature";
    return fail(
      "dmarc",
      `550 5.7.26 This message does not pass the DMARC policy of ${domain}${policy}: ${spfWhy}, ${dkimWhy}${strict ? " (strict alignment)" : ""}${arc ? `; ${arc.why}` : ""}. Send it from your own mail account (Outlook, Gmail) so that it is signed for ${domain}`,
      arc ? `${summary} arc=${res.arc ? res.arc.status.result : "none"}` : summary,
    );
  }

  /** No DMARC record: what the operator asks of this domain, SPF and an aligned DKIM signature by default. */
  private withoutDmarc(input: SenderInput, ev: Evidence, domain: string): SenderVerdict {
    const need = this.config.domains[domain]?.withoutDmarc ?? this.config.withoutDmarc;
    const noDmarc = `${domain} publishes no DMARC record, so ${need === "spf-and-dkim" ? "SPF and DKIM must both pass" : `${need.toUpperCase()} must pass`}`;
    if (need !== "dkim") {
      const refused = this.spfVerdict(ev.spfResult, domain, need, input.remoteAddress, ev.summary);
      if (refused) return refused;
    }
    if (need !== "spf" && !ev.alignedDkim) return this.dkimRefusal(ev, domain, noDmarc);
    const check: VerdictCheck = need === "spf-and-dkim" ? "spf+dkim" : need;
    return { ok: true, check, detail: `${check.toUpperCase()} pass for ${domain} (no DMARC record); ${ev.summary}` };
  }

  /** Why a domain without DMARC has no DKIM signature of its own, most telling reason first. */
  private dkimRefusal(ev: Evidence, domain: string, noDmarc: string): SenderVerdict {
    const { dkimRows, dkimPass, summary } = ev;
    if (dkimRows.some((r) => r.status.result === "temperror"))
      return fail(
        "dkim",
        `451 4.7.0 Cannot look up the DKIM key of ${domain} right now (DNS did not answer); try again later`,
        summary,
      );
    if (dkimPass.length)
      return fail(
        "dkim",
        `550 5.7.22 No DKIM signature of ${domain}: the message is signed by ${dkimPass.map((r) => r.signingDomain).join(", ")} only (${noDmarc}, with a signature of the From: domain)`,
        summary,
      );
    if (dkimRows.some((r) => r.status.underSized || r.status.result === "policy"))
      return fail(
        "dkim",
        `550 5.7.21 The DKIM signature of ${domain} is not acceptable: its key is shorter than ${this.config.minKeyBits} bits (${noDmarc})`,
        summary,
      );
    const why =
      dkimRows.length === 0
        ? "the message is not signed"
        : `its signature does not verify (${String(dkimRows[0]!.status.comment || dkimRows[0]!.status.result)}): was it changed on the way?`;
    return fail("dkim", `550 5.7.20 No valid DKIM signature for ${domain}: ${why} (${noDmarc})`, summary);
  }

  /**
   * ARC (RFC 8617): a pass when the newest seal verifies, was made by a forwarder named in
   * arcForwarders (the ARC-Seal's d=) and that forwarder recorded a DMARC pass for the sender's
   * domain when the message reached it (a mailing list that adds a footer, a ticket system);
   * otherwise why the seal was not honoured, for the refusal. Null when there is no ARC chain.
   */
  private arcVerdict(
    res: AuthOutcome,
    domain: string,
    strict: boolean,
  ): { pass: SenderVerdict; why?: undefined } | { pass?: undefined; why: string } | null {
    const arc = res.arc;
    if (!arc || arc.status.result === "none") return null;
    const chain = arc.chain || [];
    const sealer = shownDomain(chain[chain.length - 1]?.["arc-seal"]?.parsed?.d?.value);
    if (arc.status.result !== "pass") {
      const comment = arc.status.comment ? ` (${String(arc.status.comment).slice(0, 80)})` : "";
      return { why: `its ARC chain${sealer ? ` (sealed by ${sealer})` : ""} does not verify${comment}` };
    }
    if (!sealer || !this.config.arcForwarders.some((f) => f.toLowerCase() === sealer))
      return {
        why: `it carries an ARC seal of ${sealer ?? "an unnamed domain"}, which is not a forwarder this gateway trusts`,
      };
    const recorded = arc.authenticationResults?.dmarc;
    const about = shownDomain(recorded?.header?.from);
    if (recorded?.result !== "pass" || !about || !aligned(about, domain, strict)) {
      const what = recorded ? `dmarc=${recorded.result ?? "?"}${about ? ` for ${about}` : ""}` : "no DMARC result";
      return { why: `${sealer}, the forwarder that sealed it, recorded ${what} when it received it` };
    }
    return {
      pass: { ok: true, check: "arc", detail: `ARC pass sealed by ${sealer}, which recorded DMARC pass for ${about}` },
    };
  }
}
