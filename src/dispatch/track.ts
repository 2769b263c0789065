// Following accepted faxes to their result, and reconciling sends whose outcome is unknown.
// Both match the service's records locally (messageId, cf.faxgateSend, number): the service's
// own query filter is a hint, not something to trust.
import type { FaxApi, FaxRecord, HistoryQuery } from '../fax/types.js';
import type { RecipientKey } from '../store/store.js';
import type { Recipient } from '../store/types.js';
import { classifyApiError, deferOrExpire, retryDelayMs } from './classify.js';
import { dayBefore, sameNumber, type DispatchContext } from './context.js';
import { applyRecord, retryContext } from './outcome.js';
import { describeError } from '../errors.js';

type Tracked = Recipient & { user: string };

/** Up to this many faxes in flight for a user, one faxInfo each is cheaper than a history walk. */
export const FAX_INFO_MAX = 3;
const HISTORY_PAGE = 500;
/** Bound on history pages per walk, so one poll never runs away on a huge account. */
const MAX_PAGES = 40;

const keyOf = (r: Recipient): RecipientKey => ({ jobId: r.jobId, idx: r.idx });

function byUser(list: Tracked[]): Map<string, Tracked[]> {
  const m = new Map<string, Tracked[]>();
  for (const r of list) m.set(r.user, [...(m.get(r.user) ?? []), r]);
  return m;
}

/** Walks history pages until `done` says every wanted record was seen or the pages run out. */
async function walkHistory(ctx: DispatchContext, client: FaxApi, query: HistoryQuery, onPage: (rows: FaxRecord[]) => boolean, charge: (calls: number) => void): Promise<{ complete: boolean }> {
  let offset = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await ctx.call(() => client.history({ ...query, offset, limit: HISTORY_PAGE }));
    charge(1);
    const stop = onPage(res.rows);
    if (stop) return { complete: true };
    offset += res.rows.length;
    if (res.rows.length === 0 || res.rows.length < HISTORY_PAGE || offset >= res.count) return { complete: true };
  }
  return { complete: false };
}

/** One status pass over every `processing` fax. */
export async function pollProcessing(ctx: DispatchContext): Promise<void> {
  const all = ctx.store.listProcessing();
  await Promise.all([...byUser(all)].map(([user, list]) => pollUser(ctx, user, list).catch((err) => {
    ctx.log.warn({ user, err: describeError(err) }, 'status poll failed, will try again');
  })));
}

async function pollUser(ctx: DispatchContext, user: string, list: Tracked[]): Promise<void> {
  const client = ctx.clientFor(user);
  const lookups = list.length <= FAX_INFO_MAX ? list : [];
  if (lookups.length === 0) {
    const wanted = new Map(list.filter((r) => r.messageId).map((r) => [r.messageId!, r]));
    const oldest = list.reduce<string | null>((m, r) => (r.sentAt && (!m || r.sentAt < m) ? r.sentAt : m), null);
    const walk = await walkHistory(ctx, client, { direction: 'outbound', status: 'all', fromDate: dayBefore(oldest, ctx.clock.now()) }, (rows) => {
      for (const rec of rows) {
        const r = wanted.get(rec.messageId);
        if (!r) continue;
        wanted.delete(rec.messageId);
        applyRecord(ctx, r, rec);
      }
      return wanted.size === 0;
    }, (calls) => ctx.store.addApiCalls(list.map(keyOf), calls));
    // Not in the listing (purged, or beyond the walk): ask for those one by one.
    if (walk.complete) lookups.push(...wanted.values());
  }
  for (const r of lookups) {
    if (!r.messageId) continue;
    try {
      const rec = await ctx.call(() => client.faxInfo(r.messageId!));
      ctx.store.addApiCalls([keyOf(r)], 1);
      applyRecord(ctx, r, rec);
    } catch (err) {
      ctx.store.addApiCalls([keyOf(r)], 1);
      ctx.log.child({ job: r.jobId }).warn({ messageId: r.messageId, err: describeError(err) }, 'status lookup failed, will try again');
    }
  }
}

/**
 * Sends whose outcome is unknown, after a grace period: adopt the fax if the service has it,
 * send again (new sendId) if the service answered and does not, else wait and look again.
 */
export async function reconcileUnknown(ctx: DispatchContext): Promise<void> {
  const due = ctx.store.listUnknown(new Date(ctx.clock.now() - ctx.tuning.reconcileGraceMs));
  const bySend = new Map<string, Tracked[]>();
  for (const r of due) bySend.set(r.sendId ?? `none:${r.jobId}:${r.idx}`, [...(bySend.get(r.sendId ?? `none:${r.jobId}:${r.idx}`) ?? []), r]);
  await Promise.all([...bySend.values()].map((group) => reconcileSend(ctx, group)));
}

async function reconcileSend(ctx: DispatchContext, group: Tracked[]): Promise<void> {
  const first = group[0]!;
  const sendId = first.sendId;
  const log = ctx.log.child({ job: first.jobId });
  const keys = group.map(keyOf);
  if (!sendId) {
    // Cannot happen through claimDue; treat as never sent.
    for (const r of group) ctx.store.defer(keyOf(r), { error: 'no send identity recorded', nextAttemptAt: new Date(ctx.clock.now()), expect: ['unknown'] });
    return;
  }
  const open = new Map(group.map((r) => [r.idx, r]));
  const fromDate = dayBefore(first.sentAt, ctx.clock.now());
  const adopt = (r: Tracked, rec: FaxRecord, how: string): void => {
    open.delete(r.idx);
    if (ctx.store.markAccepted(keyOf(r), sendId, { messageId: rec.messageId, pagesCount: rec.pagesCount ?? null })) {
      log.info({ to: r.number, messageId: rec.messageId, sendId, how }, 'RECONCILED fax found at the service, adopted');
      applyRecord(ctx, { ...r, state: 'processing', messageId: rec.messageId }, rec);
    }
  };
  try {
    const client = ctx.clientFor(first.user);
    const charge = (calls: number): void => ctx.store.addApiCalls(keys, calls);
    const matchCf = (rows: FaxRecord[]): boolean => {
      for (const rec of rows) {
        if (rec.cf?.faxgateSend !== sendId) continue;
        const r = [...open.values()].find((x) => sameNumber(x.number, rec.faxNumber));
        if (r) adopt(r, rec, 'cf');
      }
      return open.size === 0;
    };
    await walkHistory(ctx, client, { direction: 'outbound', query: sendId, fromDate }, matchCf, charge);
    // The query may not search custom fields on every service variant: look by number as well.
    for (const r of [...open.values()]) {
      const sentAt = Date.parse(r.sentAt ?? first.sentAt ?? new Date(ctx.clock.now()).toISOString());
      let candidate: FaxRecord | null = null;
      await walkHistory(ctx, client, { direction: 'outbound', query: r.number, fromDate }, (rows) => {
        if (matchCf(rows)) return true;
        for (const rec of rows) {
          // A record without any cf cannot be told apart by identity; a fax to the same number,
          // created after our send and tracked by no job, is ours (adopting beats faxing twice).
          if (rec.cf || !sameNumber(rec.faxNumber, r.number) || !rec.createdAt) continue;
          if (Date.parse(rec.createdAt) < sentAt - 60_000 || ctx.store.isKnownMessage(rec.messageId)) continue;
          candidate = candidate ?? rec;
        }
        return !open.has(r.idx);
      }, charge);
      if (open.has(r.idx) && candidate) adopt(r, candidate, 'number and time');
    }
    // The service answered and has no such fax: the send never took effect. Send again, on the
    // retry schedule (a send that keeps failing this way must not loop fast), within the job's age.
    for (const r of open.values()) {
      const why = 'the earlier send never reached the fax service';
      const d = deferOrExpire(why, retryDelayMs(ctx.queue.retrySchedule, r.attempts), retryContext(ctx, r));
      if (d.action === 'defer' && ctx.store.defer(keyOf(r), { error: why, nextAttemptAt: d.nextAttemptAt, sendId, expect: ['unknown'] })) {
        log.info({ to: r.number, sendId, next: d.nextAttemptAt.toISOString() }, 'RECONCILED no fax at the service, sending again');
      } else if (d.action === 'fail' && ctx.store.fail(keyOf(r), { reason: d.reason, sendId, expect: ['unknown'] })) {
        log.warn({ to: r.number, sendId, reason: d.reason }, 'FAILED');
        ctx.metrics?.faxResults.inc({ state: 'failed' });
      }
    }
  } catch (err) {
    const d = classifyApiError(err, false, retryContext(ctx, first));
    if (d.action === 'defer' && d.rateLimited) ctx.pause(d.nextAttemptAt.getTime() - ctx.clock.now());
    const next = new Date(ctx.clock.now() + retryDelayMs(ctx.queue.retrySchedule, 1));
    for (const r of open.values()) ctx.store.postponeUnknown(keyOf(r), sendId, `reconciliation failed: ${describeError(err)}`, next);
    log.warn({ sendId, err: describeError(err) }, 'reconciliation failed, the send stays unknown');
  }
}
