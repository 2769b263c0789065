// A job's summary state from its recipients' states (types.ts explains the states).
import type { JobState, RecipientState } from './types.js';

const IN_FLIGHT: ReadonlySet<RecipientState> = new Set(['sending', 'deferred', 'processing', 'unknown']);
const FINAL: ReadonlySet<RecipientState> = new Set(['delivered', 'failed', 'cancelled']);

export function deriveJobState(states: readonly RecipientState[]): JobState {
  if (states.length === 0) return 'failed';
  if (states.every((s) => FINAL.has(s))) {
    if (states.every((s) => s === 'delivered')) return 'delivered';
    if (states.every((s) => s === 'cancelled')) return 'cancelled';
    if (states.some((s) => s === 'delivered')) return 'partial';
    return 'failed';
  }
  if (states.some((s) => IN_FLIGHT.has(s))) return 'active';
  const open = states.filter((s) => !FINAL.has(s));
  if (open.every((s) => s === 'held')) return 'held';
  if (states.every((s) => s === 'queued')) return 'queued';
  return 'active';
}

export function isFinalJobState(s: JobState): boolean {
  return s === 'delivered' || s === 'failed' || s === 'partial' || s === 'cancelled' || s === 'corrupt';
}
