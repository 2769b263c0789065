// The durable queue's data, as the other stages see it (the contract is QueueStore in queue-store.ts);
// intake stages (smtp, spool, cli) only call `enqueue`; the dispatcher claims and finishes
// recipients; the notifier drains the notification queue; operators use the job operations.
import type { KindAndPayload } from "./notification-payloads.js";
import type { SplicedPart } from "./spliced-original.js";

export type JobSource = "smtp" | "spool" | "cli" | "web" | "imap";

/** A source in a person's words, for a job's timeline ("from the console"). */
export const SOURCE_WORDS: Readonly<Record<JobSource, string>> = {
  smtp: "mail",
  spool: "a print folder",
  cli: "the command line",
  web: "the console",
  imap: "a mailbox",
};

/** Contract §1: the state of one recipient of a job. */
export type RecipientState =
  | "queued" // waiting for its first send
  | "sending" // claimed by a dispatcher, the send call is being made
  | "deferred" // a send failed temporarily; waits for nextAttemptAt
  | "processing" // accepted by the service (messageId known), awaiting its result
  | "delivered"
  | "failed"
  | "cancelled"
  | "held" // an operator put it on hold
  | "unknown"; // a send whose outcome is not known yet: reconcile before any resend

export const RECIPIENT_STATES: readonly RecipientState[] = [
  "queued",
  "sending",
  "deferred",
  "processing",
  "delivered",
  "failed",
  "cancelled",
  "held",
  "unknown",
];

/**
 * A job's summary state, derived from its recipients:
 * queued (nothing started) / active (something in flight or deferred) / held /
 * delivered (all delivered) / failed (none delivered) / partial (some delivered, some failed) /
 * cancelled (all cancelled) / corrupt (input kept for inspection, never sent).
 */
export type JobState = "queued" | "active" | "held" | "delivered" | "failed" | "partial" | "cancelled" | "corrupt";
export const JOB_STATES: readonly JobState[] = [
  "queued",
  "active",
  "held",
  "delivered",
  "failed",
  "partial",
  "cancelled",
  "corrupt",
];

export interface CoverSpec {
  enabled: boolean;
  subject?: string;
  notes?: string;
  recipientName?: string;
  senderName?: string;
  coverPageId?: string;
  /** [reply]: the gateway adds a reply sheet (a signed QR code) as the last page; cover or not */
  replySheet?: boolean;
}

/** Something the intake left out of the fax, told to the user in the notification. */
export interface LeftOut {
  name: string;
  reason: string;
  /** A file the sender attached to be faxed, sent without it (intake.partial: send): said first in the outcome. */
  sentWithout?: boolean;
}

export interface JobMeta {
  leftOut?: LeftOut[];
  /** Where the job came from: mail Message-ID, envelope sender, subject; spool file name... */
  origin?: Record<string, string>;
}

/**
 * Documents given as bytes up to this size are kept in the database with their job's row, not as
 * files (the SQLite store's document_data, PostgreSQL's documents table, which holds every
 * document): committed with the row, no file, folder entry or fsync of their own. Intake holds a
 * small mail and its parts in memory for this (intake/mail/incoming-file.ts WorkDir). In a
 * micro-benchmark on this project's machine, a commit carrying 173 KB of blobs cost the main
 * thread 0.2-0.3 ms; as files the same bytes cost a create, writes, an fsync and a rename each,
 * a folder made and fsynced, and two or three waits for the disk (docs/bench.md).
 */
export const SMALL_DOCUMENT_BYTES = 256 * 1024;

export interface NewDocument {
  /**
   * A file on disk; the store copies it (or moves it, with `move`) into its data folder. With
   * `data` the bytes are stored instead, and this names where they came from (the caller may have
   * written no file at all: a mail's text page).
   */
  path: string;
  /** The name shown to the service and in notifications. */
  name: string;
  contentType: string;
  move?: boolean;
  /**
   * With `move`: the file's data is on disk already (its writer closed it with `flush`, see
   * fs/atomic.ts FLUSH_ON_CLOSE) and it is this long, so the store renames it in without opening
   * it again. Absent: the store fsyncs it.
   */
  flushedBytes?: number;
  /**
   * The file's bytes, already read (and judged) by the caller: stored instead of reading `path`
   * again, so that a path someone else can write to (a spool folder) cannot be swapped for a
   * symlink to another file between the caller's checks and the copy.
   */
  data?: Uint8Array;
}

export interface NewRecipient {
  /** E.164 with +, e.g. "+15551234567" */
  number: string;
  /** Display name (cover page TO), e.g. the contact's name. */
  name?: string;
}

export interface NewJob {
  source: JobSource;
  /** Config user name (users[].name) */
  user: string;
  recipients: NewRecipient[];
  documents: NewDocument[];
  cover: CoverSpec;
  /** ISO date-time; the service is asked to send then. */
  scheduledAt?: string | null;
  tags?: string[];
  /**
   * Idempotency key: enqueue() with a key already stored (within the store's dedupe window)
   * returns the existing job with duplicate=true and stores nothing new.
   */
  dedupeKey?: string;
  meta?: JobMeta;
  /** The original input (the mail message, the print file), kept with the job for inspection. */
  original?: NewDocument;
  /**
   * Print now, address later: no recipients yet; the job is held for its owner, who gives the
   * numbers in the console (QueueStore.address). Its one recipient row is a placeholder
   * (number '', lastError NEEDS_ADDRESS in transitions.ts).
   */
  awaitingAddress?: boolean;
  /**
   * The job's numbers its user never faxed before (E.164), when the door could not prove the
   * sender chose them (intake/confirm-new.ts): every recipient is held until the owner confirms
   * (QueueStore.confirm), these with CONFIRM_NEW_NUMBER, the others with CONFIRM_WITH_NEW
   * (transitions.ts). Empty or absent: queued as usual.
   */
  awaitingConfirmation?: string[];
}

export interface StoredDocument {
  /** Absolute path inside the data folder. */
  path: string;
  name: string;
  contentType: string;
  bytes: number;
  /**
   * An original only: runs of base64 lines its kept bytes leave out, each exactly a document of
   * the same job encoded again; the store's readDocument puts them back (spliced-original.ts).
   */
  spliced?: SplicedPart[];
}

export interface Recipient {
  jobId: string;
  /** 0-based position in the job */
  idx: number;
  number: string;
  name: string | null;
  state: RecipientState;
  attempts: number;
  nextAttemptAt: string | null;
  lastError: string | null;
  /** The service's messageId once known. */
  messageId: string | null;
  /** Identity of the send call that last carried this recipient (in the fax `cf`). */
  sendId: string | null;
  resultCode: string | null;
  resultInfo: string | null;
  errorCode: string | null;
  errorInfo: string | null;
  pages: number | null;
  duration: number | null;
  faxAttempt: number | null;
  lockedBy: string | null;
  lockedUntil: string | null;
  createdAt: string;
  updatedAt: string;
  sentAt: string | null;
  finishedAt: string | null;
  /** Failed fax tries (busy, no answer...) counted against queue.maxFaxTries. */
  faxTries: number;
  /** The service's page count of the document (pages is pagesComplete). */
  pagesCount: number | null;
  /** API calls spent on this recipient (batched calls are shared out), for the bench. */
  apiCalls: number;
  /** Start of the current attempt budget (job creation, or the last operator retry). */
  budgetFrom: string;
}

export interface Job {
  id: string;
  source: JobSource;
  user: string;
  state: JobState;
  cover: CoverSpec;
  documents: StoredDocument[];
  original: StoredDocument | null;
  scheduledAt: string | null;
  tags: string[];
  dedupeKey: string | null;
  meta: JobMeta;
  /** Why a corrupt job could not be processed. */
  corruptReason: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  recipients: Recipient[];
}

export interface JobFilter {
  state?: JobState;
  user?: string;
  source?: JobSource;
  /** Case-insensitive substring of a recipient's number or name, or of the subject (cover or origin). */
  search?: string;
  /** Only jobs changed at or after this ISO time (the console's live updates poll with it). */
  updatedSince?: string;
  /** Newest first; `offset` skips that many (paging). */
  limit?: number;
  offset?: number;
}

/** One step in a recipient's life, written by every transition (the console's timeline). */
export interface JobEvent {
  jobId: string;
  /** Recipient index, or null for a job-level event (accepted, corrupt). */
  idx: number | null;
  /** ISO time */
  at: string;
  /** The transition's name (transitions.ts), e.g. "claim", "accept", "defer", "deliver", "cancel". */
  transition: string;
  from: RecipientState | null;
  to: RecipientState | JobState;
  /** The reason people will read (the service's words, the operator's action), when there is one. */
  detail: string | null;
}

/** An event as a backend appends it: its time is the store's clock at the write. */
export type NewEvent = Omit<JobEvent, "at" | "detail"> & { detail?: string | null };

export type {
  AlertPayload,
  KeyExpiryPayload,
  NotificationKind,
  NotificationPayloads,
  OutcomePayload,
  RejectedPayload,
} from "./notification-payloads.js";
export type { InboundPayload } from "../received/index.js";

interface NewNotificationFields {
  /** Config user name the mail is for. */
  user: string;
  jobId?: string | null;
  /** Unique: a second enqueue with the same key is ignored (exactly-once notification). */
  dedupeKey: string;
}

/** A notification to queue; `kind` decides the shape of `payload`. */
export type NewNotification = NewNotificationFields & KindAndPayload;

export type NotificationState = "pending" | "sent" | "skipped" | "failed";
export const NOTIFICATION_STATES: readonly NotificationState[] = ["pending", "sent", "skipped", "failed"];

interface NotificationFields {
  id: number;
  user: string;
  jobId: string | null;
  dedupeKey: string;
  state: NotificationState;
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
  createdAt: string;
  sentAt: string | null;
}

/** A queued notification as read back; `kind` decides the shape of `payload`. */
export type Notification = NotificationFields & KindAndPayload;

export interface QueueCounts {
  jobs: Record<JobState, number>;
  recipients: Record<RecipientState, number>;
  /** Age in seconds of the oldest job that is not final, or null. */
  oldestActiveAgeSeconds: number | null;
  notificationsPending: number;
}
