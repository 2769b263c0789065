// SMTP replies from the error catalogue (../errors.ts). Refusals are FaxgateErrors carrying their
// reply ("550 5.7.1 ..."); only at the smtp-server callback are they turned into the shape it sends
// (`responseCode` + text), which the server wrapper sends with our enhanced code as written.
import { ERROR_CATALOGUE, FaxgateError, isFaxgateError, isStorageFull, type ErrorCode } from "../errors.js";

/** A refusal with the catalogue's reply code for `code`: refuse('RELAY_DENIED', 'Relay denied ...'). */
export function refuse(code: ErrorCode, text: string): FaxgateError {
  return new FaxgateError(code, text, { smtpReply: `${ERROR_CATALOGUE[code].smtp} ${text}` });
}

/** A refusal whose whole reply line is given (a variant of the catalogue's, e.g. 421 instead of 451). */
export function refuseWith(code: ErrorCode, reply: string): FaxgateError {
  const text = reply.replace(/^\d{3} (?:[245]\.\d{1,3}\.\d{1,3} )?/, "");
  return new FaxgateError(code, text, { smtpReply: reply });
}

export interface ReplyError extends Error {
  responseCode: number;
}

/** "550 5.7.1 text" -> the Error smtp-server sends as exactly that line. */
export function replyError(reply: string): ReplyError {
  const m = /^(\d{3}) (.*)$/s.exec(reply);
  const err = new Error(m ? m[2]! : reply) as ReplyError;
  err.responseCode = m ? Number(m[1]) : 451;
  return err;
}

const LOCAL_TROUBLE = "451 4.3.0 Temporary local problem, please try again later";

/**
 * The reply for anything thrown during a session. The input's fault: its own (5xx, or 4xx where
 * the catalogue says it passes) reply. Ours or the service's: a 4xx, never a 5xx.
 */
export function replyFor(err: unknown): string {
  // A full disk is told as such (RFC 3463 4.3.1, as Postfix does): the client keeps the mail and retries.
  if (isStorageFull(err))
    return `${ERROR_CATALOGUE.STORAGE_FULL.smtp} Insufficient system storage, please try again later`;
  if (!isFaxgateError(err)) return LOCAL_TROUBLE;
  const kind = ERROR_CATALOGUE[err.code];
  const reply = err.smtpReply ?? `${kind.smtp} ${err.message}`;
  if (kind.fault === "input") return reply;
  if (reply.startsWith("4")) {
    // our own words for our own trouble (a contact lookup that met an outage) are kept; internal
    // details (paths, causes) are not sent to the client
    if (err.smtpReply) return err.smtpReply;
    if (err.code === "SHUTTING_DOWN") return `${kind.smtp} The fax gateway is shutting down, try again later`;
  }
  return `451 4.3.0 Temporary local problem (${err.code}), please try again later`;
}
