// What each kind of notification carries in its `payload` column. The store only keeps these as
// JSON; the notify stage reads them back. One map from kind to payload, so that the enqueue side
// and the compose side agree at compile time instead of casting through Record<string, unknown>.
import type { ReceivedFax } from "./received.js";

/** A job reached a final state: the mail is composed from the job itself. */
export interface OutcomePayload {
  jobId: string;
}

/** Input refused after the SMTP conversation (a corrupt mail, a spool file with no number). */
export interface RejectedPayload {
  jobId?: string;
  /** The spool file name (or the kept input's name) the user knows it by. */
  file?: string;
  subject?: string;
  reason: string;
  /** 'spool': the mail also says where the refused file went. */
  source?: "smtp" | "spool" | "cli" | "web" | "imap";
  /** Nothing about the input was wrong (a repeat within the window): the mail asks for no correction. */
  nothingToCorrect?: boolean;
  /**
   * The sender was not proved to be the user it claims (a mailbox message whose From: its provider
   * did not verify): the user may not have written it at all, so the mail asks for no correction.
   */
  senderUnproved?: boolean;
}

/** What the inbound poller stores: a snapshot of the service's record of a received fax. */
export interface InboundPayload {
  messageId: string;
  status: string;
  /** The sender's number. */
  from: string | null;
  csid: string | null;
  pages: number | null;
  duration: number | null;
  createdAt: string | null;
  resultCode: string | null;
  resultInfo: string | null;
  errorCode: string | null;
  errorInfo: string | null;
  /** The number the sender dialled (absent in notifications queued before it was kept). */
  dialled?: string | null;
  /** The kept fax (store/received.ts): its document is attached from the store. */
  receivedId?: string;
  /** Told as a member of this group's shared inbox. */
  group?: string;
  /** A shared mailbox or escalation address named by a rule: mailed there whatever the preference. */
  to?: string;
  /** Sent again because nobody took it in time. */
  escalated?: boolean;
}

/**
 * The outcome notice of a job that has just become final, as both backends queue it in the same
 * transaction: a job finished again after an operator retry gets a notice of its own.
 */
export function outcomeNotice(
  jobId: string,
  user: string,
  finalsBefore: number,
): { kind: "outcome"; user: string; jobId: string; dedupeKey: string; payload: OutcomePayload } {
  const dedupeKey = finalsBefore === 0 ? `outcome:${jobId}` : `outcome:${jobId}:${finalsBefore + 1}`;
  return { kind: "outcome", user, jobId, dedupeKey, payload: { jobId } };
}

/** The notice of a kept received fax, as the inbox's forward and its escalation send it again. */
export function keptFaxPayload(fax: ReceivedFax, extra: Partial<InboundPayload>): InboundPayload {
  return {
    messageId: fax.messageId,
    status: fax.status,
    from: fax.sender,
    csid: fax.csid,
    pages: fax.pages,
    duration: null,
    createdAt: fax.receivedAt,
    resultCode: null,
    resultInfo: null,
    errorCode: null,
    errorInfo: null,
    dialled: fax.dialled,
    receivedId: fax.id,
    ...extra,
  };
}

/** The gateway's API key for a user runs out soon. */
export interface KeyExpiryPayload {
  keyName: string;
  expiresAt: string;
}

/** Something a person must look at: a refused key holding faxes, a send parked as unknown. */
export interface AlertPayload {
  subject: string;
  text: string;
  /** What to do about it, in one sentence. */
  action?: string;
}

/** A print job waits for its owner to give it a number in the console. */
export interface AddressPayload {
  jobId: string;
}

/** A fax to a number its owner never faxed before waits for the owner's click (intake/confirm-new.ts). */
export interface ConfirmPayload {
  jobId: string;
}

/** Input taken where its sender saw no answer (a mailbox message): the job id, as SMTP's 250 gives it. */
export interface AcceptedPayload {
  jobId: string;
  subject?: string;
  /** The numbers it will be faxed to, E.164. */
  numbers: string[];
  /** Where it came from, in the user's words ("the mailbox fax@acme.com"). */
  via: string;
}

export interface NotificationPayloads {
  outcome: OutcomePayload;
  accepted: AcceptedPayload;
  rejected: RejectedPayload;
  inbound: InboundPayload;
  "key-expiry": KeyExpiryPayload;
  alert: AlertPayload;
  address: AddressPayload;
  confirm: ConfirmPayload;
}

export type NotificationKind = keyof NotificationPayloads;

export const NOTIFICATION_KINDS: readonly NotificationKind[] = [
  "outcome",
  "accepted",
  "rejected",
  "inbound",
  "key-expiry",
  "alert",
  "address",
  "confirm",
];

/** `{ kind, payload }` for one kind: the union of these is what `kind` discriminates. */
export type KindAndPayload = {
  [K in NotificationKind]: { kind: K; payload: NotificationPayloads[K] };
}[NotificationKind];
