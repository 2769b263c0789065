// The cleanup stage for one received mail (Postfix cleanup): take its parse (done while the mail
// arrived, or of the stored file on a reader thread), keep it as corrupt when it cannot be read, read the user's preferences for the cover and the time zone,
// make it one fax job and accept it. smtp/ only receives the bytes and answers with the outcome.
import { promises as fsp } from "node:fs";
import path from "node:path";
import type { Clock } from "../clock.js";
import type { MailBodyMode, PartialMode } from "../config/index.js";
import { FaxgateError, describeError, isFaxgateError, isSystemError } from "../errors.js";
import type { UserDirectory } from "../fax/index.js";
import type { JobSource, NewJob, QueueStore } from "../store/index.js";
import { ReadTimeoutError, type InputReaders } from "./readers.js";
import { acceptCorrupt, acceptJob, type AcceptDeps, type Accepted } from "./accept.js";
import { keptSha256, type IncomingFile, type WorkDir } from "./mail/incoming-file.js";
import { oneLine, type ParsedMail } from "./mail/mail-parse.js";
import { mailToJob, originalDocument, type EnvelopeRecipient } from "./mail/mail-to-job.js";
import type { DocumentConverter } from "./office/convert-queue.js";
import { askToConfirm, newDestinations } from "./confirm-new.js";

export interface MailAcceptDeps extends AcceptDeps {
  store: AcceptDeps["store"] & Pick<QueueStore, "faxedNumbers" | "enqueueNotification">;
  readers: InputReaders;
  directory: UserDirectory;
  clock: Clock;
  inlineImageMinBytes: number;
  /** Turns office attachments into PDF (without one they are refused). */
  office?: DocumentConverter;
  /** intake.partial: an attachment that cannot be faxed refuses the mail (default) or is sent without. */
  partial?: PartialMode;
}

/** A mail's checked envelope: who sent it (as which user), to which numbers, and how. */
export interface MailEnvelope {
  /** Config user name of the (checked) sender. */
  user: string;
  /** The envelope sender (MAIL FROM, a mailbox message's From). */
  from: string;
  recipients: EnvelopeRecipient[];
  /** Where the mail's text goes (the user's choice, else smtp.body). */
  bodyMode?: MailBodyMode;
  /** Which door it came through (default smtp); the mailbox intake says imap. */
  source?: JobSource;
  /** The intake's own idempotency key (a mailbox message's UIDVALIDITY/UID), instead of the mail's. */
  dedupeKey?: string;
  /** what proved the sender (smtp.senderAuth's verdict, a mailbox's Authentication-Results), kept with the job for its outcome mail */
  senderCheck?: string;
  /**
   * The door asks its owner before a first fax to a new number (intake/confirm-new.ts): a stranger
   * in MX mode, a mailbox, with confirmNewDestinations on for this user or domain.
   */
  confirmNewDestinations?: boolean;
  /**
   * The fax numbers are proved to be the sender's: a DKIM signature of the sender covers the
   * To:/Cc: (or subject) they were read from. False: only the sender is proved (the owner may be
   * asked to confirm a new number); undefined: the door does not judge it (AUTH, a trusted network).
   */
  recipientsProved?: boolean;
}

/** The message as received: kept once (held bytes, else the file), with the parse fed as it arrived. */
export interface ReceivedMessage {
  kept: IncomingFile;
  /** Its folder takes the extracted parts; removed by the door when the mail is done. */
  workDir: WorkDir;
  /** The parse fed while the message arrived (startMailParse); without it, or if it resolves to null, the kept message is parsed by deps.readers. */
  parsing?: Promise<ParsedMail | null>;
}

/**
 * Why the parser gave up on a message, or null when it was our own trouble (a disk error, the
 * reader threads shutting down): then the client is told to try again.
 */
function unreadable(err: unknown): string | null {
  if (isFaxgateError(err) || isSystemError(err)) return null;
  if (err instanceof ReadTimeoutError) return `it is too complex (${err.message})`;
  const code = (err as { code?: unknown } | null)?.code;
  const what = oneLine(describeError(err)).slice(0, 160);
  // mailsplit's limits (EMAXLEN): too many parts, nesting too deep, a header block too big
  if (code === "EMAXLEN") return `it is over a parsing limit (${what})`;
  return `broken MIME structure (${what})`;
}

/** The rest of a streamed parse, after the last byte, bounded like a reader thread's. */
async function withinLimit<T>(parsing: Promise<T>, ms: number | undefined): Promise<T> {
  if (ms === undefined) return parsing;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      parsing,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new ReadTimeoutError("the message", ms)), ms);
        timer.unref();
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The kept message parsed from its file on a reader thread: when nothing parsed it as it arrived,
 * or that parse gave up on its shortcut for base64 bodies (mail-parse.ts startMailParse). Its
 * parts go to a folder of their own, away from what the first parse left.
 */
async function parseStored(deps: MailAcceptDeps, message: ReceivedMessage): Promise<ParsedMail> {
  const { kept, workDir } = message;
  // a message held in memory is written out for the reader thread, which reads files
  if (kept.data) {
    await workDir.writeOut(kept.path, kept.data);
    kept.data = null;
  }
  await workDir.ready();
  if (!message.parsing) return deps.readers.parseMail(kept.path, workDir.path);
  const dir = path.join(workDir.path, "again");
  await fsp.mkdir(dir, { mode: 0o700 });
  return deps.readers.parseMail(kept.path, dir);
}

/** The cleanup of one received mail: parsed, made one job, accepted (or kept as corrupt and refused). */
export async function acceptMail(
  deps: MailAcceptDeps,
  mail: MailEnvelope,
  message: ReceivedMessage,
): Promise<Accepted> {
  const parsed = await parseOrKeepCorrupt(deps, mail, message);
  const job = await mailAsJob(deps, mail, parsed, message);
  markOrigin(job, mail);
  // numbers nobody proved the sender chose: a new one waits for its owner's click
  if (mail.confirmNewDestinations && mail.recipientsProved !== true) {
    const fresh = await newDestinations(deps.store, job);
    if (fresh.length > 0) job.awaitingConfirmation = fresh;
  }
  // a refusal (nothing to fax, a bad send time) is logged with its reply by the caller
  const accepted = await acceptJob(deps, job, {
    leftOut: job.meta?.leftOut?.length ?? 0,
    ...(parsed.messageId ? { messageId: parsed.messageId.slice(0, 200) } : {}),
    ...(job.awaitingConfirmation ? { newNumbers: job.awaitingConfirmation.length } : {}),
  });
  await askToConfirm(deps.store, accepted.job, accepted.log);
  return accepted;
}

/**
 * The parsed message. One that cannot be read is the message's own fault: kept as corrupt for
 * inspection, and the sender is told plainly and for good.
 */
async function parseOrKeepCorrupt(
  deps: MailAcceptDeps,
  mail: MailEnvelope,
  message: ReceivedMessage,
): Promise<ParsedMail> {
  try {
    return (
      (message.parsing ? await withinLimit(message.parsing, deps.readers.mailTimeoutMs) : null) ??
      (await parseStored(deps, message))
    );
  } catch (err) {
    const why = unreadable(err);
    if (why === null) throw err;
    const job = await acceptCorrupt(deps, {
      source: mail.source ?? "smtp",
      user: mail.user,
      reason: `the message could not be read: ${why}`,
      original: originalDocument(message.kept.path, message.kept.data),
      meta: { origin: { envelopeFrom: mail.from } },
    });
    throw new FaxgateError("MESSAGE_UNREADABLE", `the message could not be read: ${why}`, {
      cause: err,
      smtpReply: `554 5.6.0 The message could not be read: ${why}; kept as ${job.id}`,
    });
  }
}

/** The job the mail makes, with what the sender's service profile decides (cover, time zone, name). */
async function mailAsJob(
  deps: MailAcceptDeps,
  mail: MailEnvelope,
  parsed: ParsedMail,
  { kept, workDir }: ReceivedMessage,
): Promise<NewJob> {
  const me = deps.directory.get(mail.user);
  me.catch(() => undefined);
  const coverPreference = await me.then(
    (u) => u.emailToFaxCoverPageOption === true,
    (err: unknown) => {
      // never guessed: mail whose cover it decides waits for it (mailToJob)
      deps.log.warn({ err: describeError(err) }, "cover page preference unknown");
      return null;
    },
  );
  return mailToJob({
    parsed,
    user: mail.user,
    envelopeFrom: mail.from,
    recipients: mail.recipients,
    coverPreference,
    timezone: () =>
      me.then(
        (u) => u.account?.timezone || "UTC",
        (err: unknown) => {
          throw new FaxgateError("API_NETWORK", `the account time zone is unknown: ${describeError(err)}`, {
            temporary: true,
            cause: err,
          });
        },
      ),
    // The cover names the sender the gateway checked (the user's service profile, else the
    // configured user), never the From header's display name, which anyone can write.
    senderName: await me.then(
      (u) => [u.firstName, u.lastName].filter(Boolean).join(" ") || mail.user,
      () => mail.user,
    ),
    inlineImageMinBytes: deps.inlineImageMinBytes,
    original: { path: kept.path, sha256: () => keptSha256(kept), ...(kept.data ? { data: kept.data } : {}) },
    now: deps.clock.now(),
    ...(deps.office ? { office: deps.office } : {}),
    ...(mail.bodyMode ? { bodyMode: mail.bodyMode } : {}),
    ...(deps.partial ? { partial: deps.partial } : {}),
    scratch: (bytes) => workDir.scratch(bytes),
  });
}

/** What the door knew of the mail's arrival: its source, dedupe key, and what was proved of it. */
function markOrigin(job: NewJob, mail: MailEnvelope): void {
  if (mail.source) job.source = mail.source;
  if (mail.dedupeKey) job.dedupeKey = mail.dedupeKey;
  // (Object.assign, not { ...origin, key }: docs/bench.md "keys added after a spread")
  if (mail.senderCheck)
    job.meta = { ...job.meta, origin: Object.assign({}, job.meta?.origin, { senderCheck: mail.senderCheck }) };
  // whether the numbers, not only the sender, were proved by a signature (mail-auth/wanted.ts)
  if (mail.recipientsProved !== undefined)
    job.meta = {
      ...job.meta,
      origin: Object.assign({}, job.meta?.origin, {
        recipientsProved: mail.recipientsProved ? ("yes" as const) : ("no" as const),
      }),
    };
}
