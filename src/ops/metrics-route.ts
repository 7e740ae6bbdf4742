import { unauthenticated } from '../errors.ts';
import type { Access } from '../identity/access.ts';
import type { Actor } from '../identity/model.ts';
import type { ApiRouter } from '../http/route.ts';
import { metricsTokenMatches, type Metrics } from './metrics.ts';

/**
 * GET /metrics (Prometheus text). Who may read it — least privilege, decided in docs/operations.md:
 * the bearer token METRICS_TOKEN (what a Prometheus scrape job is given, `bearer_token_file`), or
 * an access token of a superuser. Nobody else, and nothing without a token.
 */
export function registerMetricsRoute(r: ApiRouter, d: { metrics: Metrics; metricsToken: string | undefined; authenticate: (token: string) => Promise<Actor>; access: Access }): void {
  r.add(
    {
      method: 'get',
      path: '/metrics',
      // Declared public because it accepts a credential the router does not know (METRICS_TOKEN);
      // the handler enforces "METRICS_TOKEN or superuser" itself.
      access: 'public',
      summary: 'Prometheus metrics (METRICS_TOKEN or a superuser)',
      responses: { 200: { description: 'Prometheus text format' }, 401: { description: 'No or bad token' }, 403: { description: 'Not a superuser' } },
    },
    async (ctx) => {
      const m = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(ctx.get('Authorization'));
      if (!m) throw unauthenticated('A bearer token is required (METRICS_TOKEN or a superuser access token).');
      const token = m[1]!;
      if (!(d.metricsToken && metricsTokenMatches(token, d.metricsToken))) d.access.requireSuperuser(await d.authenticate(token));
      const { contentType, body } = await d.metrics.render();
      ctx.set('Cache-Control', 'no-store');
      ctx.type = contentType;
      ctx.body = body;
    },
  );
}
