import { z } from 'zod';
import { documentedAs } from './common-schemas.ts';
import { Problem } from './problem.ts';
import { errorsOfKind, RETRY_AFTER, type ApiRouter, type RouteSpec } from './route.ts';

type JsonSchema = Record<string, unknown>;

/**
 * A zod schema as JSON Schema 2020-12: a request's as it is sent (io input), an answer's as it is
 * sent back (io output). Schemas named with `.meta({ id })` (Contact, Problem…) become
 * components.schemas entries, referenced from every place they occur.
 */
function jsonSchemaOf(s: z.ZodType, io: 'input' | 'output', components: Record<string, unknown>): JsonSchema {
  const defs: Record<string, unknown> = {}; // the named schemas of the documentAs replacements
  const out = z.toJSONSchema(s, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    override: (ctx) => {
      const doc = documentedAs(ctx.zodSchema);
      if (!doc) return;
      const { $schema: _s, $defs: docDefs, ...replacement } = z.toJSONSchema(doc, { target: 'draft-2020-12', io }) as JsonSchema;
      Object.assign(defs, docDefs);
      const description = ctx.jsonSchema.description;
      for (const k of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as JsonSchema)[k];
      Object.assign(ctx.jsonSchema, replacement, description !== undefined && replacement.description === undefined ? { description } : {});
    },
  }) as JsonSchema;
  const { $schema: _ignored, $defs, ...rest } = JSON.parse(JSON.stringify({ ...out, $defs: { ...defs, ...(out.$defs as object) } }).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
  for (const [id, def] of Object.entries($defs as Record<string, unknown>)) components[id] ??= def;
  return rest;
}

/** What GET …/openapi.json answers: an OpenAPI 3.1 document (its own schema is the OpenAPI specification's). */
export const OpenApiDocumentAnswer = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
  components: z.looseObject({ schemas: z.record(z.string(), z.unknown()) }),
});

const PROBLEM_CONTENT = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };

/** Headers that more than one answer carries, as components.headers, referenced where they occur. */
const SHARED_HEADERS = {
  RequestId: { description: "The request's id (the one sent in X-Request-Id when it is valid, else a new one), also in a problem's requestId and in the server's access log line of the request (a request whose head the server could not read has none)", schema: { type: 'string' } },
  RetryAfter: { description: RETRY_AFTER['Retry-After']!.description, schema: { type: 'string' } },
  WwwAuthenticate: { description: 'Bearer error="invalid_token" (RFC 6750 §3)', schema: { type: 'string' } },
  ContentDisposition: { description: 'attachment, with the file name', schema: { type: 'string' } },
};
const header = (name: keyof typeof SHARED_HEADERS) => ({ $ref: `#/components/headers/${name}` });
/** A header a route declares that is one of the shared ones, by its name in answers. */
const SHARED_BY_NAME: Record<string, keyof typeof SHARED_HEADERS> = { 'Retry-After': 'RetryAfter' };
/** Headers of the errors of a kind (errorsOfKind) beside X-Request-Id. */
const ERROR_HEADERS: Record<string, Record<string, unknown>> = { '401': { 'WWW-Authenticate': header('WwwAuthenticate') }, '429': { 'Retry-After': header('RetryAfter') } };

const ERROR_STATUSES: Record<string, string> = {
  '400': 'Malformed request or invalid query parameter',
  '401': 'Missing, invalid or expired access token',
  '403': 'Role or permission missing',
  '404': 'Not found',
  '422': 'Invalid body',
  '429': 'Throttled',
};

/**
 * An operation's id, a name a client generator can make a method of: the method and the path's
 * words in camel case, a parameter as By<Name> (`post /orgs/:orgId/ledgers/:ledgerId/contacts/bulk_delete`
 * → `postOrgsByOrgIdLedgersByLedgerIdContactsBulkDelete`). `path` is the whole path below the
 * document's server, so that an alias under another prefix gets an id of its own.
 */
export function operationId(method: string, path: string): string {
  const words = (text: string) => text.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
  return method + path.split('/').filter(Boolean).map((seg) => (seg.startsWith(':') ? `By${words(seg)}` : words(seg))).join('');
}

/** A multipart/form-data body's JSON Schema: its parts, a file as a string of its media type (OpenAPI 3.1 §4.8.14.3). */
function formSchema(fields: NonNullable<NonNullable<RouteSpec['rawBody']>['fields']>): JsonSchema {
  return {
    type: 'object',
    required: Object.entries(fields).filter(([, f]) => f.required).map(([name]) => name),
    properties: Object.fromEntries(Object.entries(fields).map(([name, f]) => [name, { type: 'string', description: f.description, ...(f.file ? { contentMediaType: f.file } : {}) }])),
  };
}

/** An outgoing request the service makes, for the document's `webhooks` (OpenAPI 3.1 §4.8.1). */
export interface OutgoingRequest {
  summary: string;
  description: string;
  body: z.ZodType;
  headers: Record<string, { description: string; required: boolean }>;
  /** What the receiver's answers mean, by status (`2XX`…). */
  responses: Record<string, string>;
}

function outgoing(o: OutgoingRequest, components: Record<string, unknown>) {
  return {
    post: {
      summary: o.summary,
      description: o.description,
      parameters: Object.entries(o.headers).map(([name, h]) => ({ name, in: 'header', required: h.required, description: h.description, schema: { type: 'string' } })),
      requestBody: { required: true, content: { 'application/json': { schema: jsonSchemaOf(o.body, 'output', components) } } },
      responses: Object.fromEntries(Object.entries(o.responses).map(([status, description]) => [status, { description }])),
    },
  };
}

function operation(r: RouteSpec, tag: string, components: Record<string, unknown>, path: string) {
  const toJsonSchema = (s: z.ZodType) => jsonSchemaOf(s, 'input', components);
  const params: unknown[] = [...r.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
  if (r.query instanceof z.ZodObject) {
    for (const [name, field] of Object.entries(r.query.shape as Record<string, z.ZodType>)) {
      const schema = toJsonSchema(field);
      params.push({ name, in: 'query', required: !field.safeParse(undefined).success, schema, ...(schema.description ? { description: schema.description } : {}) });
    }
  }
  for (const [name, h] of Object.entries(r.headers ?? {})) {
    params.push({ name, in: 'header', required: false, description: h.description, schema: toJsonSchema(h.schema) });
  }
  const responses: Record<string, unknown> = {};
  for (const [status, res] of Object.entries(r.responses)) {
    const download = res.contentType !== undefined && !res.schema;
    responses[status] = {
      description: res.description,
      headers: {
        'X-Request-Id': header('RequestId'),
        ...(download ? { 'Content-Disposition': header('ContentDisposition') } : {}),
        ...Object.fromEntries(
          Object.entries(res.headers ?? {}).map(([name, h]) => [
            name,
            SHARED_BY_NAME[name] && h.description === SHARED_HEADERS[SHARED_BY_NAME[name]].description ? header(SHARED_BY_NAME[name]) : { description: h.description, schema: h.schema ? toJsonSchema(h.schema) : { type: 'string' } },
          ]),
        ),
      },
      ...(res.schema
        ? { content: { [res.contentType ?? 'application/json']: { schema: jsonSchemaOf(res.schema, 'output', components) } } }
        : res.contentType
          ? { content: { [res.contentType]: {} } }
          : Number(status) >= 400
            ? { content: PROBLEM_CONTENT }
            : {}),
    };
  }
  for (const s of errorsOfKind(r).map(String)) responses[s] ??= { description: ERROR_STATUSES[s], headers: { 'X-Request-Id': header('RequestId'), ...ERROR_HEADERS[s] }, content: PROBLEM_CONTENT };
  const access = typeof r.access === 'string' ? r.access : 'org' in r.access ? `${r.access.org} role on the organization` : `installation "${r.access.permission}" permission`;
  const body = r.body
    ? {
        required: true,
        content: Object.fromEntries(
          (r.bodyTypes ?? ['json']).map((t) => [t === 'json' ? 'application/json' : 'application/x-www-form-urlencoded', { schema: toJsonSchema(r.body!) }]),
        ),
      }
    : r.rawBody
      ? { required: true, description: r.rawBody.description, content: Object.fromEntries(r.rawBody.contentTypes.map((t) => [t, t === 'multipart/form-data' && r.rawBody!.fields ? { schema: formSchema(r.rawBody!.fields) } : {}])) }
      : undefined;
  return {
    operationId: operationId(r.method, path),
    tags: [tag],
    summary: r.summary,
    description: `${r.description ? `${r.description}\n\n` : ''}Access: ${access}.`,
    ...(r.access === 'public' ? { security: [] } : {}),
    ...(params.length ? { parameters: params } : {}),
    ...(body ? { requestBody: body } : {}),
    responses,
  };
}

/**
 * Builds the OpenAPI 3.1 document of a service from its route declarations (the same zod schemas
 * that validate requests). `extra` routers (e.g. the auth alias) are documented with their own
 * server URL.
 */
export function buildOpenApi(opts: { title: string; version: string; baseUrl: string; main: ApiRouter; extra?: { router: ApiRouter; serverUrl: string }[]; tag: string; webhooks?: Record<string, OutgoingRequest> }) {
  const paths: Record<string, Record<string, unknown>> = {};
  const components: Record<string, unknown> = {};
  jsonSchemaOf(Problem, 'output', components);
  // Routers outside the main prefix are keyed by their full path with a path-level server.
  const ids = new Set<string>();
  const add = (router: ApiRouter, servers?: { url: string }[]) => {
    for (const r of router.routes) {
      const path = (servers ? router.prefix : '') + r.path;
      const p = path.replace(/:(\w+)/g, '{$1}') || '/';
      paths[p] ??= servers ? { servers } : {};
      const op = operation(r, opts.tag, components, path);
      // ids are unique in a document (OpenAPI 3.1 §4.8.10.1): generators drop or refuse a second one
      if (ids.has(op.operationId)) throw new Error(`two operations of ${opts.title} are ${op.operationId}`);
      ids.add(op.operationId);
      paths[p][r.method] = op;
    }
  };
  add(opts.main);
  for (const x of opts.extra ?? []) add(x.router, [{ url: x.serverUrl }]);
  const webhooks = Object.fromEntries(Object.entries(opts.webhooks ?? {}).map(([name, o]) => [name, outgoing(o, components)]));
  return {
    openapi: '3.1.0',
    info: { title: opts.title, version: opts.version },
    servers: [{ url: `${opts.baseUrl}${opts.main.prefix}` }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      headers: SHARED_HEADERS,
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
    },
    paths,
    ...(opts.webhooks ? { webhooks } : {}),
  };
}
