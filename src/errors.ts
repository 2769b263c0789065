// One error type for the whole gateway, with a stable code from the catalogue below.
// Every stage throws FaxgateError (or a subclass) so that callers can decide by `code` and
// `temporary` instead of parsing messages. Messages never contain secrets.

export const ERROR_CODES = {
  // configuration and usage
  CONFIG_INVALID: 'the configuration file is invalid',
  CONFIG_NOT_FOUND: 'the configuration file cannot be read',
  USAGE: 'the command was called with bad arguments',

  // fax service client
  API_INSECURE_URL: 'the fax service base URL is not https:',
  API_LIMIT: 'a request field is over its documented limit',
  API_INVALID_INPUT: 'a request is missing a field or has a bad value',
  API_NETWORK: 'the fax service could not be reached',
  API_TIMEOUT: 'the fax service did not answer in time',
  API_OUTCOME_UNKNOWN: 'the request was sent but its answer never came',
  API_RATE_LIMITED: 'the fax service asked us to slow down (429)',
  API_SERVER: 'the fax service had trouble of its own (5xx)',
  API_AUTH: 'the API key was missing, unknown or expired (401)',
  API_FORBIDDEN: 'the API key may not make this call (403)',
  API_NOT_FOUND: 'the fax service does not know that id (404)',
  API_TOO_LARGE: 'the request body was too large (413)',
  API_REJECTED: 'the fax service refused the request (4xx)',
  API_BAD_RESPONSE: 'the fax service answered with something we cannot read',

  // intake and addressing
  BAD_NUMBER: 'a fax number is not valid',
  UNKNOWN_CONTACT: 'a contact name is not known to the user',
  NOTHING_TO_FAX: 'there is no usable document and no cover page',
  UNSUPPORTED_TYPE: 'the document type cannot be faxed',
  NO_DESTINATION: 'no fax number could be found for a document',
  AMBIGUOUS_DESTINATION: 'a document names several destinations and no rule picks one',
  SENDER_NOT_ALLOWED: 'the sender may not send faxes through this gateway',
  RELAY_DENIED: 'the recipient is not in a fax domain of this gateway',
  TOO_MANY_RECIPIENTS: 'a message has too many recipients',
  TOO_LARGE: 'a message or file is over the size limit',
  UNSAFE_FILE: 'a spool file is not a regular file inside its folder',
  CONVERTER_BUSY: 'the office document converter had no free slot in time',

  // store and queue
  STORE_UNAVAILABLE: 'the queue store cannot be written',
  JOB_NOT_FOUND: 'no job has that id',
  JOB_STATE: 'the job is not in a state that allows this operation',
  JOB_EXPIRED: 'the job stayed undelivered past its maximum age',
  ALREADY_RUNNING: 'another faxgate daemon is using the same data folder',

  // shutdown and internal
  SHUTTING_DOWN: 'the gateway is shutting down',
  INTERNAL: 'an unexpected internal error',
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface FaxgateErrorOptions {
  /** Temporary failures are retried; permanent ones are not. */
  temporary?: boolean;
  /** The SMTP reply this error should produce, e.g. "553 5.1.3 ...". */
  smtpReply?: string;
  /** HTTP status received from (client) or to send to (emulator) the peer. */
  httpStatus?: number;
  /** A config key, request field or other name the error is about. */
  field?: string;
  cause?: unknown;
}

export class FaxgateError extends Error {
  readonly code: ErrorCode;
  readonly temporary: boolean;
  readonly smtpReply?: string;
  readonly httpStatus?: number;
  readonly field?: string;

  constructor(code: ErrorCode, message: string, options: FaxgateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FaxgateError';
    this.code = code;
    this.temporary = options.temporary ?? false;
    this.smtpReply = options.smtpReply;
    this.httpStatus = options.httpStatus;
    this.field = options.field;
  }
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
