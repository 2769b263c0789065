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
import { FaxgateError } from "../errors.js";
import type { ClaimedGroup, Job, Recipient } from "../store/index.js";
import { classifyApiError, classifyRecipientError } from "./classify.js";
import { noteCf, sameNumber, type DispatchContext } from "./context.js";
import { applyDecision, applyRecord, retryContext } from "./outcome.js";
import { recordOutcome } from "./ledger-rows.js";
import { childLog } from "../log/index.js";

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
  const recipients = await allowedRecipients(ctx, group);
  if (recipients.length === 0) return;
  const send = new GroupSend(ctx, group, recipients);
  try {
    await send.run();
  } catch (err) {
    await send.failed(err);
  } finally {
    await send.settleRest();
  }
}

/** The last line of the destination policy: a recipient queued before a rule changed is failed, not sent. */
async function allowedRecipients(ctx: DispatchContext, group: ClaimedGroup): Promise<Recipient[]> {
  const recipients: Recipient[] = [];
  for (const r of group.recipients) {
    const v = ctx.destinations(group.job.user, r.number);
    if (v.ok) recipients.push(r);
    else
      await applyDecision(
        ctx,
        r,
        { action: "fail", reason: `destination not allowed: ${v.reason}` },
        { sendId: group.sendId, expect: ["sending"] },
      );
  }
  return recipients;
}

const keys = (rs: Recipient[]) => rs.map((r) => ({ jobId: r.jobId, idx: r.idx }));

/** One group's send calls, and what each recipient's outcome is so far. */
class GroupSend {
  private readonly job: Job;
  private readonly sendId: string;
  private readonly log: DispatchContext["log"];
  /** Recipients whose outcome is recorded. */
  private readonly settled = new Set<number>();
  /** Recipients whose request may have been put on the wire by the client (marked in the store first). */
  private readonly wentOut = new Set<number>();
  private client: FaxApi | null = null;
  /** The part being sent; a failure of its call is its own, the parts after it never start. */
  private current: Recipient[] = [];
  private callCounted = false;

  constructor(
    private readonly ctx: DispatchContext,
    group: ClaimedGroup,
    private readonly recipients: Recipient[],
  ) {
    this.job = group.job;
    this.sendId = group.sendId;
    this.log = childLog(ctx.log, { job: group.job.id });
  }

  async run(): Promise<void> {
    const { ctx, job } = this;
    // no client (a leaver without an admin key: dispatch/leaver-client.ts) answers for every recipient
    this.current = this.recipients;
    const api = ctx.clientFor(job.user);
    this.current = [];
    this.client = api;
    if (ctx.holds.isHeld(job.user) && (await this.keyStillRefused(api))) return;
    const base = await baseRequest(ctx, job, this.sendId, ctx.clock.now());
    for (const part of splitByName(job, this.recipients)) {
      this.current = part;
      this.callCounted = false;
      const name = toName(job, part[0]!);
      const named = name ? { ...base, recipientName: name } : base;
      if (part.length === 1) await this.sendOne(api, named, part[0]!);
      else await this.sendMany(api, named, part);
    }
  }

  /** Held for a refused key: the key is proved before anything is sent with it (true: still refused, all held). */
  private async keyStillRefused(api: FaxApi): Promise<boolean> {
    const check = await this.ctx.call(() => checkKey(api));
    if (check.ok) this.ctx.keyWorks(this.job.user);
    if (check.ok || !check.refused) return false;
    for (const r of this.recipients) {
      this.settled.add(r.idx);
      await applyDecision(
        this.ctx,
        r,
        { action: "hold", reason: check.detail },
        { sendId: this.sendId, expect: ["sending"], user: this.job.user },
      );
    }
    return true;
  }

  private async sendOne(api: FaxApi, named: Omit<SendManyRequest, "recipientFax">, r: Recipient): Promise<void> {
    const req: SendFaxRequest = { ...named, faxNumber: r.number };
    const rec = await this.ctx.call(() => api.sendFax(req, { leaving: () => this.leaving([r]) }));
    this.callCounted = true;
    await this.accept(r, rec, 1);
  }

  private async sendMany(api: FaxApi, named: Omit<SendManyRequest, "recipientFax">, part: Recipient[]): Promise<void> {
    const res: SendManyResult = await this.ctx.call(() =>
      api.sendFaxToMany({ ...named, recipientFax: part.map((r) => r.number) }, { leaving: () => this.leaving(part) }),
    );
    await this.ctx.store.addApiCalls(keys(part), 1);
    this.callCounted = true;
    const taken = new Set<string>();
    for (const r of part) {
      const rec = res.success.find((s) => sameNumber(s.faxNumber, r.number) && !taken.has(s.messageId));
      if (rec) {
        taken.add(rec.messageId);
        await this.accept(r, rec, 0);
        continue;
      }
      const err = res.errors.find((e) => sameNumber(e.recipientFax, r.number));
      if (err) {
        this.settled.add(r.idx);
        await applyDecision(this.ctx, r, classifyRecipientError(err), { sendId: this.sendId });
      }
      // Neither in success nor in errors: left for settleRest (unknown, reconciled).
    }
  }

  /**
   * The call for `part` is about to leave (the gate let it go): marked in the store first, so that
   * a kill before this point sends the claim back to the queue (nothing reached the service)
   * instead of leaving it to be looked up, and parked where the service drops our custom fields.
   * Only a claim still ours is marked; one taken back meanwhile (its lease ran out) is not sent.
   */
  private async leaving(part: Recipient[]): Promise<void> {
    if (!(await this.ctx.store.markCallLeaving(this.ctx.owner, this.sendId, keys(part))))
      throw new FaxgateError("CLAIM_LOST", "the send's claim was taken back before its call left; it was not made", {
        temporary: true,
      });
    for (const r of part) this.wentOut.add(r.idx);
  }

  /** The service took the fax for `r`: recorded accepted (or unknown without a messageId). */
  private async accept(r: Recipient, rec: FaxRecord, apiCalls: number): Promise<void> {
    const { ctx, sendId } = this;
    this.settled.add(r.idx);
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
    const marked = await ctx.store.markAccepted(
      { jobId: r.jobId, idx: r.idx },
      sendId,
      { messageId: rec.messageId, pagesCount: rec.pagesCount ?? null },
      apiCalls,
    );
    if (!marked) return;
    this.log.info({ to: r.number, messageId: rec.messageId, sendId, recipients: this.recipients.length }, "SENT");
    ctx.metrics?.sends.inc({ result: "accepted" });
    await recordOutcome(ctx, r, "accepted", "service");
    const status = (rec.status ?? "").toLowerCase();
    if (status === "success" || status === "failed" || status === "cancelled") {
      await applyRecord(ctx, { ...r, state: "processing", messageId: rec.messageId }, rec);
    }
  }

  /** The current part's call failed: each of its recipients gets the error's decision. */
  async failed(err: unknown): Promise<void> {
    const { ctx, current } = this;
    const mayHaveGoneOut = current.some((r) => this.wentOut.has(r.idx));
    if (!this.callCounted) await ctx.store.addApiCalls(keys(current), mayHaveGoneOut ? 1 : 0);
    // A 403 may refuse this request (a destination the account may not dial), not the key: the
    // key is held only if /v1/me refuses it too.
    let keyWorks = false;
    const client = this.client;
    if (client && err instanceof FaxApiError && err.status === 403) {
      keyWorks = (await ctx.call(() => checkKey(client)).catch(() => null))?.ok === true;
    }
    for (const r of current) {
      if (this.settled.has(r.idx)) continue;
      this.settled.add(r.idx);
      let d = classifyApiError(err, mayHaveGoneOut, retryContext(ctx, r));
      if (d.action === "hold" && keyWorks)
        d = { action: "fail", reason: `the fax service refused this fax: ${serviceText(err as FaxApiError)}` };
      if (d.action === "defer" && d.rateLimited) ctx.pause(d.nextAttemptAt.getTime() - ctx.clock.now());
      if (d.action !== "unknown" && d.action !== "hold")
        ctx.metrics?.sends.inc({ result: d.action === "defer" ? "deferred" : "failed" });
      await applyDecision(ctx, r, d, { sendId: this.sendId, expect: ["sending", "unknown"], user: this.job.user });
    }
  }

  /**
   * Every recipient leaves `sending`: one whose request may have gone out is unknown (reconciled
   * later), one never sent is deferred.
   */
  async settleRest(): Promise<void> {
    for (const r of this.recipients) {
      if (this.settled.has(r.idx)) continue;
      try {
        await applyDecision(
          this.ctx,
          r,
          this.wentOut.has(r.idx)
            ? { action: "unknown", reason: "the service did not report on this destination" }
            : {
                action: "defer",
                reason: "the send did not start",
                nextAttemptAt: new Date(this.ctx.clock.now() + 1000),
              },
          { sendId: this.sendId, expect: ["sending"] },
        );
      } catch (e) {
        // The store itself failed: the lease expires and releaseExpired marks it unknown.
        this.log.error({ err: (e as Error).message, to: r.number }, "could not record the send outcome");
      }
    }
  }
}
