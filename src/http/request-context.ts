import type Koa from 'koa';
import { randomUUID } from 'node:crypto';
import { forwardedAddress } from '../client-address.ts';
import { clientClosed } from '../errors.ts';
import type { Logger } from '../log.ts';
import { noteRequestId, statusAnsweredByServer } from './server.ts';

const VALID_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Told about every request when its response ends (metrics), with its duration in seconds and the
 * status the client got (null: none, the connection closed first).
 */
export type RequestObserver = (ctx: Koa.Context, seconds: number, status: number | null) => void;

/**
 * Gives every request an id (echoing a well-formed incoming X-Request-Id), returns it in the
 * response, and when the response ends writes one access-log line and tells `observe` (one
 * listener and one clock reading for both). The line holds the path without its query string, so
 * credentials wrongly put in a URL never reach the log.
 */
export function requestContext(log: Logger, observe?: RequestObserver): Koa.Middleware {
  // The access line has fixed fields written here, none of them a credential field: redaction
  // (which costs more than the rest of the line) could never censor anything in it.
  const access = log.child({}, { redact: [] });
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = VALID_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    noteRequestId(ctx.req.socket, requestId, ctx.res);
    const started = process.hrtime.bigint();
    ctx.res.once('close', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // a connection that closed before its answer was sent whole (a client gone, an upload cut off
      // by shutdown or by the request deadline): the status it got — from the server itself for a
      // 408 — or none (Koa's default 404 was never sent), and `aborted`
      const finished = ctx.res.writableFinished;
      const status = finished || ctx.res.headersSent ? ctx.res.statusCode : (statusAnsweredByServer(ctx.req.socket) ?? null);
      observe?.(ctx, ms / 1000, status);
      const actor = (ctx.state.caller as { actor?: { id?: string } } | undefined)?.actor?.id;
      access.info(
        {
          requestId,
          method: ctx.method,
          path: ctx.path,
          status,
          ...(finished ? {} : { aborted: true }),
          ms: Math.round(ms * 10) / 10,
          ip: ctx.ip,
          actor,
          route: ctx.state.routeName as string | undefined,
        },
        'request',
      );
    });
    await next();
  };
}

/**
 * Behind a trusted reverse proxy (TRUST_PROXY) the client's address is the X-Forwarded-For entry
 * the outermost of our proxies added (Koa's `ctx.ip`, with maxIpsCount), without a port; an entry
 * that is no address counts as the proxy's own address (logged once), never as a client of its own.
 */
export function forwardedClient(log: Logger): Koa.Middleware {
  let warned = false;
  return (ctx, next) => {
    const entry = ctx.request.ips[0];
    if (entry === undefined) return next();
    const address = forwardedAddress(entry);
    if (address === undefined && !warned) {
      warned = true;
      log.warn({ entry: entry.slice(0, 64) }, "an X-Forwarded-For entry from the proxy names no address; such requests count as the proxy's own address (check the proxy's configuration)");
    }
    ctx.request.ip = address ?? ctx.socket.remoteAddress ?? '';
    return next();
  };
}

/**
 * Headers that make responses safe by default (nosniff, no framing), and on API data, which is
 * everything under `/api/` and under the `{auth_url}` alias, a CSP that allows nothing and no
 * caching (tokens and contacts never land in a cache). Every path under the alias counts, not only
 * its `/session`: the routes take a trailing slash as well (`/auth/v1/session/` answered its tokens
 * cacheable), and what they take next is theirs too.
 */
export function securityHeaders(opts: { https: boolean; authPath: string }): Koa.Middleware {
  const apiPrefixes = ['/api/', `${opts.authPath.toLowerCase()}/`];
  return async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
    if (opts.https) ctx.set('Strict-Transport-Security', 'max-age=31536000');
    // the routes match case-insensitively, so these paths are compared the same way: /API/… is API data too
    const path = ctx.path.toLowerCase();
    if (apiPrefixes.some((prefix) => path.startsWith(prefix))) {
      ctx.set('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
      ctx.set('Cache-Control', 'no-store');
    }
    await next();
  };
}

/** CORS for the configured origins only; without CORS_ORIGINS no cross-origin access is granted. */
export function cors(origins: string[]): Koa.Middleware {
  const allowed = new Set(origins);
  return async (ctx, next) => {
    const origin = ctx.get('Origin');
    if (!origin || !(allowed.has(origin) || allowed.has('*'))) return next();
    ctx.vary('Origin');
    ctx.set('Access-Control-Allow-Origin', origin);
    ctx.set('Access-Control-Expose-Headers', 'X-Request-Id, Location, Retry-After, WWW-Authenticate, Content-Disposition, Idempotent-Replayed');
    if (ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method')) {
      ctx.set('Access-Control-Allow-Methods', 'GET, HEAD, POST, PATCH, PUT, DELETE');
      ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-Request-Id, Idempotency-Key');
      ctx.set('Access-Control-Max-Age', '600');
      ctx.status = 204;
      return;
    }
    await next();
  };
}

/**
 * Aborted (with a 499, errors.ts `clientClosed`) when the request's connection closes before its
 * answer was sent whole: long work for it (a list walked in steps) stops at its next step.
 */
export function clientGone(ctx: Koa.Context): AbortSignal {
  const ctl = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) ctl.abort(clientClosed());
  });
  return ctl.signal;
}
