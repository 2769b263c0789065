// One error type for the whole gateway, with a stable code from the catalogue below.
// Every stage throws FaxgateError (or a subclass) so that callers can decide by `code` and
// `temporary` instead of parsing messages. Messages never contain secrets.
import os from "node:os";

/**
 * Whose fault a failure is: the input's (the mail, file or command: tell its sender, keep it, never
 * retry it), ours (disk, store, a bug, shutting down: retry, never blame the sender with a 5xx), or
 * the fax service's (its outages, refusals and answers).
 */
export type Fault = "input" | "ours" | "service";

export interface ErrorKind {
  /** What the code means, in a few words. */
  text: string;
  fault: Fault;
  /** Retried (4xx over SMTP, deferred in the queue) or final. */
  temporary: boolean;
  /** The SMTP reply code and enhanced status code this error is answered with during a session. */
  smtp: string;
}

const kind = (text: string, fault: Fault, temporary: boolean, smtp: string): ErrorKind => ({
  text,
  fault,
  temporary,
  smtp,
});
const OURS = "451 4.3.0";
const SERVICE = "451 4.3.0";

// The catalogue: every code with its meaning, whose fault it is, whether it passes, and its SMTP
// reply. Rules about errors are read from here, not written again where an error is caught.
export const ERROR_CATALOGUE = {
  // configuration and usage
  CONFIG_INVALID: kind("the configuration file is invalid", "ours", false, OURS),
  CONFIG_NOT_FOUND: kind("the configuration file cannot be read", "ours", false, OURS),
  USAGE: kind("the command was called with bad arguments", "input", false, "501 5.5.4"),

  // fax service client
  API_INSECURE_URL: kind("the fax service base URL is not https:", "ours", false, OURS),
  API_LIMIT: kind("a request field is over its documented limit", "input", false, "554 5.6.0"),
  API_INVALID_INPUT: kind("a request is missing a field or has a bad value", "input", false, "554 5.6.0"),
  API_NETWORK: kind("the fax service could not be reached", "service", true, SERVICE),
  API_TIMEOUT: kind("the fax service did not answer in time", "service", true, SERVICE),
  API_OUTCOME_UNKNOWN: kind("the request was sent but its answer never came", "service", true, SERVICE),
  API_RATE_LIMITED: kind("the fax service asked us to slow down (429)", "service", true, SERVICE),
  API_SERVER: kind("the fax service had trouble of its own (5xx)", "service", true, SERVICE),
  API_AUTH: kind("the API key was missing, unknown or expired (401)", "service", false, SERVICE),
  API_FORBIDDEN: kind("the API key may not make this call (403)", "service", false, SERVICE),
  API_NOT_FOUND: kind("the fax service does not know that id (404)", "service", false, SERVICE),
  API_TOO_LARGE: kind("the request body was too large (413)", "service", false, SERVICE),
  API_REJECTED: kind("the fax service refused the request (4xx)", "service", false, SERVICE),
  API_BAD_RESPONSE: kind("the fax service answered with something we cannot read", "service", false, SERVICE),

  // intake and addressing: the input's fault, answered permanently
  BAD_NUMBER: kind("a fax number is not valid", "input", false, "553 5.1.3"),
  DESTINATION_REFUSED: kind("the destination policy does not allow this fax number", "input", false, "553 5.1.3"),
  UNKNOWN_CONTACT: kind("a contact name is not known to the user", "input", false, "553 5.1.1"),
  NOTHING_TO_FAX: kind("there is no usable document and no cover page", "input", false, "554 5.6.0"),
  UNSUPPORTED_TYPE: kind("the document type cannot be faxed", "input", false, "554 5.6.0"),
  NO_DESTINATION: kind("no fax number could be found for a document", "input", false, "554 5.6.0"),
  AMBIGUOUS_DESTINATION: kind(
    "a document names several destinations and no rule picks one",
    "input",
    false,
    "554 5.6.0",
  ),
  SENDER_NOT_ALLOWED: kind("the sender may not send faxes through this gateway", "input", false, "550 5.7.1"),
  RELAY_DENIED: kind("the recipient is not in a fax domain of this gateway", "input", false, "550 5.7.1"),
  // permanent for the input (a spool file is refused), though SMTP says 452: send the rest apart
  TOO_MANY_RECIPIENTS: kind("a message has too many recipients", "input", false, "452 4.5.3"),
  TOO_LARGE: kind("a message or file is over the size limit", "input", false, "552 5.3.4"),
  UNSAFE_FILE: kind("a spool file is not a regular file inside its folder", "input", false, "554 5.6.0"),
  FOREIGN_WRITER: kind(
    "a spool file was written by someone other than its folder's person",
    "input",
    false,
    "554 5.7.1",
  ),
  REPEATED_FILE: kind("the same file went to the same destination moments ago", "input", false, "554 5.6.0"),
  // back-pressure (issue 55): the sender is told "busy, try again" (451 4.3.2, a console's 503 with
  // Retry-After) and holds its fax; nothing already accepted is dropped
  CONVERTER_BUSY: kind("the office document converter had no free slot in time", "ours", true, "451 4.3.2"),
  // OCR of received faxes (issue 51): a run that failed; the fax is kept and routed, its text tried again
  OCR_FAILED: kind("the text of a received fax could not be read by OCR", "ours", true, "451 4.3.0"),
  QUEUE_FULL: kind(
    "the queue holds as many faxes not yet sent as it may (queue.maxWaiting)",
    "ours",
    true,
    "451 4.3.2",
  ),
  CONVERTER_UNAVAILABLE: kind(
    "the office document converter cannot run isolated as configured",
    "ours",
    true,
    "451 4.3.0",
  ),
  MESSAGE_UNREADABLE: kind(
    "a message cannot be read: broken or hostile MIME, or over a parsing limit",
    "input",
    false,
    "554 5.6.0",
  ),

  // the SMTP session: the client's own doing
  BAD_SEQUENCE: kind("an SMTP command came out of order", "input", false, "503 5.5.1"),
  NO_RECIPIENTS: kind("a message has no accepted recipient", "input", false, "554 5.5.1"),
  AUTH_REQUIRED: kind("the sender must authenticate first", "input", false, "530 5.7.0"),
  AUTH_FAILED: kind("a login was wrong", "input", false, "535 5.7.8"),
  ENCRYPTION_REQUIRED: kind("a password would be sent without TLS", "input", false, "538 5.7.11"),
  CLIENT_LIMIT: kind("a client is over a connection, rate or login limit", "input", true, "421 4.7.0"),
  // the public MX mode (smtp.senderAuth): the message did not prove its sender, or DNS could not say
  SENDER_UNVERIFIED: kind("a message failed DMARC, SPF or DKIM for its sender", "input", false, "550 5.7.26"),
  SENDER_CHECK_TEMPORARY: kind("the sender could not be checked: a DNS lookup failed", "input", true, "451 4.7.0"),
  // a proved sender is not a wanted fax (mail-auth/): a copy of a signed mail, an old one, a number not written in it
  SIGNED_MAIL_REPLAYED: kind("a copy of a signed message that was already faxed", "input", false, "550 5.7.1"),
  SIGNED_MAIL_STALE: kind(
    "a signed message whose signed Date is too old, in the future or unsigned",
    "input",
    false,
    "550 5.7.1",
  ),
  RECIPIENT_NOT_WRITTEN: kind("a fax number the message's signed To/Cc does not name", "input", false, "550 5.7.1"),

  // store and queue
  STORE_UNAVAILABLE: kind("the queue store cannot be written", "ours", true, OURS),
  STORAGE_FULL: kind("the disk or quota of the queue is full", "ours", true, "452 4.3.1"),
  JOB_NOT_FOUND: kind("no job has that id", "input", false, OURS),
  JOB_STATE: kind("the job is not in a state that allows this operation", "input", false, OURS),
  JOB_EXPIRED: kind("the job stayed undelivered past its maximum age", "service", false, OURS),
  CLAIM_LOST: kind("a claimed send was taken back before its call left; the call was not made", "ours", true, OURS),
  // retention and legal holds (retention/)
  HOLD_NOT_FOUND: kind("no active legal hold has that id", "input", false, OURS),
  SERVICE_NOT_PURGED: kind("the fax service did not delete a fax it was asked to delete", "service", true, OURS),
  ALREADY_RUNNING: kind("another faxgate daemon is using the same data folder", "ours", false, OURS),

  // the directory (src/directory/): people from LDAP and SCIM
  DIRECTORY_UNAVAILABLE: kind("the directory could not be read; the last good list stays", "ours", true, OURS),
  DIRECTORY_DROP: kind("a directory sync would remove too many people at once", "ours", false, OURS),

  // evidence bundles of sent faxes (src/evidence/)
  EVIDENCE_UNAVAILABLE: kind(
    "the evidence of a fax cannot be gathered (not sent, or a copy is gone)",
    "input",
    false,
    OURS,
  ),
  TIMESTAMP_UNAVAILABLE: kind("the time-stamp authority gave no valid token", "service", true, SERVICE),

  // connector deliveries of received faxes (src/connectors/, issue 52)
  CONNECTOR_UNAVAILABLE: kind(
    "a connector's system could not be reached or asked us to come back (5xx, 429, no ACK)",
    "service",
    true,
    SERVICE,
  ),
  CONNECTOR_REFUSED: kind(
    "a connector's system refused the delivery (4xx, a NAK, a redirect)",
    "service",
    false,
    SERVICE,
  ),

  // shutdown and internal
  SHUTTING_DOWN: kind("the gateway is shutting down", "ours", true, "421 4.3.2"),
  // not retried by default: a bug does not go away by itself (SMTP still answers 4xx: ours)
  INTERNAL: kind("an unexpected internal error", "ours", false, OURS),
} as const satisfies Record<string, ErrorKind>;

/** Code -> what it means (the catalogue's text), as before the catalogue had more columns. */
export const ERROR_CODES = Object.fromEntries(Object.entries(ERROR_CATALOGUE).map(([k, v]) => [k, v.text])) as {
  [K in keyof typeof ERROR_CATALOGUE]: string;
};

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface FaxgateErrorOptions {
  /** Temporary failures are retried; permanent ones are not (default: the catalogue's). */
  temporary?: boolean;
  /** The SMTP reply this error should produce, e.g. "553 5.1.3 ...". */
  smtpReply?: string;
  /** HTTP status received from (client) or to send to (emulator) the peer. */
  httpStatus?: number;
  /** A config key, request field or other name the error is about. */
  field?: string;
  /** When a busy or over-share answer asks its client to come back (a console's Retry-After). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

export class FaxgateError extends Error {
  readonly code: ErrorCode;
  readonly temporary: boolean;
  readonly smtpReply?: string;
  readonly httpStatus?: number;
  readonly field?: string;
  readonly retryAfterSeconds?: number;

  constructor(code: ErrorCode, message: string, options: FaxgateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "FaxgateError";
    this.code = code;
    this.temporary = options.temporary ?? ERROR_CATALOGUE[code].temporary;
    this.smtpReply = options.smtpReply;
    this.httpStatus = options.httpStatus;
    this.field = options.field;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** The catalogue entry of a code. */
export function errorKind(code: ErrorCode): ErrorKind {
  return ERROR_CATALOGUE[code];
}

// Operating-system errors (errno names: ENOSPC, EIO, EACCES...) are the machine's, so ours. Codes
// that only look like them (mailsplit's EMAXLEN, ...) are not in this list and are not ours.
const ERRNO_NAMES = new Set(Object.keys(os.constants.errno));
const SQLITE = /^SQLITE_[A-Z_]+$/;
const STORAGE_FULL_CODES = new Set(["ENOSPC", "EDQUOT", "SQLITE_FULL"]);

/** Whether `err` (or its cause chain) carries an operating-system or database error code. */
export function isSystemError(err: unknown): boolean {
  return causeCodes(err).some((c) => ERRNO_NAMES.has(c) || SQLITE.test(c));
}

/** Whether the disk (or a quota) is full somewhere in the cause chain. */
export function isStorageFull(err: unknown): boolean {
  return causeCodes(err).some((c) => STORAGE_FULL_CODES.has(c));
}

function causeCodes(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth += 1) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === "string") out.push(code);
  }
  return out;
}

/**
 * Whose fault any thrown value is. A FaxgateError says so through its code; a system error is
 * ours; anything else unknown is ours too (a bug is never the sender's fault).
 */
export function faultOf(err: unknown): Fault {
  if (isFaxgateError(err)) return ERROR_CATALOGUE[err.code].fault;
  return "ours";
}

export function isFaxgateError(err: unknown, code?: ErrorCode): err is FaxgateError {
  return err instanceof FaxgateError && (code === undefined || err.code === code);
}

/** A short, secret-free description of any thrown value, for logs and reason files. */
export function describeError(err: unknown): string {
  if (err instanceof FaxgateError) return `${err.code}: ${err.message}`;
  if (err instanceof Error) return err.message;
  return String(err);
}
