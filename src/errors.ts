/**
 * The one error type of the application. Services throw it; the HTTP layer renders it once as
 * problem+json (src/http/problem.ts). `code` is the stable, machine-readable part clients switch on.
 */
export interface FieldError {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly errors: FieldError[];
  /** Extra members merged into the problem body (e.g. RFC 6749 `error`); never secrets. */
  readonly extra: Record<string, unknown>;
  /** Response headers the error needs (Retry-After, WWW-Authenticate, Allow). */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string,
    message: string,
    opts: { errors?: FieldError[]; extra?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.errors = opts.errors ?? [];
    this.extra = opts.extra ?? {};
    this.headers = opts.headers ?? {};
  }
}

export const badRequest = (code: string, message: string, errors?: FieldError[]) => new AppError(400, code, message, { errors });

export const invalid = (message: string, errors: FieldError[] = []) => new AppError(422, 'validation_failed', message, { errors });

export const invalidField = (path: string, message: string) => invalid(`${path}: ${message}`, [{ path, message }]);

export const unauthenticated = (message = 'A valid bearer access token is required.') =>
  new AppError(401, 'invalid_token', message, { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });

export const forbidden = (message: string) => new AppError(403, 'forbidden', message);

export const notFound = (what: string, id?: string) =>
  new AppError(404, `${what.replace(/ /g, '_')}_not_found`, id ? `No ${what} with id ${id}.` : `The ${what} was not found.`);

export const conflict = (code: string, message: string) => new AppError(409, code, message);

/** A path that exists, asked with a method it does not take (RFC 9110 §15.5.6: the answer carries Allow). */
export const methodNotAllowed = (method: string, path: string, allow: string) =>
  new AppError(405, 'method_not_allowed', `${method} is not allowed on ${path}; allowed: ${allow}.`, { headers: { Allow: allow } });

export const tooLarge = (message: string) => new AppError(413, 'payload_too_large', message);

/** An Idempotency-Key that came before with a different request (draft-ietf-httpapi-idempotency-key-header). */
export const idempotencyKeyReused = () =>
  new AppError(422, 'idempotency_key_reused', 'This Idempotency-Key was already used for a different request; use a new key for a new request.', {
    errors: [{ path: 'Idempotency-Key', message: 'already used for another request' }],
  });

/**
 * The client closed its connection before the answer was ready (nginx's 499): work done for it
 * stops. Nobody reads this answer; it only ends the request's handling without an error logged.
 */
export const clientClosed = () => new AppError(499, 'client_closed_request', 'The client closed its connection before the answer was ready.');

export const unsupportedMediaType = (message: string) => new AppError(415, 'unsupported_media_type', message);

export const throttled = (retryAfterSeconds: number, message: string) =>
  new AppError(429, 'too_many_requests', message, { headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) } });

export const unavailable = (message: string, retryAfterSeconds = 1) =>
  new AppError(503, 'service_unavailable', message, { headers: { 'Retry-After': String(retryAfterSeconds) } });

/** The program cannot start or open its data folder for a reason a restart may mend (exit 1); see also ConfigError (exit 2). */
export class StartupError extends Error {
  override name = 'StartupError';
}
