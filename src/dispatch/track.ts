// Following accepted faxes to their result, and reconciling sends whose outcome is unknown.
// Both match the service's records locally (messageId, cf.faxgateSend, number): the service's
// own query filter is a hint, not something to trust.
import {
  type FaxApi,
  type FaxRecord,
  type HistoryQuery,
  isUnauthorized,
  offsetMemoryOf,
  walkHistory,
} from "../fax/index.js";
import { type RecipientKey, PARKED, type Recipient } from "../store/index.js";
import { classifyApiError, deferOrExpire, retryDelayMs } from "./classify.js";
import { cfEcho, dayBefore, noteCf, sameNumber, type DispatchContext } from "./context.js";
import { applyRecord, retryContext } from "./outcome.js";
import { recordOutcome } from "./ledger-rows.js";
import { describeError, FaxgateError } from "../errors.js";
import { childLog } from "../log/index.js";

type Tracked = Recipient & { user: string };

/** Up to this many faxes in flight for a user, one faxInfo each is cheaper than a history walk. */
export const FAX_INFO_MAX = 3;
/** Faxes followed one by one in a poll while the history budget is spent. */
const FAX_INFO_WHEN_HISTORY_SPENT = 20;

function oldestFirst(list: Tracked[]): Tracked[] {
  return [...list].sort((a, b) => (a.sentAt ?? "").localeCompare(b.sentAt ?? ""));
}
/** Bound on history pages per walk, so one poll never runs away on a huge account. */
const MAX_PAGES = 40;

const keyOf = (r: Recipient): RecipientKey => ({ jobId: r.jobId, idx: r.idx });

function byUser(list: Tracked[]): Map<string, Tracked[]> {
  const m = new Map<string, Tracked[]>();
  for (const r of list) m.set(r.user, [...(m.get(r.user) ?? []), r]);
  return m;
}

/** Walks history pages (whichever way the service counts offset) until `onPage` says every wanted record was seen. */
async function walk(
  ctx: DispatchContext,
  client: FaxApi,
  query: HistoryQuery,
  onPage: (rows: FaxRecord[]) => boolean | Promise<boolean>,
  charge: (calls: number) => Promise<void>,
): Promise<{ complete: boolean }> {
  return walkHistory(
    query,
    {
      limit: ctx.queue.historyPageSize,
      maxPages: MAX_PAGES,
      memory: offsetMemoryOf(client),
      page: async (q) => {
        const res = await ctx.call(() => client.history(q));
        await charge(1);
        return res;
      },
    },
    onPage,
  );
}

/**
 * Whether this gateway follows `user`'s faxes: in a fleet one gateway per user at a time (one
 * history walk for the user, not one per gateway), alone every user.
 */
function follows(ctx: DispatchContext, user: string): boolean {
  return ctx.fleet?.owns(user) ?? true;
}

/**
 * Why each user's last status pass failed, per dispatcher: a cause that lasts (an outage, a leaver
 * with no admin key) is logged when it starts and when it ends, not again every pass.
 */
const failingPolls = new WeakMap<DispatchContext, Map<string, string>>();

/** One status pass over every `processing` fax this gateway follows; resolves to how many there were. */
export async function pollProcessing(ctx: DispatchContext): Promise<number> {
  const all = await ctx.store.listRecipients({ state: "processing" });
  const failing = failingPolls.get(ctx) ?? new Map<string, string>();
  failingPolls.set(ctx, failing);
  await Promise.all(
    [...byUser(all)]
      .filter(([user]) => follows(ctx, user))
      .map(([user, list]) =>
        pollUser(ctx, user, list).then(
          () => {
            if (failing.delete(user)) ctx.log.info({ user }, "status poll works again");
          },
          (err) => {
            const why = describeError(err);
            if (isUnauthorized(err)) ctx.keyRefused(user, why);
            if (failing.get(user) !== why) ctx.log.warn({ user, err: why }, "status poll failed, will try again");
            failing.set(user, why);
          },
        ),
      ),
  );
  return all.length;
}

async function pollUser(ctx: DispatchContext, user: string, list: Tracked[]): Promise<void> {
  const client = ctx.clientFor(user);
  // History spent for this minute (the service allows ~8 calls): fax-info calls, which it does not
  // limit that way, follow the oldest faxes meanwhile instead of waiting for the window.
  // Two calls of the budget are left to reconciliation (a lost answer) and the inbound poller.
  const historyFree = ctx.gate?.historyAvailable(2) ?? true;
  const lookups =
    list.length <= FAX_INFO_MAX ? list : historyFree ? [] : oldestFirst(list).slice(0, FAX_INFO_WHEN_HISTORY_SPENT);
  if (lookups.length === 0) {
    const wanted = new Map(list.filter((r) => r.messageId).map((r) => [r.messageId!, r]));
    const oldest = list.reduce<string | null>((m, r) => (r.sentAt && (!m || r.sentAt < m) ? r.sentAt : m), null);
    const walked = await walk(
      ctx,
      client,
      { direction: "outbound", status: "all", fromDate: dayBefore(oldest, ctx.clock.now()) },
      async (rows) => {
        for (const rec of rows) {
          const r = wanted.get(rec.messageId);
          if (!r) continue;
          wanted.delete(rec.messageId);
          await noteCf(ctx, rec);
          await applyRecord(ctx, r, rec);
        }
        return wanted.size === 0;
      },
      (calls) => ctx.store.addApiCalls(list.map(keyOf), calls),
    );
    // Not in the listing (purged, or beyond the walk): ask for those one by one.
    if (walked.complete) lookups.push(...wanted.values());
  }
  for (const r of lookups) {
    if (!r.messageId) continue;
    try {
      const rec = await ctx.call(() => client.faxInfo(r.messageId!));
      await ctx.store.addApiCalls([keyOf(r)], 1);
      await noteCf(ctx, rec);
      await applyRecord(ctx, r, rec);
    } catch (err) {
      await ctx.store.addApiCalls([keyOf(r)], 1).catch(() => undefined);
      if (isUnauthorized(err)) ctx.keyRefused(user, describeError(err));
      childLog(ctx.log, { job: r.jobId }).warn(
        { messageId: r.messageId, err: describeError(err) },
        "status lookup failed, will try again",
      );
    }
  }
}

/**
 * Sends whose outcome is unknown, after a grace period: adopt the fax if the service has it,
 * send again (new sendId) if the service answered and does not, else wait and look again.
 * Resolves to how many were due.
 */
export async function reconcileUnknown(ctx: DispatchContext): Promise<number> {
  const due = await ctx.store.listRecipients({
    state: "unknown",
    sentBefore: new Date(ctx.clock.now() - ctx.queue.reconcileGrace),
  });
  const bySend = new Map<string, Tracked[]>();
  for (const r of due)
    bySend.set(r.sendId ?? `none:${r.jobId}:${r.idx}`, [
      ...(bySend.get(r.sendId ?? `none:${r.jobId}:${r.idx}`) ?? []),
      r,
    ]);
  const byUser = new Map<string, Tracked[][]>();
  for (const g of bySend.values())
    if (follows(ctx, g[0]!.user)) byUser.set(g[0]!.user, [...(byUser.get(g[0]!.user) ?? []), g]);
  await Promise.all([...byUser].map(([user, groups]) => reconcileUser(ctx, user, groups)));
  return due.length;
}

/**
 * One walk of the user's outbound history serves every lost send of that user: history calls
 * are the scarcest thing the service gives (about 8 a minute for the whole account).
 */
async function reconcileUser(ctx: DispatchContext, user: string, groups: Tracked[][]): Promise<void> {
  const sends = groups.filter((g) => g[0]!.sendId);
  for (const g of groups) if (!g[0]!.sendId) await reconcileSend(ctx, g, [], null);
  if (sends.length === 0) return;
  const all = sends.flat();
  const oldest = all.reduce<string | null>((m, r) => (r.sentAt && (!m || r.sentAt < m) ? r.sentAt : m), null);
  const rows: FaxRecord[] = [];
  let failure: unknown = null;
  let complete = true;
  try {
    const client = ctx.clientFor(user);
    const open = new Set(all.map((r) => `${r.sendId}|${r.number.replace(/\D/g, "")}`));
    ({ complete } = await walk(
      ctx,
      client,
      { direction: "outbound", status: "all", fromDate: dayBefore(oldest, ctx.clock.now()) },
      (page) => {
        rows.push(...page);
        for (const rec of page)
          if (rec.cf?.faxgateSend) open.delete(`${rec.cf.faxgateSend}|${(rec.faxNumber ?? "").replace(/\D/g, "")}`);
        // every lost send found by its own cf: no need to read further back
        return open.size === 0;
      },
      (calls) => ctx.store.addApiCalls(all.map(keyOf), calls),
    ));
  } catch (err) {
    failure = err;
  }
  // A walk cut short by its page bound cannot prove a fax absent: look again later.
  const partial =
    !complete && !failure
      ? new FaxgateError(
          "API_BAD_RESPONSE",
          `the outbound history is longer than ${MAX_PAGES} pages; reading it again later`,
          { temporary: true },
        )
      : null;
  for (const g of sends) await reconcileSend(ctx, g, rows, failure ?? partial);
}

/** How far a service record's createdAt may lie from our send and still be that send (clock skew, queueing). */
const MATCH_BEFORE_MS = 5 * 60_000;
const MATCH_AFTER_MS = 30 * 60_000;
/** A parked send is looked at again this often: the service's history may have been late. */
const PARKED_RECHECK_MS = 3_600_000;

/** A record carries faxgate's own custom fields: the account stores and echoes `cf`. */
function hasOurCf(rec: FaxRecord): boolean {
  return !!rec.cf && typeof rec.cf === "object" && typeof rec.cf.faxgateSend === "string" && rec.cf.faxgateSend !== "";
}

/**
 * Finds the faxes of one send whose answer was lost, without trusting `cf`: by `cf.faxgateSend`
 * when the service echoes it; otherwise by number within a time window around the send, among
 * records no job tracks, with the cover subject to break a tie. When it cannot decide (no
 * candidate, or several), it never sends again: the recipient is parked as `unknown` and the
 * operator told. Only when the account is seen echoing our `cf` does "no such fax" prove that
 * the send never took effect, and only then is it sent again, unless it was parked already.
 */
async function reconcileSend(
  ctx: DispatchContext,
  group: Tracked[],
  rows: FaxRecord[],
  failure: unknown,
): Promise<void> {
  const first = group[0]!;
  const sendId = first.sendId;
  if (!sendId) {
    // Cannot happen through claimDue; treat as never sent.
    for (const r of group)
      await ctx.store.defer(keyOf(r), {
        error: "no send identity recorded",
        nextAttemptAt: new Date(ctx.clock.now()),
        expect: ["unknown"],
      });
    return;
  }
  const lost: LostSend = { ctx, sendId, log: childLog(ctx.log, { job: first.jobId }), open: new Map() };
  for (const r of group) lost.open.set(r.idx, r);
  const job = await ctx.store.getJob(first.jobId);
  const subject = job?.cover.enabled ? job.cover.subject : undefined;
  try {
    if (failure) throw failure;
    const { candidates, cfEchoed } = await matchHistory(lost, rows, first.sentAt);
    for (const r of [...lost.open.values()]) {
      let found = candidates.get(r.idx) ?? [];
      if (found.length > 1 && subject) {
        const same = found.filter((rec) => rec.subject === subject);
        if (same.length >= 1) found = same;
      }
      await settleOne(lost, r, found, cfEchoed);
    }
  } catch (err) {
    await lookupFailed(lost, first, err);
  }
}

/** One send being reconciled: its recipients not settled yet (by idx), and how to say so. */
interface LostSend {
  ctx: DispatchContext;
  sendId: string;
  log: DispatchContext["log"];
  open: Map<number, Tracked>;
}

/** The service has `rec` for `r`: taken as this send's fax (accepted, then followed). */
async function adopt(lost: LostSend, r: Tracked, rec: FaxRecord, how: string): Promise<void> {
  const { ctx, sendId } = lost;
  lost.open.delete(r.idx);
  if (
    await ctx.store.markAccepted(keyOf(r), sendId, { messageId: rec.messageId, pagesCount: rec.pagesCount ?? null })
  ) {
    lost.log.info(
      { to: r.number, messageId: rec.messageId, sendId, how },
      "RECONCILED fax found at the service, adopted",
    );
    await recordOutcome(ctx, r, "accepted", "service", { reconciled: true });
    await applyRecord(ctx, { ...r, state: "processing", messageId: rec.messageId }, rec);
  }
}

/**
 * The outbound history since the day before the send (read by reconcileUser): records with this
 * send's cf are adopted at once; records with no cf of ours, to a recipient's number within the
 * window around the send and tracked by no job, are its candidates. The service's `query` filter
 * is not relied on (it may not search custom fields, or numbers as we write them).
 */
async function matchHistory(
  lost: LostSend,
  rows: FaxRecord[],
  groupSentAt: string | null,
): Promise<{ candidates: Map<number, FaxRecord[]>; cfEchoed: boolean }> {
  const { ctx, sendId } = lost;
  // Our cf on any record in the walk, or on our earlier faxes, proves the account keeps it.
  let cfEchoed = (await cfEcho(ctx)) === "kept";
  const candidates = new Map<number, FaxRecord[]>();
  const sentAtOf = (r: Tracked): number =>
    Date.parse(r.sentAt ?? groupSentAt ?? new Date(ctx.clock.now()).toISOString());
  for (const rec of rows) {
    if (hasOurCf(rec)) cfEchoed = true;
    if (rec.cf?.faxgateSend === sendId) {
      const r = [...lost.open.values()].find((x) => sameNumber(x.number, rec.faxNumber));
      if (r) await adopt(lost, r, rec, "cf");
      continue;
    }
    // Another send of ours, by its cf: not this one.
    if (hasOurCf(rec)) continue;
    for (const r of lost.open.values()) {
      if (!sameNumber(r.number, rec.faxNumber) || !rec.createdAt) continue;
      const at = Date.parse(rec.createdAt);
      const sentAt = sentAtOf(r);
      if (Number.isNaN(at) || at < sentAt - MATCH_BEFORE_MS || at > sentAt + MATCH_AFTER_MS) continue;
      if (await ctx.store.isKnownMessage(rec.messageId)) continue;
      candidates.set(r.idx, [...(candidates.get(r.idx) ?? []), rec]);
    }
  }
  return { candidates, cfEchoed };
}

/** One recipient's end from what the history showed: adopted, sent again (cf kept, no record), or parked. */
async function settleOne(lost: LostSend, r: Tracked, found: FaxRecord[], cfEchoed: boolean): Promise<void> {
  if (found.length === 1) {
    await adopt(lost, r, found[0]!, cfEchoed ? "number and time (cf not on this record)" : "number and time");
    return;
  }
  // A parked send was given up on out loud: its user was told it will not be sent again and
  // may have sent it again by hand. Its hourly look only adopts; a proof of cf that turned up
  // since does not make it sendable.
  const parked = (r.lastError ?? "").startsWith(PARKED);
  if (found.length === 0 && cfEchoed && !parked) {
    await sendAgain(lost, r);
    return;
  }
  await park(
    lost.ctx,
    r,
    lost.sendId,
    found.length > 0
      ? `${found.length} faxes to this number near the time of the send could be this one`
      : parked && cfEchoed
        ? "still no fax to this number near the time of the send"
        : "no fax to this number near the time of the send, and the service does not keep our custom fields to prove it was never made",
  );
}

/**
 * The service keeps our cf and has no record of this send: it never took effect. Sent again, on
 * the retry schedule (a send that keeps failing this way must not loop fast), or failed as expired.
 */
async function sendAgain(lost: LostSend, r: Tracked): Promise<void> {
  const { ctx, sendId, log } = lost;
  const why = "the earlier send never reached the fax service";
  const d = deferOrExpire(why, retryDelayMs(ctx.queue.retrySchedule, r.attempts), retryContext(ctx, r));
  if (
    d.action === "defer" &&
    (await ctx.store.defer(keyOf(r), { error: why, nextAttemptAt: d.nextAttemptAt, sendId, expect: ["unknown"] }))
  ) {
    log.info(
      { to: r.number, sendId, next: d.nextAttemptAt.toISOString() },
      "RECONCILED no fax at the service, sending again",
    );
    await recordOutcome(ctx, r, "resent", "gateway");
  } else if (
    d.action === "fail" &&
    (await ctx.store.fail(keyOf(r), { reason: d.reason, sendId, expect: ["unknown"] }))
  ) {
    log.warn({ to: r.number, sendId, reason: d.reason }, "FAILED");
    ctx.metrics?.faxResults.inc({ state: "failed" });
    await recordOutcome(ctx, r, "failed", "gateway", { expired: true });
  }
}

/** The history could not be read (or not all of it): the send stays unknown, looked at again later. */
async function lookupFailed(lost: LostSend, first: Tracked, err: unknown): Promise<void> {
  const { ctx, sendId } = lost;
  const d = classifyApiError(err, false, retryContext(ctx, first));
  if (d.action === "defer" && d.rateLimited) ctx.pause(d.nextAttemptAt.getTime() - ctx.clock.now());
  if (d.action === "hold" && isUnauthorized(err)) ctx.keyRefused(first.user, d.reason);
  const next = new Date(ctx.clock.now() + retryDelayMs(ctx.queue.retrySchedule, 1));
  for (const r of lost.open.values())
    await ctx.store.postponeUnknown(keyOf(r), sendId, `reconciliation failed: ${describeError(err)}`, next);
  lost.log.warn({ sendId, err: describeError(err) }, "reconciliation failed, the send stays unknown");
}

/** Never sends twice: the recipient stays `unknown`, looked at hourly, and a person is told once. */
async function park(ctx: DispatchContext, r: Tracked, sendId: string, why: string): Promise<void> {
  const first = !(r.lastError ?? "").startsWith(PARKED);
  const next = new Date(ctx.clock.now() + PARKED_RECHECK_MS);
  if (
    !(await ctx.store.postponeUnknown(
      keyOf(r),
      sendId,
      `${PARKED}: ${why}; it will not be sent again by itself`,
      next,
    )) ||
    !first
  )
    return;
  childLog(ctx.log, { job: r.jobId }).error(
    { to: r.number, sendId, why },
    "UNKNOWN send parked: the gateway cannot tell whether this fax went out and will not send it again; check the fax service history",
  );
  ctx.metrics?.sends.inc({ result: "parked" });
  try {
    await ctx.store.enqueueNotification({
      kind: "alert",
      user: r.user,
      jobId: r.jobId,
      dedupeKey: `parked:${r.jobId}:${r.idx}:${sendId}`,
      payload: {
        subject: `cannot tell whether the fax to ${r.number} went out`,
        text: `The answer to the send of job ${r.jobId} to ${r.number} was lost, and the fax service's history does not settle it: ${why}. The gateway will not send it again by itself, so that nobody receives it twice.`,
        action: `Check the fax service history for this number. Not there: an administrator's \`faxgate retry ${r.jobId}\` sends it again. There, or no longer wanted: cancel the fax in the console or with \`faxgate cancel ${r.jobId}\`. Until then no other fax goes to this number (one at a time per number).`,
      },
    });
  } catch (err) {
    ctx.log.error({ err: describeError(err) }, "could not queue the parked-send notice");
  }
}
