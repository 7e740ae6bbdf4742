import type Koa from 'koa';
import { STATUS_CODES } from 'node:http';
import { z } from 'zod';
import { AppError, methodNotAllowed } from '../errors.ts';
import type { Logger } from '../log.ts';
import { storageError } from '../storage/db.ts';

/** Stable codes for HTTP errors that come from the framework or its libraries, not from us. */
const FRAMEWORK_CODES: Record<number, string> = {
  400: 'malformed_request',
  404: 'route_not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  431: 'headers_too_large',
};

/**
 * The body of every error answer (application/problem+json), as the OpenAPI documents give it
 * (components.schemas.Problem): problemBody's members. `error` and `error_description` are the
 * OAuth 2.0 error members (RFC 6749 §5.2) of the token endpoint's errors (POST /session).
 */
export const Problem = z
  .strictObject({
    type: z.string(),
    title: z.string(),
    status: z.int().min(400).max(599),
    detail: z.string(),
    message: z.string().meta({ description: 'The same text as detail (SPEC §2)' }),
    code: z.string().meta({ description: 'Stable machine-readable error code' }),
    errors: z.array(z.strictObject({ path: z.string(), message: z.string() })).optional().meta({ description: 'The fields or parameters at fault (400, 422): at most 100, then one item saying how many more' }),
    error: z.string().optional().meta({ description: 'OAuth 2.0 error code (POST /session only)' }),
    error_description: z.string().optional().meta({ description: 'OAuth 2.0 error description (POST /session only)' }),
    requestId: z.string().optional(),
  })
  .meta({ id: 'Problem' });

/** The RFC 9457 body with the `message` and `code` members SPEC §2 adds. */
export function problemBody(e: AppError, requestId: string | undefined) {
  return {
    type: 'about:blank',
    title: STATUS_CODES[e.status] ?? 'Error',
    status: e.status,
    detail: e.message,
    message: e.message,
    code: e.code,
    ...(e.errors.length ? { errors: e.errors } : {}),
    ...e.extra,
    ...(requestId ? { requestId } : {}),
  };
}

/** Converts anything thrown below into an AppError; unknown errors become an opaque 500. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const mapped = storageError(err);
  if (mapped) return mapped;
  const e = err as { status?: unknown; statusCode?: unknown; expose?: unknown; message?: unknown; type?: unknown };
  const status = typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    // http-errors from Koa or koa-body: the status is right, the message is written for us here.
    let message = STATUS_CODES[status] ?? 'Bad request';
    if (status === 400 && (e.type === 'entity.parse.failed' || err instanceof SyntaxError)) message = 'The request body is not valid JSON.';
    else if (status === 413) message = 'The request body is too large.';
    else if (status === 415) message = 'The request body has an unsupported media type.';
    else if (e.expose === true && typeof e.message === 'string') message = e.message;
    return new AppError(status, FRAMEWORK_CODES[status] ?? `http_${status}`, message, { cause: err });
  }
  return new AppError(500, 'internal_error', 'Something went wrong on our side; the request id helps the operator find out what.', { cause: err });
}

/** What a request's body stream fails with when its client goes away (reset, or closed mid-body). */
const CLIENT_GONE = new Set(['ECONNRESET', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE', 'HPE_INVALID_EOF_STATE']);

/** Whether a request failed because its client went away before sending all of its body. */
export function abandonedBody(ctx: Koa.Context, cause: unknown): boolean {
  if (ctx.req.complete) return false;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  if (code !== undefined && CLIENT_GONE.has(code)) return true;
  return ctx.req.destroyed && (cause as Error | undefined)?.message === 'aborted';
}

/** A request with a body that nothing has begun to read, nor to drop (load shedding drains the bodies it refuses, on a kept-alive connection). */
function bodyLeftUnread(req: Koa.Context['req']): boolean {
  if (req.complete || req.destroyed || req.readableFlowing !== null) return false;
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * The only place that writes an error body (P3): every failure below it — thrown errors, unknown
 * routes, wrong methods — leaves as application/problem+json. 5xx details are logged, never sent.
 */
export function problems(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body === undefined || ctx.body === null) {
        if (ctx.status === 404) throw new AppError(404, 'route_not_found', `No route ${ctx.method} ${ctx.path}.`);
        if (ctx.status === 405) throw methodNotAllowed(ctx.method, ctx.path, String(ctx.response.get('Allow')));
        if (ctx.status === 501) throw new AppError(501, 'not_implemented', `${ctx.method} is not implemented.`);
      }
    } catch (err) {
      const e = toAppError(err);
      const requestId = ctx.state.requestId as string | undefined;
      // 501 is a method no route knows (TRACE, PROPFIND): the client's doing, told in the access log
      if (e.status >= 500 && e.code !== 'not_implemented') {
        const request = { requestId, method: ctx.method, path: ctx.path };
        // one that says when to come back (not ready yet, overloaded, busy) is an answer the server
        // chose, not a failure to look into: a warning with its reason, no stack (a shed burst would
        // otherwise write a stack trace per request)
        // /readyz's own "not ready" is its answer, polled by every load balancer and unit while the
        // server starts: info, not a warning per poll (an upgrade tester's log filled with them)
        if (e.code === 'not_ready' && ctx.path === '/readyz') log.info({ ...request, code: e.code }, `readiness: ${e.message}`);
        else if (e.headers['Retry-After'] !== undefined) log.warn({ ...request, code: e.code }, `request turned away: ${e.message}`);
        // the client hung up while its body was read (an upload cancelled): nothing failed here,
        // and nobody is left to answer (it was an error with a stack, a feed tester's case)
        else if (abandonedBody(ctx, e.cause)) log.info({ ...request, aborted: true }, 'request abandoned by the client while its body was read');
        else log.error({ err: e.cause ?? e, ...request }, 'request failed');
      }
      if (ctx.headerSent || !ctx.writable) return; // a stream already started: nothing more to say
      for (const [k, v] of Object.entries(e.headers)) ctx.set(k, v);
      if (bodyLeftUnread(ctx.req)) {
        // refused before its body was read (a ledger that is not there, a type not taken): the
        // connection closes after the answer instead of receiving the rest (a reviewer's case: an
        // upload's 100 MB were read and dropped on a kept-alive connection, and a next request on it
        // waited behind them); the bytes on their way meanwhile flow, so that the answer gets out
        // rather than a client stuck writing into a full socket (koajs/koa-body#253)
        ctx.set('Connection', 'close');
        ctx.req.resume();
      }
      ctx.status = e.status;
      ctx.type = 'application/problem+json';
      ctx.body = problemBody(e, requestId);
      ctx.state.problemCode = e.code; // for the metrics: the body is bytes by the time the response ends
    }
  };
}
