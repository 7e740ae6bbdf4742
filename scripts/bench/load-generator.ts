// The load generator of npm run bench:load: autocannon, in a process of its own (pinned to its own
// core by load.ts), sending a weighted mix of requests. Reads one JSON argument (a LoadPlan) and
// prints one JSON line (a LoadResult).
//
// Each request picks an entry of the mix at random by weight, then one of its paths (and bodies)
// at random: the mix's shares hold over the run, and every connection walks the whole data.
import { createRequire } from 'node:module';

// autocannon ships no types (and @types/autocannon describes an older major): the one call used here.
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: object) => Promise<unknown>;

export interface MixEntry {
  name: string;
  weight: number;
  method: 'GET' | 'POST';
  paths: string[];
  /** JSON bodies, one picked at random per request (`{n}` in a body becomes a counter: unique values). */
  bodies?: string[];
}

export interface LoadPlan {
  base: string;
  token: string;
  mix: MixEntry[];
  connections: number;
  seconds: number;
  /** Requests per second from all connections (open model); none: as fast as answers come (closed model). */
  rate?: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  total: number;
  p50: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Answers by status code. */
  statuses: Record<string, number>;
}

const plan = JSON.parse(process.argv[2]!) as LoadPlan;
const totalWeight = plan.mix.reduce((s, e) => s + e.weight, 0);
const pick = <T>(a: readonly T[]): T => a[Math.floor(Math.random() * a.length)]!;
let counter = 0;

function choose(): MixEntry {
  let x = Math.random() * totalWeight;
  for (const e of plan.mix) {
    x -= e.weight;
    if (x < 0) return e;
  }
  return plan.mix[plan.mix.length - 1]!;
}

const instance = autocannon({
  url: plan.base,
  connections: plan.connections,
  duration: plan.seconds,
  ...(plan.rate ? { overallRate: plan.rate } : {}),
  headers: { authorization: `Bearer ${plan.token}` },
  requests: [
    {
      setupRequest(req: Record<string, unknown>) {
        const e = choose();
        const body = e.bodies ? pick(e.bodies).replaceAll('{n}', String(++counter)) : undefined;
        return {
          ...req,
          method: e.method,
          path: pick(e.paths),
          headers: { ...(req.headers as Record<string, string>), ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body } : {}),
        };
      },
    },
  ],
});

const r = (await instance) as unknown as {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
};
const result: LoadResult = {
  requestsPerSecond: r.requests.average,
  total: r.requests.total,
  p50: r.latency.p50,
  p99: r.latency.p99,
  max: r.latency.max,
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  statuses: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([k, v]) => [k, v.count])),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
