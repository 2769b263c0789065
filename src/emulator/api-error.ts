// Whole-request failures as the service reports them: {"error":{"name","message"}} with a status.
export type ApiErrorName =
  | "InvalidInputError"
  | "AuthenticationError"
  | "NotAllowedError"
  | "NotFoundError"
  | "PayloadTooLargeError"
  | "RateLimitError"
  | "ServiceUnavailableError"
  | "InternalError";

const STATUS: Record<ApiErrorName, number> = {
  InvalidInputError: 400,
  AuthenticationError: 401,
  NotAllowedError: 403,
  NotFoundError: 404,
  PayloadTooLargeError: 413,
  RateLimitError: 429,
  ServiceUnavailableError: 503,
  InternalError: 500,
};

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly kind: ApiErrorName,
    message: string,
    /** seconds for a Retry-After header; none is sent when absent */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = "ApiError";
    this.status = STATUS[kind];
  }
  body(): { error: { name: string; message: string } } {
    return { error: { name: this.kind, message: this.message } };
  }
}

export const invalid = (message: string): ApiError => new ApiError("InvalidInputError", message);
export const notAllowed = (message: string): ApiError => new ApiError("NotAllowedError", message);
export const notFound = (message: string): ApiError => new ApiError("NotFoundError", message);
