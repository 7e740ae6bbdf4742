import { z } from 'zod';
import type { ApiRouter, RouteSpec } from './route.ts';

const PROBLEM = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'message', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    message: { type: 'string' },
    code: { type: 'string' },
    errors: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
    requestId: { type: 'string' },
  },
};

const toJsonSchema = (s: z.ZodType) => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(s, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

const ERROR_STATUSES: Record<string, string> = {
  '400': 'Malformed request or invalid query parameter',
  '401': 'Missing, invalid or expired access token',
  '403': 'Role or permission missing',
  '404': 'Not found',
  '422': 'Invalid body',
  '429': 'Throttled',
};

function operation(r: RouteSpec, tag: string) {
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
    responses[status] = {
      description: res.description,
      ...(res.headers
        ? { headers: Object.fromEntries(Object.entries(res.headers).map(([name, h]) => [name, { description: h.description, schema: h.schema ? toJsonSchema(h.schema) : { type: 'string' } }])) }
        : {}),
      ...(res.schema ? { content: { [res.contentType ?? 'application/json']: { schema: toJsonSchema(res.schema) } } } : res.contentType ? { content: { [res.contentType]: {} } } : {}),
    };
  }
  const errors = r.access === 'public' ? ['400', '422', '429'] : ['400', '401', '403', '404', '422'];
  for (const s of errors) {
    // a token endpoint answers 400 for an invalid body (RFC 6749 §5.2), never 422
    if ((s === '422' && (!r.body || r.oauthErrors)) || responses[s]) continue;
    responses[s] = { description: ERROR_STATUSES[s], content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } };
  }
  const access = typeof r.access === 'string' ? r.access : 'org' in r.access ? `${r.access.org} role on the organization` : `installation "${r.access.permission}" permission`;
  const body = r.body
    ? {
        required: true,
        content: Object.fromEntries(
          (r.bodyTypes ?? ['json']).map((t) => [t === 'json' ? 'application/json' : 'application/x-www-form-urlencoded', { schema: toJsonSchema(r.body!) }]),
        ),
      }
    : r.rawBody
      ? { required: true, description: r.rawBody.description, content: Object.fromEntries(r.rawBody.contentTypes.map((t) => [t, {}])) }
      : undefined;
  return {
    operationId: `${r.method}${r.path.replace(/[:/{}-](\w)/g, (_m, c: string) => c.toUpperCase())}`,
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
export function buildOpenApi(opts: { title: string; version: string; baseUrl: string; main: ApiRouter; extra?: ApiRouter[]; tag: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  // Routers outside the main prefix are keyed by their full path with a path-level server.
  const add = (router: ApiRouter, servers?: { url: string }[]) => {
    for (const r of router.routes) {
      const p = (servers ? router.prefix : '') + (r.path.replace(/:(\w+)/g, '{$1}') || '/');
      paths[p] ??= servers ? { servers } : {};
      paths[p][r.method] = operation(r, opts.tag);
    }
  };
  add(opts.main);
  for (const x of opts.extra ?? []) add(x, [{ url: opts.baseUrl }]);
  return {
    openapi: '3.1.0',
    info: { title: opts.title, version: opts.version },
    servers: [{ url: `${opts.baseUrl}${opts.main.prefix}` }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: { Problem: PROBLEM },
    },
    paths,
  };
}
