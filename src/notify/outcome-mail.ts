// The mail that tells a user how their fax went: one mail per job covering every recipient,
// with the service's result in plain words, times in the account's timezone, and what intake
// left out of the fax.
import { explainResult } from "../fax/index.js";
import { formatFaxNumber } from "../recipients/index.js";
import { NEEDS_ADDRESS, UNCONFIRMED, type Job, type Recipient } from "../store/index.js";
import type { Block } from "./mail-body.js";
import { clip, FOOTER, type ComposedMail } from "./composed-mail.js";
import { pages } from "../format.js";
import { formatDuration, formatTime, plural } from "./time-format.js";

/** A recipient that failed because its job stayed undelivered past the maximum age (the dispatcher's "expired: ..."). */
export function isExpired(r: Recipient): boolean {
  if (r.state !== "failed") return false;
  return (
    r.errorCode === "JOB_EXPIRED" || /^expired: /i.test(r.lastError ?? "") || /\bJOB_EXPIRED\b/.test(r.lastError ?? "")
  );
}

/** A print job that waited for its owner's number and was not given one in time. */
export function expiredUnaddressed(job: Job): boolean {
  return (
    job.recipients.length === 1 &&
    job.recipients[0]!.number === "" &&
    job.recipients[0]!.state === "cancelled" &&
    (job.recipients[0]!.lastError ?? "").startsWith(NEEDS_ADDRESS)
  );
}

/** A fax to a number its owner never faxed before that nobody confirmed in time. */
export function expiredUnconfirmed(job: Job): boolean {
  return job.state === "cancelled" && job.recipients.some((r) => (r.lastError ?? "").startsWith(UNCONFIRMED));
}

/** Why a recipient did not get the fax, in plain words ("busy", "no answer"). */
export function failureWords(r: Recipient): string {
  if (r.state === "cancelled") return "cancelled";
  if (isExpired(r)) {
    const text = (r.lastError ?? "").replace(/^(JOB_EXPIRED: |expired: )/i, "");
    return text || "not delivered within the maximum time";
  }
  if (r.errorCode || r.resultCode) return explainResult(r).words;
  if (r.lastError) return r.lastError.replace(/^[A-Z_]+: /, "");
  return "the fax service reported a failure";
}

/** True when the job has a recipient that did not get the fax. */
export function hasFailure(job: Job): boolean {
  return job.state === "corrupt" || job.recipients.some((r) => r.state !== "delivered");
}

/** Refused after the SMTP reply (corrupt input) or given up by the queue: mailed whatever the preference. */
export function isMandatory(job: Job): boolean {
  return job.state === "corrupt" || job.recipients.some(isExpired) || expiredUnaddressed(job);
}

function who(r: Recipient): string {
  const n = formatFaxNumber(r.number);
  return r.name ? `${r.name} (${n})` : n;
}

function origin(job: Job, ...keys: string[]): string | undefined {
  const o = job.meta.origin ?? {};
  for (const k of keys) if (o[k]) return o[k];
  return undefined;
}

/** "archive.zip, photo.heic": files the sender attached that the fax went without (intake.partial: send). */
export function sentWithout(job: Job): string | null {
  const names = (job.meta.leftOut ?? []).filter((l) => l.sentWithout).map((l) => l.name);
  return names.length ? names.join(", ") : null;
}

export function outcomeSubject(job: Job): string {
  const without = job.state === "corrupt" ? null : sentWithout(job);
  // the file that was not faxed is said first: "delivered" alone would read as all of it
  return without ? clip(`Sent without ${without}: ${plainSubject(job)}`, 160) : plainSubject(job);
}

function plainSubject(job: Job): string {
  if (expiredUnaddressed(job))
    return clip(
      `Fax not sent: "${origin(job, "file") ?? job.cover.subject ?? "your print job"}" was given no fax number in time`,
      120,
    );
  if (job.state === "corrupt" || job.recipients.length === 0) {
    const what = origin(job, "file", "fileName", "subject") ?? job.original?.name ?? "your document";
    return clip(`Fax not sent: "${what}" could not be processed`, 120);
  }
  if (job.recipients.length === 1) {
    const r = job.recipients[0]!;
    const to = formatFaxNumber(r.number);
    if (r.state === "delivered")
      return r.pages ? `Fax to ${to} delivered, ${plural(r.pages, "page")}` : `Fax to ${to} delivered`;
    if (r.state === "cancelled") return `Fax to ${to} cancelled`;
    return clip(`Fax to ${to} failed: ${failureWords(r)}`, 120);
  }
  const count = (s: string) => job.recipients.filter((r) => r.state === s).length;
  const failed = job.recipients.filter((r) => r.state !== "delivered" && r.state !== "cancelled").length;
  const parts = [
    count("delivered") || failed + count("cancelled") === 0 ? `${count("delivered")} delivered` : null,
    failed ? `${failed} failed` : null,
    count("cancelled") ? `${count("cancelled")} cancelled` : null,
  ].filter(Boolean);
  return `Fax to ${job.recipients.length} recipients: ${parts.join(", ")}`;
}

/** Who cancelled it ("alice", "ops, an operator"), from the job's timeline; null when unknown. */
export interface OutcomeFacts {
  cancelledBy?: string | null;
}

function summary(job: Job, facts: OutcomeFacts): string {
  if (expiredUnaddressed(job)) {
    const why = (job.recipients[0]!.lastError ?? "").slice(NEEDS_ADDRESS.length).replace(/^: /, "");
    return `Your print job was not faxed: it waited for a fax number and none was given${why ? ` (${why})` : ""}. It has been removed; print it again with the number, or give the number in the console when it asks.`;
  }
  if (expiredUnconfirmed(job)) {
    return `Your fax to ${job.recipients.map((r) => r.number).join(", ")} was not sent: it went to a number you had never faxed before, and it was not confirmed in time. It has been cancelled. If you meant it, send it again and confirm it from the mail that asks; if you did not send it, someone may be resending your mail: tell your administrator.`;
  }
  if (job.state === "corrupt") {
    return `Your fax was not sent: the gateway could not process what it received. It was kept for inspection by the administrator. Reason: ${job.corruptReason ?? "unknown"}.`;
  }
  const without = sentWithout(job);
  return without
    ? `Not everything you attached was faxed: the fax went without ${without} (see "Left out of the fax" below). ${summaryOfRecipients(job, facts)}`
    : summaryOfRecipients(job, facts);
}

function summaryOfRecipients(job: Job, facts: OutcomeFacts): string {
  if (job.recipients.length === 1) {
    const r = job.recipients[0]!;
    if (r.state === "delivered")
      return `Your fax to ${who(r)} was delivered${r.pages ? ` (${plural(r.pages, "page")})` : ""}.`;
    if (r.state === "cancelled")
      return `Your fax to ${who(r)} was cancelled${facts.cancelledBy ? ` by ${facts.cancelledBy}` : ""} and not sent.`;
    return `Your fax to ${who(r)} could not be delivered: ${failureWords(r)}. ${NEXT_STEP}`;
  }
  const delivered = job.recipients.filter((r) => r.state === "delivered").length;
  const failed = job.recipients.some((r) => r.state === "failed");
  return `Your fax to ${job.recipients.length} recipients was delivered to ${delivered} of them.${failed ? ` ${NEXT_STEP}` : ""}`;
}

function recipientBlocks(r: Recipient, timeZone: string): Block[] {
  const state =
    r.state === "delivered"
      ? "delivered"
      : r.state === "cancelled"
        ? "cancelled"
        : r.state === "failed"
          ? "failed"
          : r.state;
  const attempts = Math.max(r.attempts ?? 0, r.faxAttempt ?? 0);
  return [
    { kind: "heading", text: `${who(r)}: ${state}` },
    {
      kind: "fields",
      rows: [
        ["Result", r.state === "delivered" ? "delivered" : failureWords(r)],
        [
          "Service result",
          r.resultCode || r.resultInfo ? [r.resultCode, r.resultInfo].filter(Boolean).join(" ") : null,
        ],
        ["Pages", pages(r.pages)],
        // the service reports the time of one page, not of the whole fax
        ["Time per page", formatDuration(r.duration)],
        ["Attempts", attempts > 0 ? String(attempts) : null],
        ["Finished", formatTime(r.finishedAt, timeZone)],
        ["Message id", r.messageId],
      ],
    },
  ];
}

// what a person can do about a failure, in one sentence
const NEXT_STEP =
  "What you can do: check the number with the recipient, then send it again (Resend on its page in the console, or mail or print it again).";

export function composeOutcome(job: Job, timeZone: string, facts: OutcomeFacts = {}): ComposedMail {
  const blocks: Block[] = [
    { kind: "para", text: summary(job, facts) },
    {
      kind: "fields",
      rows: [
        ["Job", job.id],
        ["Submitted", formatTime(job.createdAt, timeZone)],
        ["Subject", job.cover.subject ?? origin(job, "subject")],
        ["File", origin(job, "file", "fileName")],
        // which check proved the sender (smtp.senderAuth): a user can see why their mail was taken
        ["Sender check", origin(job, "senderCheck")],
        ["Documents", job.documents.map((d) => d.name).join(", ") || (job.cover.enabled ? "cover page only" : null)],
      ],
    },
  ];
  if (!expiredUnaddressed(job)) for (const r of job.recipients) blocks.push(...recipientBlocks(r, timeZone));
  const leftOut = job.meta.leftOut ?? [];
  if (leftOut.length) {
    blocks.push(
      { kind: "heading", text: "Left out of the fax" },
      { kind: "list", items: leftOut.map((l) => `${l.name}: ${l.reason}`) },
    );
  }
  blocks.push({ kind: "para", text: `${FOOTER} Quote job ${job.id} when asking about this fax.` });
  return { subject: outcomeSubject(job), blocks, failure: hasFailure(job), mandatory: isMandatory(job) };
}
