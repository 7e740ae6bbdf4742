import { z } from 'zod';
import { AppError } from '../errors.ts';
import type { ApiRouter } from '../http/route.ts';

/** Named readiness checks; each returns true when its part is working. */
export type ReadinessChecks = Record<string, () => boolean>;

/** The answers of /healthz and /readyz. */
const HealthAnswer = z.strictObject({ status: z.literal('ok') });
const ReadyAnswer = z.strictObject({
  status: z.enum(['ready', 'degraded']).meta({ description: 'degraded: a check that does not stop reads failed (a full disk)' }),
  checks: z.record(z.string(), z.boolean()),
});

/**
 * GET /healthz (the process answers) and GET /readyz (database open, migrations applied,
 * scheduler running — SPEC §8). Both are public and cheap, and ignore their query string (a
 * monitor's cache-buster must not fail a probe). `degraded` checks do not make the
 * instance unready (reads still work): a failing one turns the answer's status into "degraded"
 * (RELIABILITY.md D3: a full disk).
 */
export function registerHealthRoutes(r: ApiRouter, checks: ReadinessChecks, state: { shuttingDown: boolean }, degraded: ReadinessChecks = {}): void {
  r.add({ method: 'get', path: '/healthz', access: 'public', ignoresQuery: true, summary: 'Liveness', responses: { 200: { description: 'Alive', schema: HealthAnswer } } }, (ctx) => {
    ctx.body = { status: 'ok' };
  });
  r.add({ method: 'get', path: '/readyz', access: 'public', ignoresQuery: true, summary: 'Readiness', responses: { 200: { description: 'Ready', schema: ReadyAnswer }, 503: { description: 'Not ready' } } }, (ctx) => {
    const results: Record<string, boolean> = { acceptingRequests: !state.shuttingDown };
    for (const [name, check] of Object.entries(checks)) {
      try {
        results[name] = check();
      } catch {
        results[name] = false;
      }
    }
    const failing = Object.keys(results).filter((k) => !results[k]);
    if (failing.length) {
      throw new AppError(503, 'not_ready', `Not ready: ${failing.join(', ')}.`, { extra: { checks: results }, headers: { 'Retry-After': '5' } });
    }
    let ok = true;
    for (const [name, check] of Object.entries(degraded)) {
      results[name] = check();
      ok &&= results[name];
    }
    ctx.body = { status: ok ? 'ready' : 'degraded', checks: results };
  });
}
