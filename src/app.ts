import Koa from 'koa';
import { AppError } from './errors.ts';
import { buildOpenApi, OpenApiDocumentAnswer } from './http/openapi.ts';
import { jsonBodies } from './http/json-body.ts';
import { abandonedBody, problems } from './http/problem.ts';
import { cors, forwardedClient, requestContext, securityHeaders } from './http/request-context.ts';
import { ApiRouter, type RouterDeps } from './http/route.ts';
import { serveUi } from './http/static.ts';
import { IDENTITY_PREFIX, registerIdentityRoutes } from './identity/routes.ts';
import { uploadTmpDir } from './ledger/index.ts';
import { LEDGER_PREFIX, registerLedgerRoutes } from './ledger/routes.ts';
import { registerHealthRoutes } from './ops/health.ts';
import { httpObserver } from './ops/metrics.ts';
import { registerMetricsRoute } from './ops/metrics-route.ts';
import { feedsDir } from './tracking/feed-files.ts';
import { registerTrackingRoutes } from './tracking/routes.ts';
import { registerWebhookRoutes, WEBHOOK_DELIVERY } from './webhooks/routes.ts';
import { join } from 'node:path';
import { paths } from './paths.ts';
import { regExpLiteral } from './regexp-literal.ts';
import type { Runtime } from './runtime.ts';
import { VERSION } from './version.ts';

export interface BuiltApp {
  app: Koa;
  /** Every router, for the route-coverage tests that enumerate the stack. */
  routers: ApiRouter[];
}

/**
 * Builds the HTTP application: middleware order and route registration, nothing else (P1).
 * Listening is the caller's business (src/cli/serve.ts, test/helpers.ts).
 */
export function buildApp(rt: Runtime, opts: { webDir?: string; extend?: (app: Koa) => void } = {}): BuiltApp {
  const { config, identity } = rt;
  const deps: RouterDeps = { authenticate: (t) => identity.authenticate(t), reloadActor: (a) => identity.reloadActor(a), access: identity.access, maxJsonBytes: config.maxJsonBytes, jsonParser: rt.jsonParser, loadShedder: rt.loadShedder, checkAnswers: config.checkAnswers };

  const identityApi = new ApiRouter(IDENTITY_PREFIX, deps);
  const authAlias = new ApiRouter(`${config.authPath}/v1`, deps);
  registerIdentityRoutes(identityApi, authAlias, identity, { baseUrl: config.baseUrl, now: () => rt.clock.now() });
  identityApi.add({ method: 'get', path: '/openapi.json', access: 'public', summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1', schema: OpenApiDocumentAnswer } } }, (ctx) => {
    ctx.body = identityDocument;
  });
  // built once, with every route declared: a document that cannot be built (two operations of one
  // id) stops the start instead of failing its GET
  const identityDocument = buildOpenApi({ title: 'contact-ledger identity service', version: VERSION, baseUrl: config.baseUrl, main: identityApi, extra: [{ router: authAlias, serverUrl: config.authServerUrl }], tag: 'identity' });

  const ledgerApi = new ApiRouter(LEDGER_PREFIX, deps);
  registerLedgerRoutes(ledgerApi, rt.ledger, { baseUrl: config.baseUrl, uploadTmpDir: uploadTmpDir(config.dataDir), maxUploadBytes: config.maxUploadBytes, uploadSpace: rt.uploadSpace, now: () => rt.clock.now() });
  registerTrackingRoutes(ledgerApi, rt.tracking, { baseUrl: config.baseUrl, prefix: LEDGER_PREFIX, tmpDir: join(feedsDir(config.dataDir), 'tmp'), maxUploadBytes: config.maxUploadBytes, uploadSpace: rt.uploadSpace });
  registerWebhookRoutes(ledgerApi, rt.webhooks.service, { baseUrl: config.baseUrl, prefix: LEDGER_PREFIX });
  ledgerApi.add({ method: 'get', path: '/openapi.json', access: 'public', summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1', schema: OpenApiDocumentAnswer } } }, (ctx) => {
    ctx.body = ledgerDocument;
  });
  const ledgerDocument = buildOpenApi({ title: 'contact-ledger ledger service', version: VERSION, baseUrl: config.baseUrl, main: ledgerApi, tag: 'ledger', webhooks: { delivery: WEBHOOK_DELIVERY } });

  const ops = new ApiRouter('', deps);
  registerHealthRoutes(ops, rt.readiness, rt.state, rt.degraded);
  registerMetricsRoute(ops, { metrics: rt.metrics, metricsToken: config.metricsToken, authenticate: deps.authenticate, access: identity.access });

  const routers = [identityApi, authAlias, ledgerApi, ops];
  // Only the last `trustProxyHops` X-Forwarded-For entries were written by our own proxies; the
  // ones before them are whatever the client sent (Koa would otherwise take the leftmost).
  const app = new Koa({ proxy: config.trustProxy, maxIpsCount: config.trustProxyHops });
  app.silent = true; // errors are logged once, by problems()…
  // …except those after the answer began (a streamed download that failed half-way): Koa emits them here.
  // An answer of ours (the ledger of a download deleted meanwhile) cuts it off as planned: not a failure to look into.
  app.on('error', (err: unknown, ctx?: Koa.Context) => {
    const requestId = ctx?.state.requestId;
    if (err instanceof AppError && err.status < 500) rt.log.info({ requestId, code: err.code }, `response cut off after it started: ${err.message}`);
    // the client hung up while sending its body: problems() said so once, and the access line has `aborted`
    else if (ctx && abandonedBody(ctx, err)) return;
    else rt.log.error({ err, requestId }, 'response failed after it started');
  });
  if (config.trustProxy) app.use(forwardedClient(rt.log));
  app.use(requestContext(rt.log, httpObserver(rt.metrics)));
  app.use(securityHeaders({ https: Boolean(config.tlsCert), authPath: config.authPath }));
  app.use(cors(config.corsOrigins));
  app.use(jsonBodies());
  app.use(problems(rt.log));
  for (const r of routers) {
    const routes = r.router.routes() as unknown as Koa.Middleware;
    const allowedMethods = r.router.allowedMethods() as unknown as Koa.Middleware;
    const allowed: Koa.Middleware = async (ctx, next) => {
      await allowedMethods(ctx, next);
      const literal = ctx.response.get('Allow') ? r.literalAllow(ctx.path) : undefined;
      if (literal) ctx.set('Allow', literal);
    };
    app.use(under(r.prefix, (ctx, next) => routes(ctx, () => allowed(ctx, next))));
  }
  opts.extend?.(app); // test-only middleware, after every API route
  // the web application (SPEC §9) at /, after every API route; unknown /api/* paths stay problem+json 404s
  app.use(serveUi(opts.webDir ?? paths.web, { reserved: ['/api', config.authPath] }));
  return { app, routers };
}

/**
 * A router's middleware, run only for paths under its prefix: a router matches nothing else, and
 * testing every route of every router on every request adds up. Case-insensitive, like the routes.
 */
function under(prefix: string, mw: Koa.Middleware): Koa.Middleware {
  if (!prefix) return mw;
  const inside = new RegExp(`^${regExpLiteral(prefix)}(?:/|$)`, 'i');
  return (ctx, next) => (inside.test(ctx.path) ? mw(ctx, next) : next());
}
