import type Koa from 'koa';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, posix, resolve, sep } from 'node:path';
import { AppError, badRequest } from '../errors.ts';

/**
 * Serves the web application (P13): the files built into `dir` (web/dist), and index.html for every
 * other GET that is not an API path, so the application's own routes survive a reload (SPA fallback).
 * A path that names a file (has an extension) and does not exist stays a 404, so a stale script URL
 * never receives HTML. Nothing outside `dir` can be reached: the decoded path is normalized and
 * checked to stay inside it.
 */

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/**
 * The page's Content-Security-Policy: scripts, styles and requests only from this origin, no inline
 * script, no plugins, no framing, no <base> tricks, forms post only here. Downloads are made from
 * blob: URLs the page creates itself (an authenticated fetch turned into a file), hence img/blob.
 */
export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

/** Built assets carry a content hash in their names (esbuild `[name]-[hash]`): cache them for good. */
const HASHED = /-[A-Z0-9]{8}\.[a-z]+$/;

export interface ServeUiOptions {
  /** Path prefixes that are never the web application's (the APIs, the auth alias). */
  reserved: string[];
}

async function fileAt(path: string): Promise<{ size: number } | undefined> {
  try {
    const s = await stat(path);
    return s.isFile() ? { size: s.size } : undefined;
  } catch {
    return undefined;
  }
}

export function serveUi(dir: string, opts: ServeUiOptions): Koa.Middleware {
  const root = resolve(dir);
  // compared without case, as the API's router matches its paths: `/API/ledger/v1/nope` is an API
  // path (404 problem+json), not the web application's page with 200 (a compatibility tester's case)
  const reserved = opts.reserved.map((r) => r.toLowerCase());
  const isReserved = (path: string) => {
    const p = path.toLowerCase();
    return reserved.some((r) => p === r || p.startsWith(`${r}/`));
  };
  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || isReserved(ctx.path)) return next();
    let decoded: string;
    try {
      decoded = decodeURIComponent(ctx.path);
    } catch {
      throw badRequest('malformed_path', 'The path is not valid percent-encoding.');
    }
    if (decoded.includes('\0') || decoded.includes('\\')) throw badRequest('malformed_path', 'The path contains a forbidden character.');
    const rel = posix.normalize(`/${decoded}`).slice(1);
    let file = join(root, rel);
    if (file !== root && !file.startsWith(root + sep)) return next(); // cannot happen after normalize; kept as the guard
    let found = rel !== '' ? await fileAt(file) : undefined;
    if (!found) {
      if (extname(rel) !== '') return next(); // a missing file: 404 problem+json, not the page
      file = join(root, 'index.html');
      found = await fileAt(file);
      if (!found) {
        throw new AppError(404, 'web_app_not_built', 'The web application is not built here; run "npm run build:web" (npm start does it for you).');
      }
    }
    const isIndex = file === join(root, 'index.html');
    ctx.type = TYPES[extname(file)] ?? 'application/octet-stream';
    ctx.set('Cache-Control', isIndex ? 'no-cache' : HASHED.test(file) ? 'public, max-age=31536000, immutable' : 'public, max-age=3600');
    ctx.set('Content-Security-Policy', UI_CSP);
    ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
    ctx.set('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=(), usb=()');
    ctx.status = 200;
    ctx.length = found.size;
    if (ctx.method === 'HEAD') return;
    ctx.body = await readFile(file);
  };
}
