// A fax result the service pushed to us (a webhook event) instead of one we polled: applied by
// the same applyRecord as a polled one, so the store transition, log line, metrics and
// notification are the same whichever way the result arrived. Polling stays on as the safety net.
// A push is only a hint: anyone holding the webhook credentials could write one. What is applied
// is the service's own record, asked for with the key of the fax's owner (one API call a push).
import type { FaxRecord } from "../fax/index.js";
import type { DispatchContext } from "./context.js";
import { applyRecord } from "./outcome.js";

/**
 * - `applied`: a recipient in `processing` had that messageId; the service's record of it (which
 *   may still say processing) is applied.
 * - `later`: no such recipient yet, but a send is being recorded (`sending`) or a lost answer is
 *   being reconciled (`unknown`): the fax may be ours a moment from now, so the service should
 *   send the event again (its next try comes after 5 s, then 25 s).
 * - `unknown`: not a fax we follow (someone else's, or already final).
 */
export type PushedOutcome = "applied" | "later" | "unknown";

export async function applyPushedRecord(ctx: DispatchContext, rec: FaxRecord): Promise<PushedOutcome> {
  const r = (await ctx.store.listRecipients({ state: "processing" })).find((x) => x.messageId === rec.messageId);
  if (r) {
    const told = await ctx.clientFor(r.user).faxInfo(rec.messageId);
    await applyRecord(ctx, r, told);
    return "applied";
  }
  if (await ctx.store.isKnownMessage(rec.messageId)) return "unknown";
  const { sending, unknown } = (await ctx.store.counts()).recipients;
  return (sending ?? 0) + (unknown ?? 0) > 0 ? "later" : "unknown";
}
