// The send calls for a claimed group: sendFax for one recipient, sendFaxToMany for several, one
// call per cover "To:" name (the service takes one recipientName per call).
// Whatever happens, every recipient leaves `sending` before this returns: accepted, deferred,
// failed or unknown (never left for a lease to expire while we are still alive).
import {
  FaxApiError,
  type FaxApi,
  type FaxFile,
  type FaxRecord,
  type SendFaxRequest,
  type SendManyRequest,
  type SendManyResult,
  checkKey,
} from "../fax/index.js";
import type { ClaimedGroup, Job, Recipient } from "../store/index.js";
import { classifyApiError, classifyRecipientError } from "./classify.js";
import { noteCf, sameNumber, type DispatchContext } from "./context.js";
import { applyDecision, applyRecord, retryContext } from "./outcome.js";
import { recordOutcome } from "./ledger-rows.js";

function serviceText(e: FaxApiError): string {
  return [e.serviceName, e.serviceMessage].filter(Boolean).join(": ") || e.message;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function baseRequest(
  ctx: DispatchContext,
  job: Job,
  sendId: string,
  nowMs: number,
): Promise<Omit<SendManyRequest, "recipientFax">> {
  // The store says where a document's bytes are (SQLite: its file; PostgreSQL: a local copy).
  const files: FaxFile[] = await Promise.all(
    job.documents.map(async (d) => ({
      path: await ctx.store.documentPath(d),
      name: d.name,
      contentType: d.contentType,
    })),
  );
  // the reply sheet last: the recipient faxes it back in front of their answer
  if (job.cover.replySheet && ctx.replySheets) files.push(await ctx.replySheets.fileFor(job));
  const c = job.cover;
  const req: Omit<SendManyRequest, "recipientFax"> = {
    files,
    cf: { faxgateJob: job.id, faxgateSend: sendId },
  };
  if (c.enabled) {
    req.coverPage = true;
    if (c.coverPageId) req.coverPageId = c.coverPageId;
    if (c.subject) req.subject = c.subject;
    if (c.notes) req.notes = c.notes;
    if (c.senderName) req.senderName = c.senderName;
    if (c.recipientName) req.recipientName = c.recipientName;
  }
  if (job.scheduledAt && Date.parse(job.scheduledAt) > nowMs) req.scheduledDate = job.scheduledAt;
  // The service takes tag ids; tag words from tickets are kept on the job only (an unknown id
  // would make the service refuse the whole fax).
  const tagIds = job.tags.filter((t) => UUID.test(t));
  if (tagIds.length) req.tags = tagIds;
  return req;
}

/** The service's limit on the cover's TO field. */
const RECIPIENT_NAME_MAX = 40;

/** The cover's "To:" name of one recipient (cut to the service's limit, by code point), or undefined. */
function toName(job: Job, r: Recipient): string | undefined {
  if (!job.cover.enabled || job.cover.recipientName) return undefined;
  const chars = Array.from(r.name?.trim() ?? "");
  if (chars.length === 0) return undefined;
  return chars.length <= RECIPIENT_NAME_MAX
    ? chars.join("")
    : `${chars
        .slice(0, RECIPIENT_NAME_MAX - 1)
        .join("")
        .trimEnd()}…`;
}

/**
 * Recipients that can share one call. The cover's "To:" is one field per call (send-to-many takes
 * one recipientName for all), so recipients with different names go in separate calls; those with
 * the same name, or none, still share one.
 */
export function splitByName(job: Job, recipients: Recipient[]): Recipient[][] {
  const parts = new Map<string, Recipient[]>();
  for (const r of recipients) {
    const k = toName(job, r) ?? "";
    parts.set(k, [...(parts.get(k) ?? []), r]);
  }
  return [...parts.values()];
}

export async function sendGroup(ctx: DispatchContext, group: ClaimedGroup): Promise<void> {
  const { job, sendId } = group;
  const log = ctx.log.child({ job: job.id });
  // The last line of the destination policy: a job queued before a rule changed is not sent.
  const recipients: Recipient[] = [];
  for (const r of group.recipients) {
    const v = ctx.destinations(job.user, r.number);
    if (v.ok) recipients.push(r);
    else
      await applyDecision(
        ctx,
        r,
        { action: "fail", reason: `destination not allowed: ${v.reason}` },
        { sendId, expect: ["sending"] },
      );
  }
  if (recipients.length === 0) return;
  const settled = new Set<number>();
  // Recipients whose request may have been put on the wire by the client.
  const wentOut = new Set<number>();
  const keys = (rs: Recipient[]) => rs.map((r) => ({ jobId: r.jobId, idx: r.idx }));
  const accept = async (r: Recipient, rec: FaxRecord, apiCalls: number): Promise<void> => {
    settled.add(r.idx);
    if (!rec.messageId) {
      await ctx.store.addApiCalls([{ jobId: r.jobId, idx: r.idx }], apiCalls);
      await applyDecision(
        ctx,
        r,
        { action: "unknown", reason: "the service answered without a messageId" },
        { sendId },
      );
      return;
    }
    await noteCf(ctx, rec);
    if (
      await ctx.store.markAccepted(
        { jobId: r.jobId, idx: r.idx },
        sendId,
        { messageId: rec.messageId, pagesCount: rec.pagesCount ?? null },
        apiCalls,
      )
    ) {
      log.info({ to: r.number, messageId: rec.messageId, sendId, recipients: recipients.length }, "SENT");
      ctx.metrics?.sends.inc({ result: "accepted" });
      await recordOutcome(ctx, r, "accepted", "service");
      const status = (rec.status ?? "").toLowerCase();
      if (status === "success" || status === "failed" || status === "cancelled") {
        await applyRecord(ctx, { ...r, state: "processing", messageId: rec.messageId }, rec);
      }
    }
  };
  let client: FaxApi | null = null;
  // The part being sent; a failure of its call is its own, the parts after it never start.
  let current: Recipient[] = [];
  let callCounted = false;
  try {
    // no client (a leaver without an admin key: dispatch/leaver-client.ts) answers for every recipient
    current = recipients;
    const api = ctx.clientFor(job.user);
    current = [];
    client = api;
    if (ctx.holds.isHeld(job.user)) {
      // Held for a refused key: prove the key before sending anything with it.
      const check = await ctx.call(() => checkKey(api));
      if (!check.ok && check.refused) {
        for (const r of recipients) {
          settled.add(r.idx);
          await applyDecision(
            ctx,
            r,
            { action: "hold", reason: check.detail },
            { sendId, expect: ["sending"], user: job.user },
          );
        }
        return;
      }
      if (check.ok) ctx.keyWorks(job.user);
    }
    const base = await baseRequest(ctx, job, sendId, ctx.clock.now());
    for (const part of splitByName(job, recipients)) {
      current = part;
      callCounted = false;
      const name = toName(job, part[0]!);
      const named = name ? { ...base, recipientName: name } : base;
      if (part.length === 1) {
        const r = part[0]!;
        const req: SendFaxRequest = { ...named, faxNumber: r.number };
        const rec = await ctx.call(() => {
          wentOut.add(r.idx);
          return api.sendFax(req);
        });
        callCounted = true;
        await accept(r, rec, 1);
        continue;
      }
      const res: SendManyResult = await ctx.call(() => {
        for (const r of part) wentOut.add(r.idx);
        return api.sendFaxToMany({ ...named, recipientFax: part.map((r) => r.number) });
      });
      await ctx.store.addApiCalls(keys(part), 1);
      callCounted = true;
      const taken = new Set<string>();
      for (const r of part) {
        const rec = res.success.find((s) => sameNumber(s.faxNumber, r.number) && !taken.has(s.messageId));
        if (rec) {
          taken.add(rec.messageId);
          await accept(r, rec, 0);
          continue;
        }
        const err = res.errors.find((e) => sameNumber(e.recipientFax, r.number));
        if (err) {
          settled.add(r.idx);
          await applyDecision(ctx, r, classifyRecipientError(err), { sendId });
        }
        // Neither in success nor in errors: left for the finally block (unknown, reconciled).
      }
    }
  } catch (err) {
    const mayHaveGoneOut = current.some((r) => wentOut.has(r.idx));
    if (!callCounted) await ctx.store.addApiCalls(keys(current), mayHaveGoneOut ? 1 : 0);
    // A 403 may refuse this request (a destination the account may not dial), not the key: the
    // key is held only if /v1/me refuses it too.
    let keyWorks = false;
    if (client && err instanceof FaxApiError && err.status === 403) {
      const c = client;
      keyWorks = (await ctx.call(() => checkKey(c)).catch(() => null))?.ok === true;
    }
    for (const r of current) {
      if (settled.has(r.idx)) continue;
      settled.add(r.idx);
      let d = classifyApiError(err, mayHaveGoneOut, retryContext(ctx, r));
      if (d.action === "hold" && keyWorks)
        d = { action: "fail", reason: `the fax service refused this fax: ${serviceText(err as FaxApiError)}` };
      if (d.action === "defer" && d.rateLimited) ctx.pause(d.nextAttemptAt.getTime() - ctx.clock.now());
      if (d.action !== "unknown" && d.action !== "hold")
        ctx.metrics?.sends.inc({ result: d.action === "defer" ? "deferred" : "failed" });
      await applyDecision(ctx, r, d, { sendId, expect: ["sending", "unknown"], user: job.user });
    }
  } finally {
    for (const r of recipients) {
      if (settled.has(r.idx)) continue;
      try {
        await applyDecision(
          ctx,
          r,
          wentOut.has(r.idx)
            ? { action: "unknown", reason: "the service did not report on this destination" }
            : { action: "defer", reason: "the send did not start", nextAttemptAt: new Date(ctx.clock.now() + 1000) },
          { sendId, expect: ["sending"] },
        );
      } catch (e) {
        // The store itself failed: the lease expires and releaseExpired marks it unknown.
        log.error({ err: (e as Error).message, to: r.number }, "could not record the send outcome");
      }
    }
  }
}
