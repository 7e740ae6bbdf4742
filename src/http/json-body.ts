import type Koa from 'koa';

/**
 * Sends JSON bodies as UTF-8 bytes serialized here, once. Left to Koa, a JSON body is stringified,
 * measured with Buffer.byteLength (a pass over the whole text) and then encoded again by the socket
 * write; as bytes, its length is known and the socket copies it as is. Same status, headers and
 * body text as Koa's own handling. Runs outside problems() so that error bodies are covered too.
 */
export function jsonBodies(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    const body: unknown = ctx.body;
    if (body === null || typeof body !== 'object' || ctx.respond === false || ctx.res.headersSent) return;
    const proto = Object.getPrototypeOf(body) as unknown;
    if (proto !== Object.prototype && proto !== null && !Array.isArray(body)) return; // streams, buffers, blobs: Koa's business
    ctx.body = Buffer.from(JSON.stringify(body), 'utf8'); // Content-Type stays JSON (already set), Content-Length = bytes
  };
}
