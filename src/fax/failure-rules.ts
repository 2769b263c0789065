// The one classifier for fax service failures (ZoneMTA's handleResponseError, as data).
// The dispatcher relies on `temporary` (retry later) and `outcomeUnknown` (the call may have taken
// effect: reconcile with the service before sending again). Change the rules here, nowhere else.
import type { ErrorCode } from "../errors.js";

export interface FailureClass {
  code: ErrorCode;
  temporary: boolean;
  /** For calls that create something: a 5xx of this status may come after the work was done. */
  mayHaveHappened?: boolean;
}

/** Answers with these statuses, exactly. */
export const STATUS_RULES: Readonly<Record<number, FailureClass>> = {
  400: { code: "API_INVALID_INPUT", temporary: false },
  401: { code: "API_AUTH", temporary: false },
  403: { code: "API_FORBIDDEN", temporary: false },
  404: { code: "API_NOT_FOUND", temporary: false },
  // The server gave up waiting for our request: nothing was done, try again.
  408: { code: "API_TIMEOUT", temporary: true },
  413: { code: "API_TOO_LARGE", temporary: false },
  429: { code: "API_RATE_LIMITED", temporary: true },
  // A gateway in front of the service answered: the service itself may have done the work.
  502: { code: "API_SERVER", temporary: true, mayHaveHappened: true },
  504: { code: "API_SERVER", temporary: true, mayHaveHappened: true },
};

/** Everything else, by status class. */
export const STATUS_CLASS_RULES: Readonly<Record<number, FailureClass>> = {
  4: { code: "API_REJECTED", temporary: false },
  5: { code: "API_SERVER", temporary: true },
};

/** A status we did not expect at all (1xx, 3xx): the answer cannot be used. */
export const UNEXPECTED_STATUS: FailureClass = { code: "API_BAD_RESPONSE", temporary: true };

export function classifyStatus(status: number): FailureClass {
  return STATUS_RULES[status] ?? STATUS_CLASS_RULES[Math.floor(status / 100)] ?? UNEXPECTED_STATUS;
}

/**
 * Transport errors raised before any byte of the request could reach the service: the call
 * certainly did not happen, so even a send may simply be tried again.
 */
export const BEFORE_SEND_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_FAIL",
  "EAI_NONAME",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ENETDOWN",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_CLOSED",
  // TLS handshake refused (certificate trouble): nothing was sent inside the tunnel.
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REVOKED",
  "HOSTNAME_MISMATCH",
]);
const BEFORE_SEND_PREFIXES = ["ERR_TLS_", "ERR_SSL_"];

/** Transport errors that are timeouts waiting for the service's answer. */
export const TIMEOUT_CODES: ReadonlySet<string> = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** Mistakes in how we built the request: permanent, nothing was sent. */
export const REQUEST_BUG_CODES: ReadonlySet<string> = new Set([
  "UND_ERR_INVALID_ARG",
  "UND_ERR_NOT_SUPPORTED",
  "UND_ERR_REQ_CONTENT_LENGTH_MISMATCH",
  "ERR_INVALID_ARG_TYPE",
  "ERR_INVALID_URL",
]);

export interface TransportFailure extends FailureClass {
  outcomeUnknown: boolean;
  /** The low-level code (e.g. ECONNREFUSED), for the message. */
  detail: string;
}

/**
 * A request that failed without an HTTP answer. `createsSomething` is true for calls that are
 * not idempotent (send, send-to-many, resend, api-key create, contact create). Anything not known to
 * fail before sending counts as "may have reached the service" (never resend blindly).
 */
export function classifyTransportError(err: unknown, createsSomething: boolean): TransportFailure {
  const detail = errorCodeOf(err) ?? "UNKNOWN";
  if (REQUEST_BUG_CODES.has(detail)) {
    return { code: "API_INVALID_INPUT", temporary: false, outcomeUnknown: false, detail };
  }
  if (BEFORE_SEND_CODES.has(detail) || BEFORE_SEND_PREFIXES.some((p) => detail.startsWith(p))) {
    return { code: "API_NETWORK", temporary: true, outcomeUnknown: false, detail };
  }
  if (createsSomething) return { code: "API_OUTCOME_UNKNOWN", temporary: true, outcomeUnknown: true, detail };
  if (TIMEOUT_CODES.has(detail)) return { code: "API_TIMEOUT", temporary: true, outcomeUnknown: false, detail };
  return { code: "API_NETWORK", temporary: true, outcomeUnknown: false, detail };
}

/** The `code` of an error, looking into AggregateError (happy eyeballs) and `cause`. */
export function errorCodeOf(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== "object" || depth > 4) return undefined;
  const e = err as { code?: unknown; errors?: unknown; cause?: unknown };
  if (typeof e.code === "string" && e.code !== "") return e.code;
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const c = errorCodeOf(inner, depth + 1);
      if (c) return c;
    }
  }
  return errorCodeOf(e.cause, depth + 1);
}

/** Retry-After as delta-seconds or an HTTP-date, in milliseconds from `now`; undefined if unusable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
