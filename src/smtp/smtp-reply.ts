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

/** The reply for anything thrown while handling a message: never a 5xx for our own fault. */
export function replyFor(err: unknown): string {
  if (isFaxgateError(err)) {
    if (err.smtpReply && (MESSAGE_FAULTS.has(err.code) || err.smtpReply.startsWith('4'))) return err.smtpReply;
    if (err.code === 'SHUTTING_DOWN') return '421 4.3.2 The fax gateway is shutting down, try again later';
    return `451 4.3.0 Temporary local problem (${err.code}), please try again later`;
  }
  return '451 4.3.0 Temporary local problem, please try again later';
}
