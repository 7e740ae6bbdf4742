// The load generator of npm run bench:load, in a process of its own (pinned to its own core by
// load.ts), sending a weighted mix of requests. Reads one JSON argument (a LoadPlan) and prints one
// JSON line (a LoadResult).
//
// Closed model (no rate: each connection sends its next request when the answer came): autocannon.
// Open model (a rate): requests arrive as a Poisson process at that rate, each timed from the moment
// it was due, so that an answer that keeps a client waiting counts (coordinated omission), over up to
// `connections` keep-alive sockets. Not autocannon's overallRate: it gives each connection a budget
// per second, which the connections spend at full speed as the second starts and then idle — a
// closed-model burst at every second, whose queue and event-loop turns say nothing about a steady rate.
//
// Each request picks an entry of the mix at random by weight, then one of its paths (and bodies)
// at random: the mix's shares hold over the run, and every connection walks the whole data.
import http from 'node:http';
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
  /** Requests per second, arriving as a Poisson process (open model); none: each connection as fast as answers come (closed model). */
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

/** The next request of the mix: method, path and body. */
function nextRequest(): { method: string; path: string; body?: string } {
  const e = choose();
  const body = e.bodies ? pick(e.bodies).replaceAll('{n}', String(++counter)) : undefined;
  return { method: e.method, path: pick(e.paths), ...(body ? { body } : {}) };
}

async function closedModel(): Promise<LoadResult> {
  const instance = autocannon({
    url: plan.base,
    connections: plan.connections,
    duration: plan.seconds,
    headers: { authorization: `Bearer ${plan.token}` },
    requests: [
      {
        setupRequest(req: Record<string, unknown>) {
          const { body, ...next } = nextRequest();
          return {
            ...req,
            ...next,
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
  return {
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
}

/** As autocannon: a request unanswered this long is a timeout. */
const TIMEOUT_MS = 10_000;

async function openModel(rate: number): Promise<LoadResult> {
  const url = new URL(plan.base);
  // fifo: every socket stays in use (lifo would leave some idle until the server's keep-alive
  // timeout closes them, and a request sent on one just then fails with ECONNRESET)
  const agent = new http.Agent({ keepAlive: true, maxSockets: plan.connections, scheduling: 'fifo' });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let timeouts = 0;
  const pending = new Set<Promise<void>>();
  const send = (due: number) => {
    const { method, path, body } = nextRequest();
    const done = new Promise<void>((resolve) => {
      const req = http.request(
        { agent, host: url.hostname, port: url.port, method, path, headers: { authorization: `Bearer ${plan.token}`, ...(body ? { 'content-type': 'application/json' } : {}) } },
        (res) => {
          res.resume();
          res.on('end', () => {
            latencies.push(performance.now() - due);
            statuses[String(res.statusCode)] = (statuses[String(res.statusCode)] ?? 0) + 1;
            resolve();
          });
          res.on('error', () => {
            errors++;
            resolve();
          });
        },
      );
      req.setTimeout(TIMEOUT_MS, () => {
        timeouts++;
        req.destroy(new Error('timeout'));
      });
      req.on('error', (err) => {
        if (err.message !== 'timeout') errors++;
        resolve();
      });
      req.end(body);
    });
    pending.add(done);
    void done.then(() => pending.delete(done));
  };
  // Poisson arrivals: exponential gaps with mean 1/rate; every request due by now goes out, then a
  // timer until the next one (timers fire at best every millisecond, so arrivals within one go together).
  const start = performance.now();
  const end = start + plan.seconds * 1000;
  let due = start;
  for (;;) {
    due += (-Math.log(1 - Math.random()) * 1000) / rate;
    if (due >= end) break;
    const wait = due - performance.now();
    if (wait >= 1) await new Promise((r) => setTimeout(r, wait));
    send(due);
  }
  while (pending.size) await Promise.all([...pending]);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => (latencies.length ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!) : NaN);
  const non2xx = Object.entries(statuses).reduce((n, [status, count]) => n + (status.startsWith('2') ? 0 : count), 0);
  return {
    requestsPerSecond: latencies.length / plan.seconds,
    total: latencies.length,
    p50: at(0.5),
    p99: at(0.99),
    max: latencies.length ? Math.round(latencies[latencies.length - 1]!) : NaN,
    non2xx,
    errors,
    timeouts,
    statuses,
  };
}

const result = plan.rate ? await openModel(plan.rate) : await closedModel();
process.stdout.write(`${JSON.stringify(result)}\n`);
