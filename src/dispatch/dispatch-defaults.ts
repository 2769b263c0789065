// Defaults of the optional dispatcher keys of `queue` (src/config/schema.ts keeps them optional
// so configs and tests written before they existed stay valid).
import type { QueueConfig } from "../config/schema.js";

export interface DispatchTuning {
  leaseMs: number;
  reconcileGraceMs: number;
  perNumberConcurrency: number;
  scheduleAheadMs: number;
  keyRecheckMs: number;
  historyPageSize: number;
}

export function dispatchTuning(q: QueueConfig): DispatchTuning {
  return {
    leaseMs: q.leaseMs ?? 60_000,
    reconcileGraceMs: q.reconcileGraceMs ?? 5_000,
    perNumberConcurrency: q.perNumberConcurrency ?? 1,
    // Scheduled faxes stay in our queue until due (cancellable, and not holding their number's
    // one-in-flight slot at the service); scheduleAheadHours hands them over earlier.
    scheduleAheadMs: (q.scheduleAheadHours ?? 0) * 3_600_000,
    keyRecheckMs: q.keyRecheckMs ?? 300_000,
    historyPageSize: q.historyPageSize ?? 500,
  };
}
