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
    const text = JSON.stringify(body) as string | undefined;
    if (text !== undefined) ctx.body = utf8(text); // Content-Type stays JSON (already set), Content-Length = bytes
  };
}

/**
 * The UTF-8 bytes of `text`, written into room for the worst case (3 bytes per UTF-16 unit):
 * Buffer.from would first measure the text (another pass over it) to allocate exactly.
 */
function utf8(text: string): Buffer {
  const buf = Buffer.allocUnsafe(text.length * 3);
  return buf.subarray(0, buf.write(text, 'utf8'));
}
