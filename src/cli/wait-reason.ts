// Why a recipient that is not final is not being dialled right now, in words for `faxgate jobs`
// and `faxgate job`: scheduled for later, held, waiting for a retry, or waiting its turn behind
// another fax to the same number (one in flight per number, queue.perNumberConcurrency).
import { IN_FLIGHT_STATES } from '../store/transitions.js';
import type { Job, Recipient } from '../store/types.js';

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

export function waitReason(job: Job, r: Recipient, nowMs: number, inFlight: Map<string, string[]>): string | null {
  if (r.state === 'held') return 'held: `faxgate release` to send it';
  if (r.state !== 'queued' && r.state !== 'deferred') return null;
  if (job.scheduledAt && Date.parse(job.scheduledAt) > nowMs) return `scheduled for ${job.scheduledAt} (cancel with \`faxgate cancel ${job.id}\`)`;
  if (r.state === 'deferred' && r.nextAttemptAt && Date.parse(r.nextAttemptAt) > nowMs) return `next try at ${r.nextAttemptAt}`;
  const busy = (inFlight.get(r.number) ?? []).filter((id) => id !== job.id || job.recipients.some((x) => x.idx !== r.idx && x.number === r.number));
  if (busy.length > 0) return `waiting for another fax to this number to finish (job ${busy[0]})`;
  return null;
}
