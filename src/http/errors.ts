/** SPEC's error codes and the one map from code to HTTP status. */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  quota_exceeded: 402,
  plan_required: 402,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  item_answer_would_be_discarded: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An error as a value: a code from the table above, a message that says what to fix, optional extra fields. */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
  }
}

export const notFound = (what: string, id: string) => new ApiError('not_found', `No ${what} with id ${id}.`);
export const invalid = (message: string) => new ApiError('invalid_request', message);
export const unprocessable = (message: string) => new ApiError('unprocessable', message);
export const conflict = (message: string, extra: Record<string, unknown> = {}) =>
  new ApiError('conflict', message, extra);
