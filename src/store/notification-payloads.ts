// What each kind of notification carries in its `payload` column. The store only keeps these as
// JSON; the notify stage reads them back. One map from kind to payload, so that the enqueue side
// and the compose side agree at compile time instead of casting through Record<string, unknown>.

/** A job reached a final state: the mail is composed from the job itself. */
import type { InboundPayload } from "../received/index.js";
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
