// Turning a decision (classify.ts) into a store transition, a log line and metrics. Every path
// that finishes a recipient goes through here so the verbs and counters stay consistent.
import type { FaxRecord } from "../fax/index.js";
import type { RecipientKey, Recipient, RecipientState } from "../store/index.js";
import { classifyFaxRecord, type Decision, type RetryContext } from "./classify.js";
import { resultFields, type DispatchContext } from "./context.js";
import { recordOutcome } from "./ledger-rows.js";
import { childLog } from "../log/index.js";

/** The start of the reason of a recipient held for its user's key (docs/queue.md). */
export const KEY_HELD = "held until a working API key is loaded";

export function retryContext(ctx: DispatchContext, r: Recipient): RetryContext {
  return { queue: ctx.queue, now: ctx.clock.now(), attempts: r.attempts, budgetFrom: r.budgetFrom };
}

function key(r: Recipient): RecipientKey {
  return { jobId: r.jobId, idx: r.idx };
}

/** Applies a failure decision to a recipient in `expect` states (guarded by sendId when given). */
export async function applyDecision(
  ctx: DispatchContext,
  r: Recipient,
  d: Decision,
  opts: { sendId?: string; expect?: RecipientState[]; user?: string } = {},
): Promise<void> {
  const log = childLog(ctx.log, { job: r.jobId });
  if (d.action === "hold") {
    // Not a try and not a failure: the recipient waits, attempt refunded, until the key works.
    const user = opts.user ?? (await ctx.store.getJob(r.jobId))?.user ?? "";
    ctx.keyRefused(user, d.reason);
    const next = new Date(ctx.clock.now() + ctx.queue.keyRecheck);
    if (
      await ctx.store.defer(key(r), {
        error: `${KEY_HELD}: ${d.reason}`,
        nextAttemptAt: next,
        sendId: opts.sendId,
        expect: opts.expect,
        refundAttempt: true,
      })
    ) {
      log.warn(
        { to: r.number, user, reason: d.reason },
        "HELD: the user's API key was refused; waiting for a working key",
      );
    }
    return;
  }
  if (d.action === "unknown") {
    if (opts.sendId && (await ctx.store.markUnknown(key(r), opts.sendId, d.reason))) {
      log.warn(
        { to: r.number, sendId: opts.sendId, reason: d.reason },
        "UNKNOWN send outcome, will reconcile before any resend",
      );
      ctx.metrics?.sends.inc({ result: "unknown" });
    }
    return;
  }
  if (d.action === "defer") {
    const ok = await ctx.store.defer(key(r), {
      error: d.reason,
      nextAttemptAt: d.nextAttemptAt,
      sendId: opts.sendId,
      expect: opts.expect,
      faxTry: d.faxTry,
      refundAttempt: d.rateLimited,
    });
    if (ok) {
      log.info({ to: r.number, next: d.nextAttemptAt.toISOString(), reason: d.reason }, "DEFERRED");
      ctx.metrics?.retries.inc({ reason: d.rateLimited ? "rate-limited" : d.faxTry ? "fax-result" : "temporary" });
    }
    return;
  }
  // An expired recipient carries our own code, so notifications can say "expired" without parsing text.
  const fields = d.expired ? { errorCode: "JOB_EXPIRED", errorInfo: d.reason } : undefined;
  const ok = await ctx.store.fail(key(r), { reason: d.reason, fields, sendId: opts.sendId, expect: opts.expect });
  if (ok) {
    log.warn({ to: r.number, reason: d.reason, expired: d.expired ?? false }, "FAILED");
    ctx.metrics?.faxResults.inc({ state: "failed" });
    await recordOutcome(ctx, r, "failed", "gateway", { expired: d.expired ?? false });
  }
}

/** Records what the service says about an accepted fax: delivered, failed (maybe retried) or still going. */
export async function applyRecord(ctx: DispatchContext, r: Recipient, rec: FaxRecord): Promise<void> {
  const d = classifyFaxRecord(rec, r.faxTries, retryContext(ctx, r));
  const fields = resultFields(rec);
  const log = childLog(ctx.log, { job: r.jobId });
  if (d.action === "pending") {
    await ctx.store.recordProgress(key(r), fields);
    return;
  }
  if (d.action === "delivered") {
    if (await ctx.store.complete(key(r), fields)) {
      log.info(
        { to: r.number, messageId: rec.messageId, pages: rec.pagesComplete ?? rec.pagesCount, duration: rec.duration },
        "DELIVERED",
      );
      ctx.metrics?.faxResults.inc({ state: "delivered" });
      await recordOutcome(ctx, r, "delivered", "service", { pages: rec.pagesComplete ?? rec.pagesCount ?? 0 });
    }
    return;
  }
  if (d.action === "fail") {
    if (await ctx.store.fail(key(r), { reason: d.reason, fields, expect: ["processing", "unknown"] })) {
      log.warn({ to: r.number, messageId: rec.messageId, reason: d.reason, errorCode: rec.errorCode }, "FAILED");
      ctx.metrics?.faxResults.inc({ state: "failed" });
      // the service's word: cancelled there (by its console or API), or failed with its code
      const cancelled = (rec.status ?? "").toLowerCase() === "cancelled";
      await recordOutcome(ctx, r, cancelled ? "cancelled" : "failed", "service", {
        ...(rec.errorCode ? { errorCode: String(rec.errorCode) } : {}),
      });
    }
    return;
  }
  await applyDecision(ctx, r, d, { expect: ["processing", "unknown"] });
}
