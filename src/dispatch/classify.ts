// The one place that decides what a failure means for a recipient: try again later (and when),
// give up (and with which words), or reconcile first because the send may have gone out.
// Rules are data, checked in order; the first that matches decides.
import type { QueueConfig } from "../config/index.js";
import { describeError, FaxgateError } from "../errors.js";
import { FaxApiError, explainFailure, operatorRules, type ResultRule, type FaxRecord } from "../fax/index.js";
import { retryDelayMs as scheduleDelayMs } from "../retry-schedule.js";

export type Decision =
  | { action: "unknown"; reason: string }
  /** The user's key was refused (401/403): hold the user's faxes until a working key is loaded. */
  | { action: "hold"; reason: string }
  /** `rateLimited`: the service asked us to slow down; not a failed try. */
  | { action: "defer"; reason: string; nextAttemptAt: Date; rateLimited?: boolean; faxTry?: boolean }
  | { action: "fail"; reason: string; expired?: boolean };

interface ApiRule {
  name: string;
  when: (err: unknown, sendMayHaveGoneOut: boolean) => boolean;
  action: "unknown" | "defer" | "rate-limited" | "requeue" | "hold" | "fail";
}

/** Ordered: an outcome-unknown send is never retried blindly, even when it is also "temporary". */
export const API_RULES: readonly ApiRule[] = [
  // Refused by our own gate while stopping: nothing left, nothing tried.
  { name: "shutting down", when: (e) => e instanceof FaxgateError && e.code === "SHUTTING_DOWN", action: "requeue" },
  // The claim ran out before the call left (store/sql/leases.ts markCallLeaving): nothing left.
  { name: "claim lost", when: (e) => e instanceof FaxgateError && e.code === "CLAIM_LOST", action: "requeue" },
  { name: "outcome unknown", when: (e) => e instanceof FaxApiError && e.outcomeUnknown, action: "unknown" },
  // A revoked or wrong key is the operator's to fix: nothing is failed for it (issue 13 item 5).
  {
    name: "key refused",
    when: (e) => e instanceof FaxApiError && (e.code === "API_AUTH" || e.code === "API_FORBIDDEN"),
    action: "hold",
  },
  {
    name: "rate limited",
    when: (e) => e instanceof FaxApiError && (e.retryAfterMs !== undefined || e.code === "API_RATE_LIMITED"),
    action: "rate-limited",
  },
  { name: "temporary", when: (e) => e instanceof FaxgateError && e.temporary, action: "defer" },
  { name: "permanent", when: (e) => e instanceof FaxgateError, action: "fail" },
  // Not from the client: a bug or a local fault. If the request may have left, reconcile.
  { name: "unexpected, maybe sent", when: (_e, maybeSent) => maybeSent, action: "unknown" },
  { name: "unexpected, not sent", when: () => true, action: "defer" },
];

export interface RetryContext {
  queue: QueueConfig;
  now: number;
  /** Sends made so far for this recipient (the claim that failed included). */
  attempts: number;
  /** Start of the attempt budget (job creation or last operator retry), ISO. */
  budgetFrom: string;
  /** Math.random by default; injected for tests. */
  random?: () => number;
}

/** Backoff for the n-th failure (1-based) on queue.retrySchedule (ms), last step repeating, +-20% jitter. */
export function retryDelayMs(schedule: readonly number[], n: number, random: () => number = Math.random): number {
  return scheduleDelayMs(schedule, n, { spread: [0.8, 1.2], random });
}

function deadline(ctx: RetryContext): number {
  return Date.parse(ctx.budgetFrom) + ctx.queue.maxAge;
}

/** A deferral, unless the job is past its maximum age: then it fails as expired. */
export function deferOrExpire(
  reason: string,
  delayMs: number,
  ctx: RetryContext,
  extra: { rateLimited?: boolean; faxTry?: boolean } = {},
): Decision {
  if (ctx.now >= deadline(ctx)) {
    return {
      action: "fail",
      expired: true,
      reason: `expired: not delivered within ${ctx.queue.maxAge / 3_600_000} hours (last error: ${reason})`,
    };
  }
  return { action: "defer", reason, nextAttemptAt: new Date(ctx.now + delayMs), ...extra };
}

export function classifyApiError(err: unknown, sendMayHaveGoneOut: boolean, ctx: RetryContext): Decision {
  const rule = API_RULES.find((r) => r.when(err, sendMayHaveGoneOut))!;
  const reason = describeService(err);
  switch (rule.action) {
    case "unknown":
      return { action: "unknown", reason };
    case "hold":
      return { action: "hold", reason: `the fax service refused the key (${reason})` };
    case "requeue":
      return { action: "defer", reason, nextAttemptAt: new Date(ctx.now), rateLimited: true };
    case "rate-limited": {
      const wait = (err as FaxApiError).retryAfterMs ?? retryDelayMs(ctx.queue.retrySchedule, 1, ctx.random);
      return deferOrExpire(reason, wait, ctx, { rateLimited: true });
    }
    case "defer":
      return deferOrExpire(reason, retryDelayMs(ctx.queue.retrySchedule, ctx.attempts, ctx.random), ctx);
    case "fail":
      return { action: "fail", reason };
  }
}

/** The service's own error name and message when it gave them; never secrets (the client strips them). */
function describeService(err: unknown): string {
  if (err instanceof FaxApiError && (err.serviceName || err.serviceMessage)) {
    return [err.serviceName, err.serviceMessage].filter(Boolean).join(": ");
  }
  return describeError(err);
}

/** A per-recipient error of send-to-many: the service refused that destination. */
export function classifyRecipientError(e: { name: string; message: string; error: string }): Decision {
  const text = [e.name, e.message || e.error].filter(Boolean).join(": ");
  return { action: "fail", reason: text || "the fax service refused this destination" };
}

export type RecordDecision = { action: "delivered" } | { action: "pending" } | Decision;

/** Still on its way at the service: processing, transmitting, scheduled, or a status we do not know yet. */
const FINAL_STATUSES = new Set(["success", "failed", "cancelled"]);

export function isFinalStatus(status: string | null | undefined): boolean {
  return FINAL_STATUSES.has((status ?? "").trim().toLowerCase());
}

const compiled = new WeakMap<object, ResultRule[]>();

/** The operator's queue.resultRules, compiled once per config object. */
function rulesOf(queue: QueueConfig): ResultRule[] {
  const list = queue.resultRules;
  if (!list) return [];
  let r = compiled.get(list);
  if (!r) {
    r = operatorRules(list);
    compiled.set(list, r);
  }
  return r;
}

/**
 * What a fax record's status means for its recipient. `faxTries`: failed fax tries before this one.
 * Known retryable results (busy, no answer) get up to queue.maxFaxTries; a result no rule knows gets
 * queue.unknownResultTries more and is reported in the service's own words.
 */
export function classifyFaxRecord(rec: FaxRecord, faxTries: number, ctx: RetryContext): RecordDecision {
  const status = (rec.status ?? "").trim().toLowerCase();
  if (status === "success") return { action: "delivered" };
  if (status === "cancelled") return { action: "fail", reason: "the fax was cancelled at the fax service" };
  if (status !== "failed") return { action: "pending" };
  const meaning = explainFailure(rec, rulesOf(ctx.queue));
  const tries = faxTries + 1;
  const allowed = meaning.rule === null ? 1 + ctx.queue.unknownResultTries : ctx.queue.maxFaxTries;
  if (meaning.action === "retry" && tries < allowed) {
    return deferOrExpire(meaning.words, retryDelayMs(ctx.queue.retrySchedule, tries, ctx.random), ctx, {
      faxTry: true,
    });
  }
  const reason =
    meaning.action === "retry" ? `${meaning.words} (${tries} ${tries === 1 ? "try" : "tries"})` : meaning.words;
  return { action: "fail", reason };
}
