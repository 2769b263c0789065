// The one error the fax service client throws. Callers decide by `code`, `temporary` and
// `outcomeUnknown` (the dispatcher reconciles a send whose outcome is unknown instead of resending).
import { FaxgateError, type ErrorCode } from "../errors.js";

export interface FaxApiErrorOptions {
  status?: number;
  serviceName?: string;
  serviceMessage?: string;
  retryAfterMs?: number;
  outcomeUnknown?: boolean;
  temporary: boolean;
  field?: string;
  cause?: unknown;
}

export class FaxApiError extends FaxgateError {
  /** HTTP status of the answer, when there was one. */
  readonly status?: number;
  /** The service's error kind, e.g. "NotAllowedError". */
  readonly serviceName?: string;
  readonly serviceMessage?: string;
  /** From a 429's Retry-After (seconds or HTTP-date). */
  readonly retryAfterMs?: number;
  /** The request may have taken effect on the service: reconcile before trying again. */
  readonly outcomeUnknown: boolean;

  constructor(code: ErrorCode, message: string, opts: FaxApiErrorOptions) {
    super(code, message, { temporary: opts.temporary, httpStatus: opts.status, field: opts.field, cause: opts.cause });
    this.name = "FaxApiError";
    this.status = opts.status;
    this.serviceName = opts.serviceName;
    this.serviceMessage = opts.serviceMessage;
    this.retryAfterMs = opts.retryAfterMs;
    this.outcomeUnknown = opts.outcomeUnknown ?? false;
  }
}

export function isFaxApiError(err: unknown): err is FaxApiError {
  return err instanceof FaxApiError;
}
