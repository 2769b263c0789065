// A job's summary state from its recipients' states (types.ts explains the states; the state
// sets come from transitions.ts, the one place they are defined).
import { FINAL_JOB_STATES, FINAL_RECIPIENT_STATES } from './transitions.js';
import type { JobState, RecipientState } from './types.js';

const FINAL: ReadonlySet<RecipientState> = new Set(FINAL_RECIPIENT_STATES);
const FINAL_JOB: ReadonlySet<JobState> = new Set(FINAL_JOB_STATES);

export function deriveJobState(states: readonly RecipientState[]): JobState {
  if (states.length === 0) return 'failed';
  if (states.every((s) => FINAL.has(s))) {
    if (states.every((s) => s === 'delivered')) return 'delivered';
    if (states.every((s) => s === 'cancelled')) return 'cancelled';
    if (states.some((s) => s === 'delivered')) return 'partial';
    return 'failed';
  }
  const open = states.filter((s) => !FINAL.has(s));
  // anything started (in flight, deferred, waiting for a lookup) makes the job active
  if (open.some((s) => s !== 'queued' && s !== 'held')) return 'active';
  if (open.every((s) => s === 'held')) return 'held';
  if (states.every((s) => s === 'queued')) return 'queued';
  return 'active';
}

export function isFinalJobState(s: JobState): boolean {
  return FINAL_JOB.has(s);
}
