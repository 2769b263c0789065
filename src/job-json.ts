// A job as people and scripts see it: the JSON of `faxgate jobs --json` (contract §1), shared by
// the CLI and the web console's API, and why a recipient that is not final is not being dialled
// right now: scheduled for later, held, waiting for a retry, or waiting its turn behind another
// fax to the same number (one in flight per number, queue.perNumberConcurrency).
import { faxNumber } from "./format.js";
import { waitsForAddress, AWAITS_CONFIRMATION, IN_FLIGHT_STATES, type Job, type Recipient } from "./store/index.js";

const IN_FLIGHT: ReadonlySet<string> = new Set(IN_FLIGHT_STATES);

/** Jobs with a fax in flight, by destination number (from the store's active jobs). */
export function inFlightByNumber(activeJobs: readonly Job[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const j of activeJobs) {
    for (const r of j.recipients) {
      if (!IN_FLIGHT.has(r.state)) continue;
      const list = out.get(r.number) ?? [];
      list.push(j.id);
      out.set(r.number, list);
    }
  }
  return out;
}

/**
 * What every surface says of a print waiting for its number (CLI, console, mails): where to give
 * it. `consoleUrl` absent: the console's own path, as a page of the console links it.
 */
export function needsNumber(job: Pick<Job, "id">, consoleUrl?: string | null): string {
  const page = `${consoleUrl?.replace(/\/+$/, "") ?? ""}/address.html?id=${encodeURIComponent(job.id)}`;
  return `needs a number: give it in the console at ${page}, or \`faxgate address ${job.id} <number>\``;
}

export function waitReason(
  job: Job,
  r: Recipient,
  nowMs: number,
  inFlight: Map<string, string[]>,
  consoleUrl?: string | null,
): string | null {
  if (waitsForAddress(job)) return needsNumber(job, consoleUrl);
  // a fax to a new number waits for its owner's click, which an operator's release cannot give
  if (r.state === "held" && (r.lastError ?? "").startsWith(AWAITS_CONFIRMATION))
    return `its owner ${job.user} confirms it in the console: ${consoleUrl?.replace(/\/+$/, "") ?? ""}/confirm.html?id=${encodeURIComponent(job.id)}`;
  if (r.state === "held") return "held: `faxgate release` to send it";
  if (r.state !== "queued" && r.state !== "deferred") return null;
  if (job.scheduledAt && Date.parse(job.scheduledAt) > nowMs)
    return `scheduled for ${job.scheduledAt} (cancel with \`faxgate cancel ${job.id}\`)`;
  if (r.state === "deferred" && r.nextAttemptAt && Date.parse(r.nextAttemptAt) > nowMs)
    return `next try at ${r.nextAttemptAt}`;
  const busy = (inFlight.get(r.number) ?? []).filter(
    (id) => id !== job.id || job.recipients.some((x) => x.idx !== r.idx && x.number === r.number),
  );
  if (busy.length > 0) return `waiting for another fax to this number to finish (job ${busy[0]})`;
  return null;
}

/** The JSON shape of contract §1 (plus the detail operators want; `waiting` says why a recipient is not dialled yet). */
export function jobJson(
  j: Job,
  inFlight: Map<string, string[]> = new Map(),
  nowMs = Date.now(),
  consoleUrl?: string | null,
) {
  return {
    id: j.id,
    source: j.source,
    user: j.user,
    state: j.state,
    createdAt: j.createdAt,
    updatedAt: j.updatedAt,
    finishedAt: j.finishedAt,
    scheduledAt: j.scheduledAt,
    // the mail's subject (or the print job's title) names the fax with or without a cover page
    subject: j.cover.subject ?? j.meta.origin?.subject ?? null,
    cover: j.cover,
    documents: j.documents.map((d) => ({ name: d.name, contentType: d.contentType, bytes: d.bytes })),
    leftOut: j.meta.leftOut ?? [],
    corruptReason: j.corruptReason,
    // a print that named no number: nothing is sent (or released) until its owner gives one
    needsAddress: waitsForAddress(j),
    recipients: j.recipients.map((r) => ({
      number: r.number,
      // the number as every surface writes it for people (src/format.ts)
      numberText: faxNumber(r.number),
      name: r.name,
      state: r.state,
      messageId: r.messageId,
      resultCode: r.resultCode,
      resultInfo: r.resultInfo,
      errorCode: r.errorCode,
      errorInfo: r.errorInfo,
      attempts: recipientTries(r),
      pages: r.pages,
      lastError: r.lastError,
      nextAttemptAt: r.nextAttemptAt,
      waiting: waitReason(j, r, nowMs, inFlight, consoleUrl),
    })),
  };
}

/** Tries of a recipient as its outcome mail counts them ("Attempts"): our sends or the service's fax attempts, whichever is more. */
export function recipientTries(r: Pick<Recipient, "attempts"> & { faxAttempt?: number | null }): number {
  return Math.max(r.attempts ?? 0, r.faxAttempt ?? 0);
}
