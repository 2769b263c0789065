// A fax's life, computed from the clock when asked rather than by timers, so it is the same after
// a restart: scheduled (until scheduledDate), processing (for delayMs), then the outcome the
// destination's last four digits call for.
import { FAX_RESULTS } from '../fax/result-codes.js';
import type { FaxRow } from './db.js';

export type OutcomeRule = 'busy' | 'noAnswer' | 'noFaxTone' | 'secondAttempt' | 'ok';

export function outcomeRuleFor(faxNumber: string): { outcome: 'success' | 'failed'; rule: OutcomeRule } {
  const last4 = faxNumber.replace(/\D/g, '').slice(-4);
  switch (last4) {
    case '0000':
      return { outcome: 'failed', rule: 'busy' };
    case '0001':
      return { outcome: 'failed', rule: 'noAnswer' };
    case '0002':
      return { outcome: 'failed', rule: 'noFaxTone' };
    case '0003':
      return { outcome: 'success', rule: 'secondAttempt' };
    default:
      return { outcome: 'success', rule: 'ok' };
  }
}

export interface FaxState {
  status: string;
  resultCode: string | null;
  resultInfo: string | null;
  errorCode: string | null;
  errorInfo: string | null;
  faxAttempt: number;
  pagesComplete: number;
  duration: number;
  resolvedDate: string | null;
  faxDetected: boolean;
}

/** SQL for the status a row has at :now (kept next to faxState so the two agree). */
export const STATUS_SQL = `CASE WHEN scheduledAt IS NOT NULL AND scheduledAt > @now THEN 'scheduled' WHEN readyAt > @now THEN 'processing' ELSE outcome END`;

export function faxState(row: FaxRow, now: number): FaxState {
  if (row.scheduledAt !== null && row.scheduledAt > now) return pending('scheduled');
  if (row.readyAt > now) return pending('processing');
  const rule = row.outcomeRule as OutcomeRule;
  const resolvedDate = new Date(row.readyAt).toISOString();
  if (row.direction === 'inbound' || rule === 'ok' || rule === 'secondAttempt') {
    const r = FAX_RESULTS.ok;
    return {
      status: 'success',
      resultCode: r.resultCode,
      resultInfo: r.resultInfo,
      errorCode: null,
      errorInfo: null,
      faxAttempt: rule === 'secondAttempt' ? 2 : 1,
      pagesComplete: row.pagesCount,
      // about 25 s a page at 14400 bps, plus call set-up (and a whole failed call before a 2nd try)
      duration: 12 + 25 * row.pagesCount + (rule === 'secondAttempt' ? 45 : 0),
      resolvedDate,
      faxDetected: true,
    };
  }
  const r = FAX_RESULTS[rule];
  return {
    status: 'failed',
    resultCode: r.resultCode,
    resultInfo: r.resultInfo,
    errorCode: r.errorCode,
    errorInfo: r.errorInfo,
    faxAttempt: 1,
    pagesComplete: 0,
    duration: rule === 'noAnswer' ? 60 : rule === 'noFaxTone' ? 35 : 0,
    resolvedDate,
    faxDetected: false,
  };
}

function pending(status: string): FaxState {
  return { status, resultCode: null, resultInfo: null, errorCode: null, errorInfo: null, faxAttempt: 0, pagesComplete: 0, duration: 0, resolvedDate: null, faxDetected: false };
}
