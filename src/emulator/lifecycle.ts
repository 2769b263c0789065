// A fax's life, computed from the clock when asked rather than by timers, so it is the same after
// a restart: scheduled (until scheduledDate), processing (first half of delayMs), transmitting
// (second half), then the outcome the destination's last four digits call for (results.ts).
import type { FaxRow } from "./db.js";
import { resultOf } from "./results.js";
import type { FaxStatus } from "./types.js";

export { outcomeRuleFor, type OutcomeRule } from "./results.js";

export interface FaxState {
  status: FaxStatus;
  resultCode: string | null;
  resultInfo: string | null;
  errorCode: string | null;
  errorInfo: string | null;
  faxAttempt: number;
  pagesComplete: number;
  duration: number;
  resolvedDate: string | null;
  faxDetected: boolean;
  /** the service numbers a fax and hands it to a line once it leaves processing */
  numbered: boolean;
}

/** SQL for the status a row has at @now (kept next to faxState so the two agree). */
export const STATUS_SQL = `CASE WHEN scheduledAt IS NOT NULL AND scheduledAt > @now THEN 'scheduled' WHEN COALESCE(transmitAt, readyAt) > @now THEN 'processing' WHEN readyAt > @now THEN 'transmitting' ELSE outcome END`;

/** When a fax reaches its final state (for webhooks): its readyAt. */
export function isFinal(row: FaxRow, now: number): boolean {
  return !(row.scheduledAt !== null && row.scheduledAt > now) && row.readyAt <= now;
}

export function faxState(row: FaxRow, now: number): FaxState {
  if (row.scheduledAt !== null && row.scheduledAt > now) return pending("scheduled", false);
  if ((row.transmitAt ?? row.readyAt) > now) return pending("processing", false);
  if (row.readyAt > now) return pending("transmitting", true);
  const resolvedDate = new Date(row.readyAt).toISOString();
  const r = row.direction === "inbound" ? resultOf("ok") : resultOf(row.outcomeRule);
  const ok = r.status === "success";
  return {
    status: r.status,
    resultCode: r.resultCode,
    resultInfo: r.resultInfo,
    errorCode: r.errorCode,
    errorInfo: r.errorInfo,
    faxAttempt: r.faxAttempt,
    pagesComplete: ok ? row.pagesCount : 0,
    duration: r.duration(row.pagesCount),
    resolvedDate,
    faxDetected: ok,
    numbered: true,
  };
}

function pending(status: FaxStatus, numbered: boolean): FaxState {
  return {
    status,
    resultCode: null,
    resultInfo: null,
    errorCode: null,
    errorInfo: null,
    faxAttempt: 0,
    pagesComplete: 0,
    duration: 0,
    resolvedDate: null,
    faxDetected: false,
    numbered,
  };
}
