// A fax result the service pushed to us (a webhook event) instead of one we polled: applied by
// the same applyRecord as a polled one, so the store transition, log line, metrics and
// notification are the same whichever way the result arrived. Polling stays on as the safety net.
import type { FaxRecord } from '../fax/types.js';
import type { DispatchContext } from './context.js';
import { applyRecord } from './outcome.js';

/**
 * Applies `rec` to the recipient following that fax. Returns false when no recipient in
 * `processing` has that messageId (not ours, already final, or still unknown: reconciliation
 * will find it).
 */
export function applyPushedRecord(ctx: DispatchContext, rec: FaxRecord): boolean {
  const r = ctx.store.listProcessing().find((x) => x.messageId === rec.messageId);
  if (!r) return false;
  applyRecord(ctx, r, rec);
  return true;
}
