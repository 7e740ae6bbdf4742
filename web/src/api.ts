// The only module that talks to the server. It keeps the access token in memory (never in storage),
// resumes a session from the httpOnly refresh cookie, refreshes before expiry and once on a 401, and
// serializes refreshes across tabs (a refresh token is rotated on every use; re-using an old one
// revokes the whole session, so two tabs must never refresh with the same cookie at once).

export const ID = '/api/identity/v1';
export const LEDGER = '/api/ledger/v1';

export type Role = 'viewer' | 'editor' | 'admin';

export interface SessionUser {
  id: string;
  email: string;
  name: string;
  superuser: boolean;
}

export interface Principal {
  user: SessionUser | null;
  orgs: { id: string; name: string; role: Role }[];
}

/** A failed request, from a problem+json answer or the network. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly errors: { path: string; message: string }[];
  readonly retryAfter: number | undefined;
  constructor(status: number, code: string, message: string, errors: { path: string; message: string }[] = [], retryAfter?: number) {
    super(message);
    this.status = status;
    this.code = code;
    this.errors = errors;
    this.retryAfter = retryAfter;
  }
}

interface Held {
  token: string;
  /** When to refresh: a minute before the token expires. */
  refreshAt: number;
}

let held: Held | null = null;
let refreshTimer: number | undefined;
let inFlight: Promise<Principal> | null = null;
/**
 * Why there is no session: signed out on purpose (here or in another tab), ended by itself (its
 * refresh refused after it had started in the page, or a cookie the server refused), or none to
 * resume (a first visit).
 */
export type NoSession = 'signed-out' | 'ended' | 'none';
const listeners = new Set<(p: Principal | null, why?: NoSession) => void>();

/** Told when the session starts, is refreshed, or ends (here or in another tab), and why it ended. */
export function onSession(fn: (p: Principal | null, why?: NoSession) => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}
const emit = (p: Principal | null, why?: NoSession) => listeners.forEach((fn) => fn(p, why));

// Other tabs: a sign-out anywhere ends the session everywhere.
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel('contact-ledger-session') : null;
channel?.addEventListener('message', (e: MessageEvent) => {
  if (e.data === 'signed-out') drop('signed-out');
});

/** A session was started or resumed in this page (so a refused refresh means it ended, not that there was none). */
let hadSession = false;
/** The session ended without a sign-out (its refresh refused: expired, revoked); the sign-in page says so once. */
let ended = false;

function drop(why: NoSession): void {
  ended = why === 'ended';
  hadSession = false;
  held = null;
  clearTimeout(refreshTimer);
  emit(null, why);
}

async function readError(res: Response): Promise<ApiError> {
  let body: { code?: string; detail?: string; message?: string; errors?: { path: string; message: string }[] } = {};
  try {
    body = await res.json();
  } catch {
    /* not JSON: a proxy page or an empty answer */
  }
  const retry = Number(res.headers.get('Retry-After'));
  return new ApiError(
    res.status,
    body.code ?? `http_${res.status}`,
    body.detail ?? body.message ?? `The server answered ${res.status} ${res.statusText}.`,
    body.errors ?? [],
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
}

/**
 * A success answer whose body is not the API's JSON: something between the browser and the server
 * answered in its place — a captive portal or a proxy's sign-in page answering 200 with HTML. Said
 * in words, as "The server answered 502 Bad Gateway." is, where the page showed the parser's own
 * error (`Unexpected token '<', "<html>capt"... is not valid JSON`: a tester's case).
 */
const notTheApi = (status: number, statusText: string, type: string | null) =>
  new ApiError(
    status,
    'not_json',
    `The server answered ${status}${statusText ? ` ${statusText}` : ''} with ${/html/i.test(type ?? '') ? 'a web page' : 'something'} instead of the app's data: a proxy or a network's sign-in page may be answering in its place. Sign in to the network if it asks you to, then try again.`,
  );

/** The JSON body of a success answer; one that is not JSON is a notTheApi error. */
async function readJson<T>(res: Response): Promise<T> {
  const text = await res.text();
  try {
    return JSON.parse(text) as T;
  } catch {
    throw notTheApi(res.status, res.statusText, res.headers.get('Content-Type'));
  }
}

/** A request that never got an answer (fetch and the upload's XHR alike). */
const unreachable = () => new ApiError(0, 'network_error', 'The server cannot be reached. Check the connection and try again.');

async function send(input: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch (err) {
    // a request its caller cancelled is no network error: the caller knows and ignores it
    if (init.signal?.aborted) throw err;
    throw unreachable();
  }
}

/** POST /session in cookie mode: the refresh token stays in an httpOnly cookie the page cannot read. */
async function sessionRequest(body: Record<string, string>): Promise<Principal> {
  const res = await send(`${ID}/session`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Session-Cookie': '1' },
    body: JSON.stringify(body),
    credentials: 'same-origin',
  });
  if (!res.ok) throw await readError(res);
  const s = await readJson<{ accessToken: string; expiresIn: number; user: SessionUser | null; orgs: Principal['orgs'] }>(res);
  const lifetime = Math.max(30, s.expiresIn - 60) * 1000;
  held = { token: s.accessToken, refreshAt: Date.now() + lifetime };
  hadSession = true;
  ended = false;
  clearTimeout(refreshTimer);
  refreshTimer = window.setTimeout(() => void refresh().catch(() => undefined), lifetime);
  const p: Principal = { user: s.user, orgs: s.orgs };
  emit(p);
  return p;
}

/** Runs fn while holding the cross-tab refresh lock (Web Locks; a storage lease where unavailable). */
async function exclusive<T>(fn: () => Promise<T>): Promise<T> {
  if (navigator.locks) return navigator.locks.request('contact-ledger-refresh', fn);
  // Web Locks need a secure context (HTTPS or localhost). Elsewhere: a best-effort lease in localStorage.
  const KEY = 'contact-ledger-refresh-lock';
  const me = Math.random().toString(36).slice(2);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  for (let i = 0; i < 100; i++) {
    const cur = JSON.parse(localStorage.getItem(KEY) ?? 'null') as { me: string; until: number } | null;
    if (!cur || cur.until < Date.now()) {
      localStorage.setItem(KEY, JSON.stringify({ me, until: Date.now() + 10_000 }));
      await sleep(30);
      if ((JSON.parse(localStorage.getItem(KEY) ?? 'null') as { me: string } | null)?.me === me) break;
    }
    await sleep(100);
  }
  try {
    return await fn();
  } finally {
    if ((JSON.parse(localStorage.getItem(KEY) ?? 'null') as { me: string } | null)?.me === me) localStorage.removeItem(KEY);
  }
}

/**
 * Gets a new access token from the refresh cookie; one at a time in this tab and across tabs.
 * Rejects with ApiError 401 when there is no session to resume.
 */
export function refresh(): Promise<Principal> {
  inFlight ??= exclusive(() => sessionRequest({ grantType: 'refreshToken' }))
    .catch((err: unknown) => {
      // ended: one that started in this page, or a cookie the server refused (revoked, re-used) —
      // not none at all (a first visit, a sign-out: `no_session`)
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) drop(hadSession || (err.status === 401 && err.code !== 'no_session') ? 'ended' : 'none');
      throw err;
    })
    .finally(() => {
      inFlight = null;
    });
  return inFlight;
}

/**
 * Whether the session ended by itself (a refresh refused after it had started: expired or revoked),
 * not by a sign-out or on a first visit; true once, for the sign-in page to say so.
 */
export function takeSessionEnded(): boolean {
  const was = ended;
  ended = false;
  return was;
}

/** Resumes the session after a page load, if the cookie still holds one. */
export async function resume(): Promise<Principal | null> {
  try {
    return await refresh();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}

export function signIn(email: string, password: string): Promise<Principal> {
  return sessionRequest({ grantType: 'password', email, password });
}

/** Revokes the session on the server (and clears its cookie), then forgets it here and in other tabs. */
export async function signOut(): Promise<void> {
  try {
    await api('DELETE', `${ID}/session`);
  } finally {
    drop('signed-out');
    channel?.postMessage('signed-out');
  }
}

export interface RequestOptions {
  body?: unknown;
  form?: FormData;
  /** A raw body (a file) sent as is with contentType; a File's name goes along (Content-Disposition). */
  raw?: Blob;
  contentType?: string;
  query?: Record<string, string | number | boolean | undefined | null>;
  signal?: AbortSignal;
}

export function withQuery(path: string, query: RequestOptions['query']): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** A file name as RFC 8187 writes it: encodeURIComponent leaves ( ) ' * ! as they are, which it does not allow. */
const extValue = (name: string): string => encodeURIComponent(name).replace(/[()'*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

async function authorized(method: string, path: string, opts: RequestOptions): Promise<Response> {
  const attempt = async () => {
    if (!held || held.refreshAt <= Date.now()) await refresh();
    const headers: Record<string, string> = { Authorization: `Bearer ${held!.token}` };
    let body: BodyInit | undefined;
    if (opts.form) body = opts.form;
    else if (opts.raw) {
      body = opts.raw;
      headers['Content-Type'] = opts.contentType ?? 'application/octet-stream';
      if (opts.raw instanceof File && opts.raw.name) headers['Content-Disposition'] = `attachment; filename*=UTF-8''${extValue(opts.raw.name)}`;
    } else if (opts.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    return send(withQuery(path, opts.query), { method, headers, body, signal: opts.signal, credentials: 'same-origin' });
  };
  let res = await attempt();
  if (res.status === 401) {
    // expired or revoked: one refresh, one retry
    held = null;
    await refresh();
    res = await attempt();
  }
  if (!res.ok) {
    const err = await readError(res);
    if (res.status === 403) forbidden(err);
    throw err;
  }
  return res;
}

const forbiddenListeners = new Set<(e: ApiError) => void>();
/**
 * Told when an API call answers 403: the caller's role may have changed elsewhere (another admin
 * demoted them), so the app reloads its organizations and roles to show what they may still do.
 */
export function onForbidden(fn: (e: ApiError) => void): () => void {
  forbiddenListeners.add(fn);
  return () => forbiddenListeners.delete(fn);
}
const forbidden = (e: ApiError) => forbiddenListeners.forEach((fn) => fn(e));

/** A JSON API call with the session's bearer token; throws ApiError. */
export async function api<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
  const res = await authorized(method, path, opts);
  if (res.status === 204) return undefined as T;
  return readJson<T>(res);
}

/** The largest page the server's lists give (`limit` 1–1000 on every list endpoint). */
export const MAX_PAGE = 1000;

/**
 * The items of a paged list (`{[key]: items, nextCursor}`), following `nextCursor` from the first
 * page: to its end, or only `pages` pages (the Ledgers page's "Load more"), `limit` items a
 * request (the server's largest page unless told). `nextCursor` is where it stopped (null at the
 * end). Aborting `signal` stops it, during a request or between two (rejects with an AbortError).
 */
export async function listAll<T>(path: string, key: string, opts: { signal?: AbortSignal; limit?: number; pages?: number } = {}): Promise<{ items: T[]; nextCursor: string | null }> {
  const items: T[] = [];
  let cursor: string | null = null;
  for (let n = 0; n < (opts.pages ?? Infinity); n++) {
    opts.signal?.throwIfAborted();
    const page: Record<string, unknown> & { nextCursor: string | null } = await api('GET', path, { query: { limit: opts.limit ?? MAX_PAGE, cursor }, signal: opts.signal });
    items.push(...(page[key] as T[]));
    cursor = page.nextCursor;
    if (!cursor) break;
  }
  return { items, nextCursor: cursor };
}

/** How far an upload is: bytes of the request body sent of all of them. */
export interface UploadProgress {
  sent: number;
  total: number;
}

/**
 * Sends a form (a file) with the session's bearer token and reports how much of it was sent, which
 * fetch cannot; aborting `signal` stops the upload (rejects with an AbortError). Once the whole
 * body has been sent the server may act on it whatever the page does next: `onProgress` says when
 * (sent === total), so the caller can stop offering a cancel that would only hide the answer.
 */
export async function upload<T = unknown>(method: string, path: string, form: FormData, opts: { signal?: AbortSignal; onProgress?: (p: UploadProgress) => void } = {}): Promise<T> {
  const attempt = async (): Promise<XMLHttpRequest> => {
    if (!held || held.refreshAt <= Date.now()) await refresh();
    return new Promise<XMLHttpRequest>((resolve, reject) => {
      const aborted = () => reject(new DOMException('The upload was cancelled.', 'AbortError'));
      if (opts.signal?.aborted) return aborted();
      const xhr = new XMLHttpRequest();
      xhr.open(method, path);
      xhr.setRequestHeader('Authorization', `Bearer ${held!.token}`);
      xhr.upload.addEventListener('progress', (e) => opts.onProgress?.({ sent: e.loaded, total: e.lengthComputable ? e.total : e.loaded + 1 }));
      xhr.upload.addEventListener('load', () => opts.onProgress?.({ sent: 1, total: 1 }));
      xhr.addEventListener('load', () => resolve(xhr));
      xhr.addEventListener('error', () => reject(unreachable()));
      xhr.addEventListener('abort', aborted);
      opts.signal?.addEventListener('abort', () => xhr.abort(), { once: true });
      xhr.send(form);
    });
  };
  let xhr = await attempt();
  if (xhr.status === 401) {
    held = null;
    await refresh();
    xhr = await attempt();
  }
  if (xhr.status < 200 || xhr.status >= 300) {
    const headers = new Headers();
    const retry = xhr.getResponseHeader('Retry-After');
    if (retry) headers.set('Retry-After', retry);
    const err = await readError(new Response(xhr.responseText, { status: xhr.status, statusText: xhr.statusText, headers }));
    if (xhr.status === 403) forbidden(err);
    throw err;
  }
  if (xhr.status === 204) return undefined as T;
  try {
    return JSON.parse(xhr.responseText) as T;
  } catch {
    throw notTheApi(xhr.status, xhr.statusText, xhr.getResponseHeader('Content-Type'));
  }
}

/**
 * Downloads an authenticated file (CSV) and hands it to the browser as a download. The bearer token
 * cannot ride on a plain link, so the file is fetched and saved from a blob: URL.
 */
export async function download(path: string, query?: RequestOptions['query']): Promise<string> {
  const res = await authorized('GET', withQuery(path, query), {});
  const name = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') ?? '')?.[1] ?? 'download.csv';
  const blob = await res.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return name;
}

/** An authenticated text resource (e.g. the rejected rows CSV, to show it in the page). */
export async function fetchText(path: string, signal?: AbortSignal): Promise<string> {
  const res = await authorized('GET', path, { signal });
  return res.text();
}

/** Parses RFC 4180 CSV (quoted fields, doubled quotes, CRLF or LF, line breaks inside quotes). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = text.charCodeAt(0) === 0xfeff ? 1 : 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          cell += '"';
          i++;
        } else quoted = false;
      } else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += ch;
  }
  if (cell !== '' || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}
