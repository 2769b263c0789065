// A job's summary state from its recipients' states (types.ts explains the states; the state
// sets come from transitions.ts, the one place they are defined).
import {
  AWAITS_CONFIRMATION,
  CONFIRM_NEW_NUMBER,
  FINAL_JOB_STATES,
  FINAL_RECIPIENT_STATES,
  NEEDS_ADDRESS,
} from "./transitions.js";
import type { Job, JobState, RecipientState } from "./types.js";

const FINAL: ReadonlySet<RecipientState> = new Set(FINAL_RECIPIENT_STATES);
const FINAL_JOB: ReadonlySet<JobState> = new Set(FINAL_JOB_STATES);

export function deriveJobState(states: readonly RecipientState[]): JobState {
  if (states.length === 0) return "failed";
  if (states.every((s) => FINAL.has(s))) {
    if (states.every((s) => s === "delivered")) return "delivered";
    if (states.every((s) => s === "cancelled")) return "cancelled";
    if (states.some((s) => s === "delivered")) return "partial";
    return "failed";
  }
  const open = states.filter((s) => !FINAL.has(s));
  // anything started (in flight, deferred, waiting for a lookup) makes the job active
  if (open.some((s) => s !== "queued" && s !== "held")) return "active";
  if (open.every((s) => s === "held")) return "held";
  if (states.every((s) => s === "queued")) return "queued";
  return "active";
}

export function isFinalJobState(s: JobState): boolean {
  return FINAL_JOB.has(s);
}

/** Whether a job waits for its owner to give it a number (its one recipient is the placeholder). */
export function waitsForAddress(job: Job): boolean {
  const r = job.recipients[0];
  return job.state === "held" && job.recipients.length === 1 && r!.number === "" && r!.lastError === NEEDS_ADDRESS;
}

/** Whether a job waits for its owner to confirm a number they never faxed before. */
export function waitsForConfirmation(job: Job): boolean {
  return (
    job.state === "held" &&
    job.recipients.some((r) => r.state === "held" && (r.lastError ?? "").startsWith(AWAITS_CONFIRMATION))
  );
}

/** The numbers of a job waiting for confirmation that its owner never faxed before. */
export function newNumbers(job: Job): string[] {
  return job.recipients.filter((r) => r.state === "held" && r.lastError === CONFIRM_NEW_NUMBER).map((r) => r.number);
}
