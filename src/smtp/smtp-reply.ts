// Replies as errors for smtp-server callbacks. Our replies carry their own enhanced status code
// ("550 5.7.1 ..."); the server wrapper sends them as written instead of adding its guess.
import { isFaxgateError } from '../errors.js';

export interface ReplyError extends Error {
  responseCode: number;
}

/** "550 5.7.1 text" -> an Error smtp-server sends as exactly that line. */
export function replyError(reply: string): ReplyError {
  const m = /^(\d{3}) (.*)$/s.exec(reply);
  const err = new Error(m ? m[2]! : reply) as ReplyError;
  err.responseCode = m ? Number(m[1]) : 451;
  return err;
}

/** Codes whose reply blames the message or the sender; everything else is our trouble (451). */
const MESSAGE_FAULTS = new Set(['BAD_NUMBER', 'UNKNOWN_CONTACT', 'NOTHING_TO_FAX', 'UNSUPPORTED_TYPE', 'SENDER_NOT_ALLOWED', 'RELAY_DENIED', 'TOO_MANY_RECIPIENTS', 'TOO_LARGE', 'NO_DESTINATION']);

const STORAGE_FULL = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL']);

/** Whether a system error in the cause chain says the disk (or quota) is full. */
function storageFull(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth += 1) {
    if (STORAGE_FULL.has(String((e as NodeJS.ErrnoException).code))) return true;
  }
  return false;
}

/** The reply for anything thrown while handling a message: never a 5xx for our own fault. */
export function replyFor(err: unknown): string {
  // A full disk is told as such (RFC 3463 4.3.1, as Postfix does): the client keeps the mail and retries.
  if (storageFull(err)) return '452 4.3.1 Insufficient system storage, please try again later';
  if (isFaxgateError(err)) {
    if (err.smtpReply && (MESSAGE_FAULTS.has(err.code) || err.smtpReply.startsWith('4'))) return err.smtpReply;
    if (err.code === 'SHUTTING_DOWN') return '421 4.3.2 The fax gateway is shutting down, try again later';
    return `451 4.3.0 Temporary local problem (${err.code}), please try again later`;
  }
  return '451 4.3.0 Temporary local problem, please try again later';
}
