// Drains the store's notification queue into mail (Postfix's bounce/notify daemon). Each
// notification is claimed with a lease, turned into one mail, handed to the transport, and then
// recorded as sent or skipped; a transport failure defers it on a schedule and after about two
// days fails it loudly. The Message-ID comes from the notification, so a retry after a crash is
// the same mail, never a second one.
import { randomBytes } from "node:crypto";
import os from "node:os";
import type { SendMailOptions } from "nodemailer";
import type { Clock } from "../clock.js";
import { systemClock } from "../clock.js";
import type { NotifyConfig, UserConfig } from "../config/index.js";
import { describeError, FaxgateError, isFaxgateError } from "../errors.js";
import type { FaxApi, User, UserDirectory } from "../fax/index.js";
import type { Ledger } from "../ledger/index.js";
import { childLog, type Logger } from "../log/index.js";
import type { Metrics } from "../metrics/index.js";
import { Periodic } from "../periodic.js";
import {
  type QueueStore,
  newNumbers,
  waitsForAddress,
  waitsForConfirmation,
  type Job,
  type Notification,
} from "../store/index.js";
import { composeAddress } from "./address-mail.js";
import { composeConfirm } from "./confirm-mail.js";
import type { ComposedMail } from "./composed-mail.js";
import { downloadToTemp, type DownloadedFax } from "./fax-download.js";
import { composeInbound } from "./inbound-mail.js";
import { isFailedReception } from "../received/index.js";
import { composeKeyExpiry } from "./key-expiry-mail.js";
import { oneLineText, renderHtml, renderText } from "./mail-body.js";
import { notificationMessageId } from "./message-id.js";
import { composeOutcome } from "./outcome-mail.js";
import { flag, PreferenceReader, wanted } from "./preferences.js";
import { composeRejected } from "./rejected-mail.js";
import { composeAccepted } from "./accepted-mail.js";
import { nextNotifyAttempt } from "./retry-schedule.js";
import { composeAlert } from "./alert-mail.js";
import { jobReport, reportFileName, wantsReport } from "./job-report.js";
import type { MailTransport } from "./mail-transport.js";
import { linkUnder, mailedLinkQuery } from "../url-check.js";
import { jobForMail, payloadForMail, whatLeaves } from "./what-leaves.js";
import { createTransport } from "./transport.js";

export interface NotifierOptions {
  notify: NotifyConfig;
  /** The configured users as they are now (a reload replaces them). */
  users: () => readonly UserConfig[];
  store: QueueStore;
  clientFor: (user: string) => FaxApi;
  directory: UserDirectory;
  dataDir: string;
  logger: Logger;
  clock?: Clock;
  metrics?: Metrics;
  /** Default: built from notify.transport. */
  transport?: MailTransport;
  /** How often the queue is looked at when idle (default 1000 ms). */
  pollMs?: number;
  /** Tries of a temporarily failing attachment download before the mail goes without it (default 3). */
  attachmentTries?: number;
  /** The console's address as users reach it (links in mails), or null when there is no console. */
  consoleUrl?: () => string | null;
  /** How long a print job waits for an address, ms (spool.addressWait). */
  addressWaitMs: number;
  /** How long a fax to a new number waits for its owner's confirmation, ms (smtp.senderAuth.confirmWait). */
  confirmWaitMs: number;
  /** smtp.defaultCountryCode as it is now: numbers the service keeps without one are read with it */
  defaultCountryCode?: () => string;
  /** every mail that carries a fax or a report out is a "mailed" ledger row (docs/compliance.md) */
  ledger: Pick<Ledger, "record">;
}

const BATCH = 8;
const LEASE_MS = 10 * 60_000;

/** The notification and who reads it: the configured user, their service record (or why it could not be read). */
interface Reader {
  user: UserConfig;
  me: User | null;
  meError: unknown;
  timeZone: string;
  log: Logger;
}

/** What one kind of notification makes of itself, before the envelope. */
interface Draft {
  composed: ComposedMail;
  /** the user's preference (or the kind's rule) says it goes */
  wants: boolean;
  job?: Job | null;
  /** an address a rule names, instead of the user's */
  to?: string;
  /** fax PDFs downloaded for this mail (removed after it) */
  downloaded?: DownloadedFax[];
  /** received faxes kept in the store, attached from memory */
  kept?: Array<{ filename: string; content: Buffer }>;
  reports?: Array<{ filename: string; content: Buffer }>;
}

type NoticeOf<K extends Notification["kind"]> = Extract<Notification, { kind: K }>;

type Plan =
  | { skip: string }
  | {
      mail: SendMailOptions;
      to: string[];
      /** Downloaded for this mail (removed after it). */
      attachments: DownloadedFax[];
      /** The fax PDFs the mail carries (downloaded or kept), and transmission reports. */
      faxes: number;
      reports: number;
    };

export class Notifier {
  private readonly store: QueueStore;
  private readonly transport: MailTransport;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly prefs: PreferenceReader;
  private readonly owner = `notify:${os.hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  private readonly loop: Periodic<number>;

  constructor(private readonly opts: NotifierOptions) {
    this.store = opts.store;
    this.log = opts.logger;
    this.clock = opts.clock ?? systemClock;
    this.transport = opts.transport ?? createTransport(opts.notify.transport, opts.logger);
    this.prefs = new PreferenceReader(opts.logger);
    this.loop = new Periodic(() => this.drain(), {
      intervalMs: opts.pollMs ?? 1000,
      onError: (err) => this.log.error({ err: describeError(err) }, "notification run failed"),
    });
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    this.transport.close();
  }

  /** Sends (or skips, or defers) everything due now; returns how many notifications were handled. */
  runOnce(): Promise<number> {
    // one drain at a time: the timer and a test (or a second caller) share it
    return this.loop.runOnce();
  }

  private async drain(): Promise<number> {
    let handled = 0;
    for (;;) {
      const batch = await this.store.claimNotifications(this.owner, BATCH, LEASE_MS);
      await Promise.all(batch.map((n) => this.handle(n)));
      handled += batch.length;
      if (batch.length < BATCH || this.loop.stopped) return handled;
    }
  }

  private async handle(n: Notification): Promise<void> {
    const log = childLog(this.log, {
      notification: n.id,
      kind: n.kind,
      user: n.user,
      ...(n.jobId ? { job: n.jobId } : {}),
    });
    let plan: Plan | null = null;
    try {
      plan = await this.plan(n, log);
      if ("skip" in plan) {
        await this.store.completeNotification(n.id, "skipped");
        log.info({ reason: plan.skip }, "SKIPPED");
        this.count(n, "skipped");
        return;
      }
      const info = await this.transport.send(plan.mail);
      await this.store.completeNotification(n.id, "sent");
      if (plan.faxes + plan.reports > 0) await this.recordMailed(n, plan, log);
      log.info({ to: plan.to, messageId: info.messageId, attachments: plan.faxes, reports: plan.reports }, "NOTIFIED");
      this.count(n, "sent");
    } catch (err) {
      await this.deferOrFail(n, err, log);
    } finally {
      if (plan && "attachments" in plan) await Promise.all(plan.attachments.map((a) => a.remove()));
    }
  }

  /**
   * A PDF left by mail: which fax (the job, or the kept received fax), to which user's mail (the
   * name, not the address), how many faxes and reports. After the send: a ledger fault is logged,
   * it does not send the mail twice.
   */
  private async recordMailed(n: Notification, plan: { faxes: number; reports: number }, log: Logger): Promise<void> {
    const received = (n.payload as { receivedId?: unknown; messageId?: unknown } | null) ?? {};
    const receivedId = typeof received.receivedId === "string" ? received.receivedId : received.messageId;
    const object = n.jobId
      ? { kind: "job" as const, id: n.jobId }
      : typeof receivedId === "string"
        ? { kind: "received" as const, id: receivedId }
        : null;
    if (!object) return;
    try {
      await this.opts.ledger.record({
        action: "mailed",
        actor: { kind: "gateway" },
        object,
        door: "gateway",
        detail: { notice: n.kind, to: n.user, faxes: plan.faxes, reports: plan.reports },
      });
    } catch (err) {
      log.error({ err: describeError(err) }, "LEDGER the mailed row was not recorded");
    }
  }

  private async deferOrFail(n: Notification, err: unknown, log: Logger): Promise<void> {
    const why = describeMailError(err);
    try {
      // n.attempts already counts this try (the claim counts it)
      const next = permanentMailError(err)
        ? null
        : nextNotifyAttempt(n.attempts, Date.parse(n.createdAt), this.clock.now());
      if (next) {
        await this.store.deferNotification(n.id, why, next);
        log.warn({ err: why, attempts: n.attempts, nextAttemptAt: next.toISOString() }, "DEFERRED");
        this.count(n, "deferred");
      } else {
        await this.store.failNotification(n.id, why);
        log.error(
          { err: why, attempts: n.attempts },
          "FAILED: notification given up, the user was NOT told; check notify.transport",
        );
        this.count(n, "failed");
      }
    } catch (storeErr) {
      // the lease runs out and another run tries again
      log.error({ err: describeError(storeErr), mailErr: why }, "could not record the notification failure");
    }
  }

  private count(n: Notification, result: "sent" | "skipped" | "deferred" | "failed"): void {
    this.opts.metrics?.notifications.inc({ kind: n.kind, result });
  }

  /** What to do with one notification: a mail to send, or why none goes out. */
  private async plan(n: Notification, log: Logger): Promise<Plan> {
    const user = this.opts.users().find((u) => u.name === n.user);
    if (!user) return { skip: `no configured user named "${n.user}"` };
    let me: User | null = null;
    let meError: unknown = null;
    try {
      me = await this.opts.directory.get(n.user);
    } catch (err) {
      meError = err;
    }
    const draft = await this.draft(n, { user, me, meError, timeZone: me?.account?.timezone || "UTC", log });
    return "skip" in draft ? draft : this.envelope(n, user, draft);
  }

  /** The mail one kind of notification makes: composed, wanted or not, and what it carries. */
  private draft(n: Notification, to: Reader): Promise<Draft | { skip: string }> | Draft | { skip: string } {
    switch (n.kind) {
      case "outcome":
        return this.draftOutcome(n, to);
      case "inbound":
        return this.draftInbound(n, to);
      case "rejected":
        return this.draftRejected(n, to);
      case "address":
        return this.draftAddress(n, to);
      case "confirm":
        return this.draftConfirm(n, to);
      case "accepted":
        return this.draftAccepted(n, to);
      case "key-expiry":
        return { composed: composeKeyExpiry(n.payload, to.timeZone), wants: true };
      case "alert":
        return { composed: composeAlert(n.payload), wants: true };
      default:
        return { skip: `unknown notification kind "${String((n as { kind: unknown }).kind)}"` };
    }
  }

  private async draftOutcome(
    n: NoticeOf<"outcome">,
    { user, me, meError, timeZone, log }: Reader,
  ): Promise<Draft | { skip: string }> {
    const job = n.jobId ? await this.store.getJob(n.jobId) : null;
    if (!job) return { skip: `job ${n.jobId ?? "(none)"} no longer exists` };
    const leaves = whatLeaves(this.opts.notify.attachments, "sent");
    const told = jobForMail(job, leaves);
    // the timeline names who cancelled (the owner, or "ops, an operator")
    const cancel =
      job.state === "cancelled"
        ? (await this.store.listEvents(job.id)).findLast((e) => e.transition === "cancel")
        : undefined;
    const composed = composeOutcome(told, timeZone, { cancelledBy: cancel?.detail?.replace(/^by /, "") ?? null });
    if (!composed.mandatory && !me) throw temporary("preferences", meError);
    const wants =
      composed.mandatory || wanted(this.prefs.option(n.user, me!, "emailNotifySendOption"), composed.failure);
    const draft: Draft = { composed, wants, job };
    if (wants && me && leaves.document && flag(me.emailNotifySendIncAttachment)) {
      const pdf = await this.outcomeAttachment(n, job, log);
      if (pdf) draft.downloaded = [pdf];
    }
    if (wants && wantsReport(job, user, this.opts.notify.report)) {
      // the report as the rule allows it: no first page and no subject where the fax may not leave
      const pdf = await jobReport({
        store: this.store,
        job: told,
        user,
        me,
        now: new Date(this.clock.now()),
        pageImage: leaves.pageImage,
        defaultCountryCode: this.opts.defaultCountryCode?.(),
      });
      draft.reports = [{ filename: reportFileName(job), content: Buffer.from(pdf) }];
    }
    return draft;
  }

  private async draftInbound(
    n: NoticeOf<"inbound">,
    { me, meError, timeZone, log }: Reader,
  ): Promise<Draft | { skip: string }> {
    const p = n.payload;
    if (!p || typeof p.messageId !== "string") return { skip: "inbound notification without a messageId" };
    const composed = composeInbound(p, timeZone, this.opts.defaultCountryCode?.());
    let wants: boolean;
    if (p.to) {
      // an address a rule names (a shared mailbox, an escalation): always, with the fax
      wants = true;
    } else {
      if (!me) throw temporary("preferences", meError);
      wants = wanted(this.prefs.option(n.user, me, "emailNotifyReceiveOption"), isFailedReception(p));
    }
    const draft: Draft = { composed, wants, ...(p.to ? { to: p.to } : {}) };
    if (
      wants &&
      whatLeaves(this.opts.notify.attachments, "received").document &&
      (p.to || flag(me!.emailNotifyReceiveIncAttachment)) &&
      !isFailedReception(p)
    ) {
      // a kept fax is attached from the store: another user's key could not download it
      const kept = p.receivedId ? await this.store.readReceivedDocument(p.receivedId) : null;
      if (kept) draft.kept = [{ filename: `fax-received-${p.messageId}.pdf`, content: kept }];
      else if (!p.receivedId) {
        const pdf = await this.attachment(n, p.messageId, `fax-received-${p.messageId}.pdf`, log);
        if (pdf) draft.downloaded = [pdf];
      }
    }
    return draft;
  }

  private async draftRejected(n: NoticeOf<"rejected">, { timeZone }: Reader): Promise<Draft> {
    // a corrupt job carries the kept input: name it when the intake did not
    const kept = n.jobId ? await this.store.getJob(n.jobId) : null;
    const payload =
      kept?.original && !n.payload.file
        ? { ...n.payload, file: kept.meta.origin?.file ?? kept.original.name }
        : n.payload;
    const composed = composeRejected(
      payloadForMail(payload, whatLeaves(this.opts.notify.attachments, "sent")),
      n.createdAt,
      timeZone,
    );
    return { composed, wants: true };
  }

  private async draftAddress(
    n: NoticeOf<"address">,
    { me, meError, timeZone }: Reader,
  ): Promise<Draft | { skip: string }> {
    const job = n.jobId ? await this.store.getJob(n.jobId) : null;
    if (!job || !waitsForAddress(job)) return { skip: `job ${n.jobId ?? "(none)"} no longer waits for an address` };
    if (!me) throw temporary("preferences", meError);
    const base = this.opts.consoleUrl?.() ?? null;
    // behind the link door (web/mailed-link.ts): a row per click, dead after retention.links
    const link = base ? linkUnder(base, "m", mailedLinkQuery("address", job.id, this.clock.now())) : null;
    const expiresAt = new Date(Date.parse(job.createdAt) + this.opts.addressWaitMs).toISOString();
    const composed = composeAddress(
      jobForMail(job, whatLeaves(this.opts.notify.attachments, "sent")),
      link,
      expiresAt,
      timeZone,
    );
    // something to do, like a failure: "All" and "Failure" get it, "None" does not
    return { composed, wants: wanted(this.prefs.option(n.user, me, "emailNotifySendOption"), true), job };
  }

  private async draftConfirm(n: NoticeOf<"confirm">, { timeZone }: Reader): Promise<Draft | { skip: string }> {
    const job = n.jobId ? await this.store.getJob(n.jobId) : null;
    if (!job || !waitsForConfirmation(job))
      return { skip: `job ${n.jobId ?? "(none)"} no longer waits for confirmation` };
    const base = this.opts.consoleUrl?.() ?? null;
    const link = base ? linkUnder(base, "m", mailedLinkQuery("confirm", job.id, this.clock.now())) : null;
    const expiresAt = new Date(Date.parse(job.createdAt) + this.opts.confirmWaitMs).toISOString();
    // the subject and file names only where notify.attachments lets words of a fax leave
    const composed = composeConfirm(
      jobForMail(job, whatLeaves(this.opts.notify.attachments, "sent")),
      newNumbers(job),
      link,
      expiresAt,
      timeZone,
    );
    return { composed, wants: true, job };
  }

  private async draftAccepted(
    n: NoticeOf<"accepted">,
    { me, meError, timeZone }: Reader,
  ): Promise<Draft | { skip: string }> {
    if (!me) throw temporary("preferences", meError);
    const job = n.jobId ? await this.store.getJob(n.jobId) : null;
    // a mailbox fax that waits for confirmation: the "confirm" mail says so, not "accepted"
    if (job && waitsForConfirmation(job)) return { skip: "it waits for confirmation; that mail tells" };
    const composed = composeAccepted(
      payloadForMail(n.payload, whatLeaves(this.opts.notify.attachments, "sent")),
      n.createdAt,
      timeZone,
    );
    return { composed, wants: wanted(this.prefs.option(n.user, me, "emailNotifySendOption"), false), job };
  }

  /** The mail itself: the console link, who gets it (the user, a rule's address, the admin copy), headers, files. */
  private envelope(n: Notification, user: UserConfig, draft: Draft): Plan {
    const job = draft.job ?? null;
    let composed = draft.composed;
    const wants = draft.wants;
    const toOverride = draft.to ?? null;
    const attachments = draft.downloaded ?? [];
    const keptFaxes = draft.kept ?? [];
    const reports = draft.reports ?? [];
    const link = this.consoleLink(n, job);
    if (link)
      composed = {
        ...composed,
        blocks: [...composed.blocks.slice(0, -1), { kind: "para", text: link }, ...composed.blocks.slice(-1)],
      };
    const admin = composed.failure ? this.opts.notify.adminCopy : undefined;
    if (!wants && !admin) return { skip: "the user does not want this notification (service preference)" };
    // a user who opted out still leaves the administrator a copy of the failures
    const to = toOverride ?? (wants ? user.email : admin!);
    const bcc = wants && admin && admin.toLowerCase() !== user.email.toLowerCase() ? admin : undefined;
    const inReplyTo = originMessageId(job);
    const mail: SendMailOptions = {
      from: this.opts.notify.from,
      to,
      ...(bcc ? { bcc } : {}),
      // one line whatever a file name or subject in it held
      subject: oneLineText(composed.subject),
      text: renderText(composed.blocks),
      html: renderHtml(oneLineText(composed.subject), composed.blocks),
      messageId: notificationMessageId(n, this.opts.notify.from),
      date: new Date(this.clock.now()),
      ...(inReplyTo ? { inReplyTo, references: [inReplyTo] } : {}),
      headers: {
        // RFC 3834: no vacation replies or loops from auto-responders
        "Auto-Submitted": "auto-generated",
        "X-Auto-Response-Suppress": "All",
        "X-Faxgate-Notification": n.kind,
        ...(n.jobId ? { "X-Faxgate-Job": n.jobId } : {}),
      },
      attachments: [
        ...attachments.map((a) => ({ filename: a.filename, path: a.path, contentType: "application/pdf" })),
        ...[...keptFaxes, ...reports].map((r) => ({
          filename: r.filename,
          content: r.content,
          contentType: "application/pdf",
        })),
      ],
    };
    return {
      mail,
      to: bcc ? [to, bcc] : [to],
      attachments,
      faxes: attachments.length + keptFaxes.length,
      reports: reports.length,
    };
  }

  /**
   * "See this fax in the console (sign in first): URL", to the page where the person it is mailed
   * to can act: a sent fax's page (its owner, or an operator with the admin copy), the received-fax
   * page by the gateway's id of the kept fax (the receiver, a group member, anyone a rule or a
   * forward mailed it to, an operator; web/received-page.ts decides). Ids only, no token.
   */
  private consoleLink(n: Notification, job: Job | null): string | null {
    const base = this.opts.consoleUrl?.();
    if (!base) return null;
    if ((n.kind === "outcome" || n.kind === "accepted") && job && job.recipients.length) {
      const url = linkUnder(base, "m", mailedLinkQuery("job", job.id, this.clock.now()));
      return url ? `See this fax in the console (sign in first): ${url}` : null;
    }
    if (n.kind === "inbound" && typeof n.payload?.messageId === "string") {
      const url = linkUnder(
        base,
        "m",
        mailedLinkQuery("received", String(n.payload.receivedId ?? n.payload.messageId), this.clock.now()),
      );
      const what = n.payload.group ? "Take it or see who has, in the console" : "See this fax in the console";
      return url ? `${what} (sign in first): ${url}` : null;
    }
    return null;
  }

  private outcomeAttachment(n: Notification, job: Job, log: Logger): Promise<DownloadedFax | null> {
    const delivered = job.recipients.find((r) => r.state === "delivered" && r.messageId);
    if (!delivered) return Promise.resolve(null);
    return this.attachment(n, delivered.messageId!, `fax-${job.id}.pdf`, log);
  }

  /**
   * The fax PDF, or null when it cannot be had: a permanent error (or a temporary one on the last
   * allowed try) sends the mail without it rather than holding the news back.
   */
  private async attachment(
    n: Notification,
    messageId: string,
    fallbackName: string,
    log: Logger,
  ): Promise<DownloadedFax | null> {
    try {
      return await downloadToTemp(this.opts.clientFor(n.user), messageId, this.opts.dataDir, fallbackName);
    } catch (err) {
      const temp = !isFaxgateError(err) || err.temporary;
      if (temp && n.attempts < (this.opts.attachmentTries ?? 3)) throw err;
      log.warn({ messageId, err: describeError(err) }, "fax PDF could not be downloaded; mailing without it");
      return null;
    }
  }
}

function temporary(what: string, cause: unknown): FaxgateError {
  return new FaxgateError(
    "API_NETWORK",
    `the user's ${what} could not be read from the fax service: ${describeError(cause)}`,
    { temporary: true, cause },
  );
}

function originMessageId(job: Job | null): string | null {
  const id = job?.meta.origin?.messageId;
  return id && /^<[^<>\s]+@[^<>\s]+>$/.test(id) ? id : null;
}

interface MailError {
  code?: string;
  responseCode?: number;
  response?: string;
}

/** A relay that answers 5xx to our mail refuses it for good (except refused AUTH: a config fix away). */
function permanentMailError(err: unknown): boolean {
  const e = err as MailError;
  return typeof e?.responseCode === "number" && e.responseCode >= 500 && e.code !== "EAUTH";
}

function describeMailError(err: unknown): string {
  const e = err as MailError;
  if (e && typeof e.responseCode === "number" && e.response) return `${e.code ?? "SMTP"}: ${e.response}`;
  return describeError(err);
}
