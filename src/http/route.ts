import type Koa from 'koa';
import { Router, type Layer } from '@koa/router';
import { z } from 'zod';
import { AppError, badRequest, invalid, methodNotAllowed, unauthenticated, unsupportedMediaType, type FieldError } from '../errors.ts';
import { exactIntegerText, parseJsonExact } from '../exact-json.ts';
import type { Access } from '../identity/access.ts';
import type { Actor, Caller, Permission, RequestMeta, Role } from '../identity/model.ts';
import { decodeFormComponent, decodeUtf8, hasBody, parseFormBody, parseJsonBody, readBody } from './request-body.ts';
import { OFF_THREAD_BYTES, type JsonParserThread } from './json-parser-thread.ts';
import { BULK_BODY_BYTES, shedLargeBodies, type LoadShedder } from './load-shedding.ts';
// also configures zod's default messages for every schema (src/http/schema-messages.ts)
import { kindOf } from './schema-messages.ts';
import { toAppError } from './problem.ts';

/**
 * Routes are declared, not just registered: one declaration gives the guard, the request
 * validation and the OpenAPI operation (P2, P4), so the document cannot drift from the code.
 */

export type AccessRule = 'public' | 'authenticated' | 'user' | 'superuser' | { org: Role } | { permission: Permission };
export type BodyType = 'json' | 'form';
type Schema = z.ZodType;

export interface ResponseSpec {
  description: string;
  /**
   * The answer's body (JSON unless `contentType` says otherwise), in the OpenAPI document as its
   * content; with `checkAnswers` on, every JSON answer of this status is checked against it.
   */
  schema?: Schema;
  /** The media type of a body that is not JSON (a CSV or gzip download). */
  contentType?: string;
  /** Headers of this answer (documented in the OpenAPI response). */
  headers?: Record<string, { description: string; schema?: Schema }>;
}

/** The header of an answer that says when to come back. */
export const RETRY_AFTER: NonNullable<ResponseSpec['headers']> = { 'Retry-After': { description: 'Seconds to wait before sending the same request again' } };

/**
 * The 503 of a read with a "since" (the list, its count, the download, the change feed), which
 * first lets the write in flight end (docs/decisions.md, "Polling for changes").
 */
export const SINCE_READ_503: ResponseSpec = {
  description: 'A write in flight did not end within 5 s, and the answer could lack its changes; retry after Retry-After seconds',
  headers: RETRY_AFTER,
};

/**
 * The answers every route of a kind can give, which its declaration need not repeat: 413 and 415
 * for a body (read by the body parser or the route, or by refuseBody to refuse it), 503 with Retry-After for a write (the
 * database busy; and a bulk route's large body while the server is overloaded). A route's own
 * declaration of one of them is kept.
 */
function declareCommonAnswers(s: RouteSpec): void {
  // a 201 says where what it created lives (every one of them sets Location)
  const created = s.responses[201];
  if (created && !created.headers?.Location) created.headers = { ...created.headers, Location: { description: 'The URL of what was created' } };
  // a route without a body reads one it is sent, up to NO_BODY_LIMIT, to refuse it (refuseBody)
  s.responses[413] ??= { description: s.body || s.rawBody ? (s.tooLargeMessage ?? 'The request body is over the size limit') : `A body, which this route does not take, of more than ${NO_BODY_LIMIT / 1024} KiB` };
  s.responses[415] ??= { description: 'The body is of a media type, charset or Content-Encoding the route does not accept' };
  const busy = [
    ...(s.bulk ? [`the server is overloaded (a body of ${BULK_BODY_BYTES / 1024} KiB or more is refused before it is read)`] : []),
    ...(s.method !== 'get' ? ['the database is busy (another write held it for 5 s; nothing was written)'] : []),
  ];
  if (busy.length) s.responses[503] ??= { description: `${busy.join(', or ').replace(/^./, (c) => c.toUpperCase())}; retry after Retry-After seconds`, headers: RETRY_AFTER };
}

/**
 * The errors every route of an access kind can answer, which the OpenAPI document adds to its own
 * answers: a public route 400, 422 and 429 (throttling), one behind a token 400, 401, 403, 404 and
 * 422 — a body that does not validate, an upload the route reads itself (a preview's empty file:
 * a tester found it undeclared), or a body sent to a route that takes none. Never 422 for a token
 * endpoint, which answers 400 for an invalid body (RFC 6749 §5.2).
 */
export function errorsOfKind(s: RouteSpec): number[] {
  const kind = s.access === 'public' ? [400, 422, 429] : [400, 401, 403, 404, 422];
  return s.oauthErrors ? kind.filter((status) => status !== 422) : kind;
}

/**
 * Under the tests (checkAnswers): an error answer of a status the route's document does not
 * declare is a 500 naming it, so that the OpenAPI document cannot leave out what the route
 * answers. 405, 499 (nobody reads it) and 5xx other than 503 (a fault, or a full disk, which any
 * write may meet) are not looked at.
 */
export function checkErrorStatus(err: unknown, s: RouteSpec, name: string): void {
  const status = toAppError(err).status;
  // 405: a method the path does not take, which any path answers (with Allow)
  if (status === 405 || status === 499 || (status >= 500 && status !== 503)) return;
  if (s.responses[status] || errorsOfKind(s).includes(status)) return;
  throw new AppError(500, 'answer_schema_mismatch', `answer check: ${name} answered ${status} (${(err as Error).message}), which its OpenAPI operation does not declare`);
}

/**
 * A request header a route reads. Optional: an absent or empty header is no value. A present one
 * is validated by `schema` before the handler runs (400 with `code`, naming the header) and its
 * parsed value handed over in `input.headers`; the OpenAPI document lists it as a header parameter.
 */
export interface HeaderSpec {
  schema: Schema;
  description: string;
  /** The error code of a malformed value. */
  code: string;
}

export interface RouteSpec<B extends Schema | undefined = Schema | undefined, Q extends Schema | undefined = Schema | undefined, A extends AccessRule = AccessRule> {
  method: 'get' | 'post' | 'patch' | 'put' | 'delete';
  /** Path below the router prefix, koa-router syntax (`/orgs/:orgId`). */
  path: string;
  summary: string;
  description?: string;
  access: A;
  body?: B;
  /** Accepted request body media types (default json). */
  bodyTypes?: BodyType[];
  query?: Q;
  /** Request headers the route reads (see HeaderSpec), by their canonical name (`Idempotency-Key`). */
  headers?: Record<string, HeaderSpec>;
  responses: Record<number, ResponseSpec>;
  /** Detail of the 413 answer when the body is over the limit. */
  tooLargeMessage?: string;
  /**
   * JSON integers beyond 2^53−1 keep their digits (src/exact-json.ts) instead of becoming the
   * nearest double: for bodies kept as submitted (an API batch's rejected rows come back as sent).
   */
  exactIntegers?: boolean;
  /** Custom body handling (e.g. multipart upload): the route parses the body itself. */
  rawBody?: {
    contentTypes: string[];
    description: string;
    /** The fields of a multipart/form-data body, as its OpenAPI schema names them (`file`: a file part). */
    fields?: Record<string, { description: string; file?: string; required?: boolean }>;
  };
  /**
   * The route takes bulk work (a batch, an upload, a feed): while the server is overloaded, a large
   * body is answered 503 with Retry-After before it is read (src/http/load-shedding.ts).
   */
  bulk?: boolean;
  /**
   * The query string is not read at all (no 400 for a parameter the route does not know): for the
   * probes, which load balancers and monitors call with cache-busting parameters of their own.
   */
  ignoresQuery?: boolean;
  /**
   * The route is an OAuth 2.0 token endpoint (RFC 6749 §5.2): every error it answers — from the
   * body parser, the validation or the handler — passes through this function, which gives it the
   * `error` and `error_description` members OAuth clients read (and 400 where other routes answer
   * 422). The body stays problem+json.
   */
  oauthErrors?: (e: AppError, ctx: Koa.Context) => AppError;
}

type Infer<S> = S extends Schema ? z.output<S> : undefined;

export interface RouteInput<B, Q, A> {
  body: Infer<B>;
  query: Infer<Q>;
  params: Record<string, string>;
  /** Parsed values of the declared request headers that were sent. */
  headers: Record<string, unknown>;
  meta: RequestMeta;
  caller: A extends 'public' ? undefined : Caller;
  /**
   * Reads the caller's session, account and role again and authorizes the request again, for a
   * handler that has just received a long body (an upload): a member removed or a service account
   * deleted while it arrived is refused before anything is written (RELIABILITY.md Z3:
   * authorization changes apply at once). The access token's own expiry is not checked again (it
   * was valid when the request began); a session that ended meanwhile is refused.
   */
  recheckAccess(): Promise<void>;
}

export type Handler<B, Q, A> = (ctx: Koa.Context, input: RouteInput<B, Q, A>) => unknown;

export interface RouterDeps {
  /** Verifies a bearer token and returns the current actor (401 otherwise). */
  authenticate(token: string): Promise<Actor>;
  /** The same actor read again from the database, later in the same request (401 when gone or revoked). */
  reloadActor(actor: Actor): Actor;
  access: Access;
  maxJsonBytes: number;
  /** Where bodies of OFF_THREAD_BYTES and more are parsed (without one, every body is parsed in place). */
  jsonParser?: JsonParserThread;
  /** Tells when bulk routes refuse large bodies (without one, never). */
  loadShedder?: Pick<LoadShedder, 'overloaded' | 'refused'>;
  /**
   * Checks every JSON answer against the schema its route declares for the status (checkAnswer):
   * on under the tests (CONTACT_LEDGER_CHECK_ANSWERS), off in production.
   */
  checkAnswers?: boolean;
}

/**
 * Checks a route's JSON answer against the schema declared for its status, so that the OpenAPI
 * document cannot drift from what the handlers send: a 2xx JSON answer without a declared schema,
 * or one that does not match it, is a 500 `answer_schema_mismatch` naming the zod issues, in the
 * error log and (the check being on under the tests only) in the answer's detail, so that the test
 * that met it shows why. Answers that are not JSON (streams, CSV, gzip) and error answers
 * (problem+json, written by problems()) are not looked at here.
 */
export function checkAnswer(ctx: Koa.Context, spec: RouteSpec, name: string): void {
  const body: unknown = ctx.body;
  if (body === null || typeof body !== 'object') return;
  const proto = Object.getPrototypeOf(body) as unknown;
  if (proto !== Object.prototype && proto !== null && !Array.isArray(body)) return; // streams, buffers
  const status = ctx.status;
  const declared = spec.responses[status];
  if (!declared?.schema) {
    if (status >= 200 && status < 300) throw new AppError(500, 'answer_schema_mismatch', `answer check: ${name} answered ${status} with a JSON body, but declares no schema for a ${status} answer`);
    return;
  }
  const parsed = declared.schema.safeParse(body);
  if (!parsed.success) {
    throw new AppError(500, 'answer_schema_mismatch', `answer check: the ${status} answer of ${name} does not match its declared schema: ${JSON.stringify(parsed.error.issues)}`);
  }
}

/**
 * Turns zod issues into `{path, message}` items (unknown keys become one item each), one per path:
 * zod goes on checking a value after its first failed check, so `""` against "not empty" and a
 * pattern failed both, and the second said nothing the first had not. `input` is the value
 * validated: a body that is valid JSON but not an object is told so plainly.
 */
export function fieldErrors(error: z.ZodError, root: string, input?: unknown): FieldError[] {
  const out = new Map<string, string>();
  const add = (path: string, message: string) => out.has(path) || out.set(path, message);
  for (const issue of error.issues) {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'invalid_type' && !base && issue.expected === 'object') {
      add(root, `must be a JSON object, not ${kindOf(input)}`);
    } else if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add(base ? `${base}.${key}` : key, `is not a known ${root === 'query' ? 'parameter' : 'field'}`);
    } else {
      add(base || root, issue.message);
    }
  }
  const errors = [...out].map(([path, message]) => ({ path, message }));
  // the first MAX_FIELD_ERRORS, and a last item saying how many more (a body of 460,000 unknown
  // keys was answered with as many items, 22 MB)
  return errors.length <= MAX_FIELD_ERRORS ? errors : [...errors.slice(0, MAX_FIELD_ERRORS), { path: root, message: `and ${errors.length - MAX_FIELD_ERRORS} more errors` }];
}

/** The most items a 400/422 answer's `errors` lists. */
export const MAX_FIELD_ERRORS = 100;

const summarize = (errors: FieldError[]) =>
  errors
    .slice(0, 5)
    .map((e) => `${e.path}: ${e.message}`)
    .join('; ') + (errors.length > 5 ? `; and ${errors.length - 5} more` : '');

/**
 * The query's parameters whose name or value, percent-decoded, is not UTF-8 (`%FF`, `%C3%28`).
 * Node's parser puts U+FFFD in their place, so a filter would quietly look for text the client
 * never sent; they are refused instead, named as far as they can be read.
 */
function malformedParameters(query: string): string[] {
  const out: string[] = [];
  for (const pair of query ? query.split('&') : []) {
    const eq = pair.indexOf('=');
    const name = decodeFormComponent(eq < 0 ? pair : pair.slice(0, eq));
    if (name === undefined) out.push(eq < 0 ? pair : pair.slice(0, eq));
    else if (eq >= 0 && decodeFormComponent(pair.slice(eq + 1)) === undefined) out.push(name);
  }
  return out;
}

/** Validates the query string: no repeated parameters, no unknown ones, typed values (400). */
export function parseQuery<Q extends Schema | undefined>(ctx: Koa.Context, schema: Q): Infer<Q> {
  const malformed = malformedParameters(ctx.querystring);
  if (malformed.length) {
    const errors = malformed.map((k) => ({ path: k, message: 'is not UTF-8 once percent-decoded; send the text encoded as UTF-8' }));
    throw badRequest('invalid_parameter', `Invalid query: ${summarize(errors)}.`, errors);
  }
  const raw = ctx.query;
  const repeated = Object.keys(raw).filter((k) => Array.isArray(raw[k]));
  if (repeated.length) {
    const errors = repeated.map((k) => ({ path: k, message: 'is given more than once' }));
    throw badRequest('invalid_parameter', `Invalid query: ${summarize(errors)}.`, errors);
  }
  if (!schema) {
    const keys = Object.keys(raw);
    if (keys.length) {
      const errors = keys.map((k) => ({ path: k, message: 'is not a known parameter' }));
      throw badRequest('invalid_parameter', `Invalid query: ${summarize(errors)}.`, errors);
    }
    return undefined as Infer<Q>;
  }
  const parsed = schema.safeParse({ ...raw });
  if (!parsed.success) {
    const errors = fieldErrors(parsed.error, 'query');
    throw badRequest('invalid_parameter', `Invalid query: ${summarize(errors)}.`, errors);
  }
  return parsed.data as Infer<Q>;
}

/** Validates the declared request headers that were sent (400 with the header's code). */
export function parseHeaders(ctx: Koa.Context, specs: Record<string, HeaderSpec> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, h] of Object.entries(specs ?? {})) {
    // a header sent empty is a value the schema judges, not a header left out
    if (ctx.headers[name.toLowerCase()] === undefined) continue;
    const raw = ctx.get(name);
    const parsed = h.schema.safeParse(raw);
    if (!parsed.success) {
      const message = parsed.error.issues[0]?.message ?? 'is not valid';
      throw badRequest(h.code, `${name} ${message}.`, [{ path: name, message }]);
    }
    out[name] = parsed.data;
  }
  return out;
}

/** Validates a parsed body against its schema (422 naming each bad field). */
export function parseBody<B extends Schema>(body: unknown, schema: B): z.output<B> {
  const parsed = schema.safeParse(body === undefined ? {} : body);
  if (!parsed.success) {
    const errors = fieldErrors(parsed.error, 'body', body);
    // no body (or a blank one) where one is needed is a malformed request, not a bad field of one
    if (body === undefined) throw badRequest('malformed_body', `The request body is empty; send a JSON object (${summarize(errors)}).`, errors);
    throw invalid(`Invalid request body: ${summarize(errors)}.`, errors);
  }
  return parsed.data;
}

const MEDIA_TYPES: Record<BodyType, string> = { json: 'application/json', form: 'application/x-www-form-urlencoded' };
const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Whether a body declared in `charset` (the Content-Type's, '' when none) is read as it was meant:
 * UTF-8, or none said. US-ASCII is UTF-8 too: a body so declared is read, and checked, as UTF-8.
 * Another charset is refused (415), never misread.
 */
export const readableAsUtf8 = (charset: string): boolean => !charset || /^(?:utf-?8|us-ascii|ascii)$/i.test(charset);

/**
 * Reads a JSON or form body into `ctx.request.body` (src/http/request-body.ts: strict UTF-8, the
 * size limit, Content-Encoding). No body, or a blank one, leaves it undefined; the schema then sees
 * `{}`, and a schema that needs more answers 400 (parseBody).
 */
function bodyParser(spec: RouteSpec, maxJsonBytes: number, jsonParser: JsonParserThread | undefined): Koa.Middleware {
  const types = spec.bodyTypes ?? ['json'];
  const accepted = types.map((t) => MEDIA_TYPES[t]).join(' or ');
  const tooLargeMessage = spec.tooLargeMessage ?? `The request body is larger than ${maxJsonBytes} bytes.`;
  return async (ctx, next) => {
    if (!PARSED_METHODS.has(ctx.method) || !hasBody(ctx)) return next();
    const type = ctx.is(types.map((t) => MEDIA_TYPES[t]));
    if (!type) throw unsupportedMediaType(`Send the body as ${accepted}, not ${ctx.get('Content-Type') || 'without a Content-Type'}.`);
    // bodies are read as UTF-8 only (RFC 8259 §8.1); another charset is refused, not misread
    const charset = ctx.request.charset;
    if (!readableAsUtf8(charset)) throw unsupportedMediaType(`Send the body in UTF-8; charset=${charset} is not supported.`);
    const form = type === MEDIA_TYPES.form;
    const bytes = await readBody(ctx, form ? FORM_LIMIT : maxJsonBytes, form ? `The form body is larger than ${FORM_LIMIT} bytes.` : tooLargeMessage);
    const parse = (text: string) => parseJsonBody(text, spec.exactIntegers ? exactBody : JSON.parse);
    let body: unknown;
    if (form) body = parseFormBody(decodeUtf8(bytes));
    else if (jsonParser && bytes.length >= OFF_THREAD_BYTES) {
      const parsed = await jsonParser.parse(bytes, spec.exactIntegers ?? false);
      body = 'value' in parsed ? parsed.value : parse(parsed.text);
    } else body = parse(decodeUtf8(bytes));
    (ctx.request as { body?: unknown }).body = body;
    await next();
  };
}

/** What a route that takes no body answers to one. */
const NO_BODY = 'This request takes no body; send none (an empty JSON object {} is accepted too).';

/**
 * A route that takes no body refuses one rather than ignore it: a client that sends settings to
 * `…/rotate` or `…/test` believes they were applied. An empty object (what some clients send by
 * default) or whitespace counts as none.
 */
function refuseBody(): Koa.Middleware {
  return async (ctx, next) => {
    // a GET too: `GET …/contacts` with a JSON filter in its body listed everything unfiltered
    if ((PARSED_METHODS.has(ctx.method) || ctx.method === 'GET') && hasBody(ctx)) {
      const text = decodeUtf8(await readBody(ctx, NO_BODY_LIMIT, NO_BODY));
      if (!/^[\x20\x09\x0a\x0d]*(?:\{[\x20\x09\x0a\x0d]*\}[\x20\x09\x0a\x0d]*)?$/.test(text)) throw invalid(NO_BODY, [{ path: 'body', message: 'is not taken by this request' }]);
    }
    await next();
  };
}

/** The most a route that takes no body reads of one before refusing it (413). */
const NO_BODY_LIMIT = 4096;

/** parseJsonExact for a whole body, except that a body that is one number stays a number (a schema wants an object). */
function exactBody(text: string): unknown {
  const value = parseJsonExact(text);
  return exactIntegerText(value) === undefined ? value : (JSON.parse(text) as unknown);
}

const allowOf = (layers: Layer[]): string => [...new Set(layers.flatMap((l) => l.methods))].join(', ');

/** The largest form body (sign-in forms only). */
const FORM_LIMIT = 65_536;

/** A service's routes under one prefix, and the declarations the OpenAPI document is built from. */
export class ApiRouter {
  readonly prefix: string;
  readonly router: Router;
  readonly routes: RouteSpec[] = [];
  private readonly deps: RouterDeps;
  /** Per route with parameters, the routes with a literal segment in a parameter's place (below). */
  private readonly literalSiblings = new Map<string, Layer[]>();

  constructor(prefix: string, deps: RouterDeps) {
    this.prefix = prefix;
    this.deps = deps;
    this.router = new Router({ prefix });
  }

  /** Declares a route: authenticate → authorize → parse and validate → handler. */
  add<B extends Schema | undefined = undefined, Q extends Schema | undefined = undefined, A extends AccessRule = AccessRule>(
    spec: RouteSpec<B, Q, A>,
    handler: Handler<B, Q, A>,
  ): this {
    const s = spec as RouteSpec;
    declareCommonAnswers(s);
    this.routes.push(s);
    const chain: Koa.Middleware[] = [];
    const name = `${s.method.toUpperCase()} ${this.prefix}${s.path}`;
    const params = s.path.split('/').filter((seg) => seg.startsWith(':')).length;
    if (this.deps.checkAnswers) {
      chain.push(async (_ctx, next) => {
        try {
          await next();
        } catch (err) {
          checkErrorStatus(err, s, name);
          throw err;
        }
      });
    }
    if (s.oauthErrors) {
      const map = s.oauthErrors;
      chain.push(async (ctx, next) => {
        try {
          await next();
        } catch (err) {
          throw map(toAppError(err), ctx);
        }
      });
    }
    chain.push(async (ctx, next) => {
      if (params) this.refuseLiteralPath(ctx, name);
      ctx.state.routeName = name;
      ctx.state.meta = { requestId: ctx.state.requestId as string, ip: ctx.ip } satisfies RequestMeta;
      if (s.access !== 'public') ctx.state.caller = await this.authorize(ctx, s.access);
      await next();
    });
    if (s.bulk) chain.push(shedLargeBodies(this.deps.loadShedder));
    if (s.body) chain.push(bodyParser(s, this.deps.maxJsonBytes, this.deps.jsonParser));
    else if (!s.rawBody) chain.push(refuseBody());
    // Access checked again once a body is in — a JSON body, or the `{}` a route without one still
    // reads: its sender may have lost access while it arrived (a member removed, an account
    // disabled, a service account deleted — minutes, for a slow client), and what it asks for would
    // otherwise be done in their name (RELIABILITY.md Z3). Uploads check again themselves, once
    // their file is in (recheckAccess).
    if (!s.rawBody && s.access !== 'public') {
      const rule = s.access;
      chain.push(async (ctx, next) => {
        if (hasBody(ctx)) this.recheck(ctx, rule);
        await next();
      });
    }
    chain.push(async (ctx) => {
      const input = {
        headers: parseHeaders(ctx, s.headers),
        query: s.ignoresQuery ? undefined : parseQuery(ctx, s.query),
        body: s.body ? parseBody(ctx.request.body, s.body) : undefined,
        params: ctx.params as Record<string, string>,
        meta: ctx.state.meta as RequestMeta,
        caller: ctx.state.caller as Caller | undefined,
        recheckAccess: async () => {
          if (s.access !== 'public') this.recheck(ctx, s.access);
        },
      };
      await handler(ctx, input as RouteInput<B, Q, A>);
      if (this.deps.checkAnswers) checkAnswer(ctx, s, name);
    });
    this.router.register(s.path, [s.method.toUpperCase()], chain as never, { name });
    return this;
  }

  /**
   * `…/imports/:importId` also matches `…/imports/preview`, a path of its own that takes POST
   * only: a GET there would otherwise be read as an import called "preview" and answer 404. A
   * path that a route names literally belongs to that route, so a method it does not take is a
   * 405 with its Allow, as for any other path.
   */
  private refuseLiteralPath(ctx: Koa.Context, name: string): void {
    let siblings = this.literalSiblings.get(name);
    if (!siblings) {
      const own = this.router.stack.find((l) => l.name === name)!;
      const segments = (l: Layer) => String(l.path).toLowerCase().split('/');
      const mine = segments(own);
      siblings = this.router.stack.filter((l) => {
        const theirs = segments(l);
        return l !== own && theirs.length === mine.length && l.paramNames.length < own.paramNames.length && mine.every((seg, i) => seg.startsWith(':') || seg === theirs[i]);
      });
      this.literalSiblings.set(name, siblings);
    }
    const owners = siblings.filter((l) => l.match(ctx.path));
    if (owners.length && !owners.some((l) => l.methods.includes(ctx.method))) throw methodNotAllowed(ctx.method, ctx.path, allowOf(owners));
  }

  /**
   * The Allow of a path that a route names literally (`…/contacts/download`): its own methods.
   * The router's 405 and OPTIONS answers list every route matching the path, which adds those of
   * the routes with a parameter in its place (`…/contacts/:contactId`), refused there (above).
   * Undefined for any other path.
   */
  literalAllow(path: string): string | undefined {
    const matching = this.router.stack.filter((l) => l.methods.length && l.match(path));
    const fewest = Math.min(...matching.map((l) => l.paramNames.length));
    const owners = matching.filter((l) => l.paramNames.length === fewest);
    return owners.length < matching.length ? allowOf(owners) : undefined;
  }

  private async authorize(ctx: Koa.Context, rule: Exclude<AccessRule, 'public'>): Promise<Caller> {
    const header = ctx.get('Authorization');
    const m = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
    if (!m) throw unauthenticated(header ? 'The Authorization header must be "Bearer <accessToken>".' : 'A bearer access token is required (Authorization: Bearer <accessToken>).');
    const actor = await this.deps.authenticate(m[1]!);
    const caller: Caller = { actor, requestId: ctx.state.requestId as string, ip: ctx.ip };
    ctx.state.caller = caller;
    this.check(ctx, rule, actor);
    return caller;
  }

  /**
   * Checks the caller's access again with its actor as it is now (401 when its session, account or
   * service account is gone or revoked, 403 when it lost the role); the request goes on as that actor.
   */
  private recheck(ctx: Koa.Context, rule: Exclude<AccessRule, 'public'>): void {
    const caller = ctx.state.caller as Caller | undefined;
    if (!caller) return;
    const actor = this.deps.reloadActor(caller.actor);
    ctx.state.caller = { ...caller, actor };
    this.check(ctx, rule, actor);
  }

  /** Whether the actor may use the route (403 otherwise). */
  private check(ctx: Koa.Context, rule: Exclude<AccessRule, 'public'>, actor: Actor): void {
    const access = this.deps.access;
    if (rule === 'authenticated') return;
    if (rule === 'user') access.requireUser(actor);
    else if (rule === 'superuser') access.requireSuperuser(actor);
    else if ('org' in rule) {
      const orgId = (ctx.params as Record<string, string>).orgId;
      if (!orgId) throw new AppError(500, 'internal_error', `route ${ctx.path} declares an org role without :orgId`);
      access.requireOrgRole(actor, orgId, rule.org);
    } else access.requirePermission(actor, rule.permission);
  }
}
