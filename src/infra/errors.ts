/**
 * The closed catalogue of errors. Domain code throws `new AppError('not_found', 'search srch_… does not exist')`;
 * the HTTP error handler (src/plugins/errors.ts) is the only place that turns one into
 * `application/problem+json` (RFC 9457).
 */
export const errorCatalog = {
  validation_failed: { status: 400, title: 'The request is not valid' },
  unknown_value: { status: 400, title: 'A value is not known' },
  unauthorized: { status: 401, title: 'Authentication is required' },
  forbidden: { status: 403, title: 'This credential may not do that' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  gone: { status: 410, title: 'Gone' },
  payload_too_large: { status: 413, title: 'The request body is too large' },
  uri_too_long: { status: 414, title: 'The URL is too long' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  rate_limited: { status: 429, title: 'Too many requests' },
  quota_exceeded: { status: 429, title: 'Quota exceeded' },
  header_fields_too_large: { status: 431, title: 'The request headers are too large' },
  internal: { status: 500, title: 'Internal server error' },
  insufficient_storage: { status: 507, title: 'The disk is full' },
  unavailable: { status: 503, title: 'Service unavailable' },
  not_ready: { status: 503, title: 'Not ready yet: what the request needs is being prepared' },
  time_budget_exceeded: { status: 503, title: 'The search ran past its time budget' },
} as const;

export type ErrorCode = keyof typeof errorCatalog;

/** One invalid input: which field, what is wrong, and what would be accepted. */
export interface FieldError {
  field: string;
  message: string;
  allowed?: unknown;
}

export interface AppErrorExtras {
  errors?: FieldError[];
  /** Extra members of the problem document (e.g. `candidates` for an unknown city). */
  [member: string]: unknown;
}

export class AppError extends Error {
  override name = 'AppError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  readonly extras: AppErrorExtras;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, detail: string, extras: AppErrorExtras = {}, headers: Record<string, string> = {}) {
    super(detail);
    this.code = code;
    this.status = errorCatalog[code].status;
    this.title = errorCatalog[code].title;
    this.extras = extras;
    this.headers = headers;
  }
}
