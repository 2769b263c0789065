// Mailbox intake (IMAP): for offices that cannot take mail on port 25, users write to a mailbox
// (fax@acme.com, fax+15551234567@acme.com) and this watches it with IDLE, a look every
// pollInterval as the fallback. Each message goes through the same door as SMTP mail, and only
// once its job is committed is it moved out of the folder: a crash between the two leaves it in
// place, and the next look finds the job by the message's UIDVALIDITY/UID (the dedupe key), so it
// is faxed once. The server being down or slow holds this intake only: each mailbox has its own
// connection and loop, and nothing else waits on them.
import type { FetchMessageObject, ImapFlow } from "imapflow";
import type { MailboxConfig, UserConfig } from "../config/index.js";
import { describeError, isFaxgateError } from "../errors.js";
import { size } from "../format.js";
import type { FaxApi } from "../fax/index.js";
import { type DestinationCheck, decideRecipient } from "../recipients/index.js";
import type { EnvelopeRecipient } from "../intake/index.js";
import { childLog, type Logger } from "../log/index.js";
import type { QueueStore } from "../store/index.js";
import { liveUserIndex } from "../auth/index.js";
import { addressMessage } from "./addressing.js";
import { imapClient, mailboxCredentials } from "./imap-connection.js";
import { proveSender } from "./sender-proof.js";
import { headerFields, type ReplayClaim } from "../mail-auth/index.js";
import { judgeSignedMailbox, type SignedMailboxOptions } from "./signed-mailbox.js";

/** What the mail door takes from a mailbox message (accept-message.ts makes it a job). */
export interface MailboxMessage {
  user: string;
  from: string;
  recipients: EnvelopeRecipient[];
  source: Buffer;
  dedupeKey: string;
  /** which check proved the sender, for the job's record and the outcome mail */
  senderCheck: string;
  /** the numbers were read from fields the sender's signature covers (signed-mailbox.ts) */
  recipientsProved: boolean;
  /** the message's use, recorded once (mail-auth/replay.ts); no keys: nothing marks it */
  replay: ReplayClaim;
}

export interface MailboxIntakeOptions {
  mailbox: MailboxConfig;
  users: () => readonly UserConfig[];
  /** who has left the directory: their messages are refused saying so (directory/leavers.ts) */
  leaver?: (login: string) => string | null;
  store: Pick<QueueStore, "enqueueNotification">;
  clientFor: (user: string) => FaxApi;
  destinations: DestinationCheck;
  defaultCountryCode: () => string;
  maxRecipients: number;
  maxMessageBytes: number;
  accept: (msg: MailboxMessage) => Promise<{ jobId: string; duplicate: boolean }>;
  logger: Logger;
  /** faxgate's own DKIM check of the fetched message (signed-mailbox.ts) */
  signed: SignedMailboxOptions;
  /** first wait after a lost connection; doubles up to a minute */
  reconnectMs?: number;
}

type Verdict =
  | { kind: "accepted"; jobId: string; duplicate: boolean; user: string; numbers: string[] }
  | { kind: "refused"; reason: string; notify?: string; nothingToCorrect?: boolean; senderUnproved?: boolean };

/** A refusal that will not change by trying again: the message goes to the failed folder. */
class Refused extends Error {
  constructor(
    readonly reason: string,
    readonly notify?: string,
    /** the From: was not proved: the user it names may not have written the message */
    readonly senderUnproved = false,
  ) {
    super(reason);
  }
}

export class MailboxIntake {
  readonly name: string;
  private readonly log: Logger;
  /** the configured users by address, rebuilt when a reload replaces them */
  private readonly index: ReturnType<typeof liveUserIndex>;
  private client: ImapFlow | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private pending = false;
  /** UIDs whose trouble was temporary: tried again at the next look, not at once */
  private readonly backoff = new Map<number, number>();
  private connected = false;

  constructor(private readonly opts: MailboxIntakeOptions) {
    const m = opts.mailbox;
    this.name = m.name ?? `${m.user}@${m.host}`;
    this.index = liveUserIndex(opts.users, opts.leaver);
    this.log = childLog(opts.logger, { mailbox: this.name });
  }

  /** Whether the mailbox is connected now (health checks). */
  get isConnected(): boolean {
    return this.connected;
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    const c = this.client;
    if (c) await c.logout().catch(() => c.close());
    await this.loop;
  }

  private async run(): Promise<void> {
    let delay = this.opts.reconnectMs ?? 1000;
    while (!this.stopped) {
      try {
        await this.session();
        delay = this.opts.reconnectMs ?? 1000;
      } catch (err) {
        this.connected = false;
        if (this.stopped) break;
        this.log.warn({ err: describeError(err), retryInMs: delay }, "mailbox unreachable, trying again");
        await this.pause(delay);
        delay = Math.min(delay * 2, 60_000);
      }
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    }).then(() => {
      this.wake = null;
    });
  }

  private async session(): Promise<void> {
    const m = this.opts.mailbox;
    const client = imapClient(m, await mailboxCredentials(m), {
      // IDLE starts soon after each look, and is renewed before servers drop it (RFC 2177: 29 min)
      autoIdleDelay: 250,
      maxIdleTime: 5 * 60_000,
      connectionTimeout: 30_000,
      greetingTimeout: 16_000,
      socketTimeout: 10 * 60_000,
      // bounded by the message limit: a server cannot make us hold more than one message's bytes
      maxLiteralSize: this.opts.maxMessageBytes + 1024 * 1024,
      maxResponseSize: this.opts.maxMessageBytes + 2 * 1024 * 1024,
    });
    this.client = client;
    let closed = false;
    client.on("error", (err: Error) => this.log.warn({ err: describeError(err) }, "mailbox connection error"));
    client.on("close", () => {
      closed = true;
      this.wake?.();
    });
    client.on("exists", () => {
      this.pending = true;
      this.wake?.();
    });
    try {
      await client.connect();
      for (const f of [m.doneFolder, m.failedFolder]) {
        // ALREADYEXISTS is the usual answer after the first start
        await client.mailboxCreate(f).catch(() => undefined);
      }
      this.connected = true;
      this.log.info({ folder: m.folder }, "mailbox watched");
      while (!this.stopped && !closed) {
        this.pending = false;
        // the lock only while we work: imapflow goes into IDLE when no lock is held
        const lock = await client.getMailboxLock(m.folder);
        try {
          await this.look(client);
        } finally {
          lock.release();
        }
        if (this.stopped || closed) break;
        if (!this.pending) await this.pause(m.pollInterval);
      }
    } finally {
      this.connected = false;
      this.client = null;
      if (!closed) await client.logout().catch(() => client.close());
    }
    if (!this.stopped) throw new Error("the server closed the connection");
  }

  /** Takes every message in the folder, oldest first. */
  private async look(client: ImapFlow): Promise<void> {
    const uidValidity = client.mailbox ? String(client.mailbox.uidValidity) : "0";
    const uids = (await client.search({ all: true }, { uid: true })) || [];
    const now = Date.now();
    for (const uid of uids.sort((a, b) => a - b)) {
      if (this.stopped) return;
      const until = this.backoff.get(uid);
      if (until !== undefined && until > now) continue;
      await this.take(client, uid, `imap:${this.name}:${uidValidity}:${uid}`);
    }
  }

  private async take(client: ImapFlow, uid: number, key: string): Promise<void> {
    const log = childLog(this.log, { uid });
    let head: FetchMessageObject | false;
    try {
      head = await client.fetchOne(
        String(uid),
        { uid: true, size: true, envelope: true, headers: ["authentication-results"] },
        { uid: true },
      );
    } catch (err) {
      log.warn({ err: describeError(err) }, "could not read a mailbox message, trying again later");
      this.backoff.set(uid, Date.now() + 30_000);
      return;
    }
    if (!head) return;
    const verdict = await this.judge(client, uid, key, head);
    if (verdict === null) {
      // our own trouble or the service's: the message stays and is tried again
      this.backoff.set(uid, Date.now() + 30_000);
      return;
    }
    this.backoff.delete(uid);
    if (verdict.kind === "refused") log.info({ reason: verdict.reason }, "REJECTED mailbox message");
    await this.tell(verdict, key, head.envelope?.subject?.slice(0, 200));
    const folder = verdict.kind === "accepted" ? this.opts.mailbox.doneFolder : this.opts.mailbox.failedFolder;
    // after the commit: a crash before this line leaves the message, and the dedupe key finds its job
    await client.messageMove(String(uid), folder, { uid: true });
    if (verdict.kind === "accepted")
      log.info({ job: verdict.jobId, duplicate: verdict.duplicate, folder }, "mailbox message moved");
  }

  /** Accepted or refused for good; null when the trouble is passing (logged here) and the message waits. */
  private async judge(client: ImapFlow, uid: number, key: string, head: FetchMessageObject): Promise<Verdict | null> {
    try {
      const found = await this.decide(client, uid, key, head);
      return { kind: "accepted", ...found };
    } catch (err) {
      if (err instanceof Refused)
        return {
          kind: "refused",
          reason: err.reason,
          ...(err.notify ? { notify: err.notify } : {}),
          ...(err.senderUnproved ? { senderUnproved: true } : {}),
        };
      if (isFaxgateError(err) && !err.temporary)
        return {
          kind: "refused",
          reason: err.message,
          ...(this.claimedUser(head) ? { notify: this.claimedUser(head)! } : {}),
          // a copy of a mail already faxed: resending cannot help, and nothing in it is wrong
          ...(err.code === "SIGNED_MAIL_REPLAYED" ? { nothingToCorrect: true } : {}),
        };
      childLog(this.log, { uid }).warn(
        { err: describeError(err) },
        "mailbox message not taken now, trying again later",
      );
      return null;
    }
  }

  /** The notice of a verdict, queued before the message moves: accepted to its user, refused to whom it names. */
  private async tell(verdict: Verdict, key: string, subject: string | undefined): Promise<void> {
    if (verdict.kind === "refused") {
      if (!verdict.notify) return;
      await this.opts.store.enqueueNotification({
        kind: "rejected",
        user: verdict.notify,
        dedupeKey: `rejected:${key}`,
        payload: {
          reason: verdict.reason,
          source: "imap",
          ...(subject ? { subject } : {}),
          ...(verdict.nothingToCorrect ? { nothingToCorrect: true } : {}),
          ...(verdict.senderUnproved ? { senderUnproved: true } : {}),
        },
      });
      return;
    }
    const m = this.opts.mailbox;
    await this.opts.store.enqueueNotification({
      kind: "accepted",
      user: verdict.user,
      jobId: verdict.jobId,
      dedupeKey: `accepted:${verdict.jobId}`,
      payload: {
        jobId: verdict.jobId,
        numbers: verdict.numbers,
        via: `the fax mailbox ${m.address ?? m.user}`,
        ...(subject ? { subject } : {}),
      },
    });
  }

  private claimedUser(head: FetchMessageObject): string | undefined {
    const from = head.envelope?.from ?? [];
    return from.length === 1 && from[0]!.address ? this.index().byEmail(from[0]!.address)?.name : undefined;
  }

  private async decide(
    client: ImapFlow,
    uid: number,
    key: string,
    head: FetchMessageObject,
  ): Promise<{ jobId: string; duplicate: boolean; user: string; numbers: string[] }> {
    const m = this.opts.mailbox;
    const env = head.envelope ?? {};
    const proof = proveSender({
      from: (env.from ?? []).map((a) => a.address ?? "").filter(Boolean),
      authResults: head.headers ? headerFields(head.headers.toString("latin1"), "authentication-results") : [],
      trustedAuthservIds: m.trustedAuthservIds,
      provider: m.provider,
      users: this.index(),
    });
    // a stranger is not answered (that would be backscatter to a forged address); a claimed user is
    if (!proof.ok) throw new Refused(proof.reason, proof.claimed?.name, true);
    const user = proof.user;
    if ((head.size ?? 0) > this.opts.maxMessageBytes) {
      throw new Refused(
        `the message is ${size(head.size!)}; the limit is ${size(this.opts.maxMessageBytes)}`,
        user.name,
      );
    }
    const addressing = addressMessage(
      { to: [...(env.to ?? []), ...(env.cc ?? [])], subject: env.subject ?? "" },
      m.address ?? (m.user.includes("@") ? m.user : undefined),
      this.opts.defaultCountryCode(),
    );
    if (!addressing.ok) throw new Refused(addressing.reason, user.name);
    if (addressing.destinations.length > this.opts.maxRecipients) {
      throw new Refused(`too many fax numbers: at most ${this.opts.maxRecipients} per message`, user.name);
    }
    // the whole message before any contact is looked up: its signature decides whether it is wanted
    const full = await client.fetchOne(String(uid), { uid: true, source: true, internalDate: true }, { uid: true });
    // biome-ignore lint/complexity/useOptionalChain: imapflow answers false, not undefined, when absent
    if (!full || !full.source) throw new Error("the message went away while it was read");
    const from = (env.from ?? [])[0]!.address!;
    const wanted = await judgeSignedMailbox(this.opts.signed, {
      source: full.source,
      from,
      ...(env.messageId ? { messageId: env.messageId } : {}),
      numbersFrom: addressing.from,
      dedupeKey: key,
      ...(full.internalDate ? { arrivedAt: new Date(full.internalDate) } : {}),
    });
    const recipients: EnvelopeRecipient[] = [];
    const rules = {
      destinations: this.opts.destinations,
      defaultCountryCode: this.opts.defaultCountryCode(),
      contacts: () => this.opts.clientFor(user.name),
    };
    for (const d of addressing.destinations) {
      const v = await decideRecipient(user.name, d.kind === "number" ? { e164: d.e164 } : { contact: d.name }, rules);
      if (!v.ok) throw new Refused(`destination not allowed (${d.label}): ${v.reason}`, user.name);
      const { number, name } = v.recipient;
      if (!recipients.some((r) => r.number === number))
        recipients.push({ address: d.label, number, ...(name ? { contactName: name } : {}) });
    }
    const accepted = await this.opts.accept({
      user: user.name,
      from,
      recipients,
      source: full.source,
      dedupeKey: key,
      senderCheck: proof.check,
      ...wanted,
    });
    return { ...accepted, user: user.name, numbers: recipients.map((r) => r.number) };
  }
}
