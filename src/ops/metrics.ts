import { timingSafeEqual, createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import type { RequestObserver } from '../http/request-context.ts';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type CounterConfiguration, type GaugeConfiguration, type HistogramConfiguration } from 'prom-client';

/**
 * Prometheus metrics (SPEC §8). One registry per runtime; modules register their own metrics
 * through `MetricsRegistry` (names `contact_ledger_<area>_…`), so nothing here knows them all.
 * Process-wide metrics (event-loop delay, memory, CPU, file descriptors, GC) live in one
 * process-global registry, because they describe the process, not a runtime.
 */

/**
 * A counter by one label whose every value is a series from the first scrape, at 0 until counted:
 * a series born with its first event hides that event from `rate()` and `increase()`, and an alert
 * on a series that is not there yet cannot tell "none" from "not measured".
 */
export function everySeries<L extends string>(counter: Counter<L>, label: L, values: readonly string[]): Counter<L> {
  for (const value of values) counter.inc({ [label]: value } as Partial<Record<L, string>>, 0);
  return counter;
}

/** What a module gets to register its metrics with (prom-client's own types). */
export interface MetricsRegistry {
  counter<L extends string>(c: Omit<CounterConfiguration<L>, 'registers'>): Counter<L>;
  gauge<L extends string>(c: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L>;
  histogram<L extends string>(c: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L>;
}

export interface Metrics extends MetricsRegistry {
  registry: Registry;
  /** Counts a write that did not get the database's lock in time (a 503 answer, a job or task to retry). */
  countBusy(where: 'request' | 'job' | 'task'): void;
  /**
   * Counts and times one HTTP request; `route` is the declared route, never the raw path, and
   * `status` what the client got (`none` when the connection closed before any answer).
   */
  observeRequest(method: string, route: string, status: number | 'none', seconds: number): void;
  /** The exposition text of this runtime's and the process's metrics. */
  render(): Promise<{ contentType: string; body: string }>;
}

let processRegistry: Registry | undefined;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    // Event-loop delay is sampled every 10 ms (perf_hooks.monitorEventLoopDelay).
    collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: 10 });
  }
  return processRegistry;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  const reg: MetricsRegistry = {
    counter: (c) => new Counter({ ...c, registers: [registry] }),
    gauge: (c) => new Gauge({ ...c, registers: [registry] }),
    histogram: (c) => new Histogram({ ...c, registers: [registry] }),
  };
  const requests = reg.counter({ name: 'contact_ledger_http_requests_total', help: 'HTTP requests by declared route and status code.', labelNames: ['method', 'route', 'status'] });
  const duration = reg.histogram({
    name: 'contact_ledger_http_request_duration_seconds',
    help: 'HTTP request latency (until the response ended) by declared route.',
    labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  });
  const busy = everySeries(
    reg.counter({
      name: 'contact_ledger_sqlite_busy_total',
      help: 'Writes that did not get the database lock in time (SQLITE_BUSY): requests answered 503, jobs and periodic tasks retried.',
      labelNames: ['where'],
    }),
    'where',
    ['request', 'job', 'task'],
  );
  return {
    ...reg,
    registry,
    countBusy: (where) => busy.inc({ where }),
    observeRequest(method, route, status, seconds) {
      requests.inc({ method, route, status: String(status) });
      duration.observe({ method, route }, seconds);
    },
    async render() {
      const own = await registry.metrics();
      const proc = await processMetrics().metrics();
      return { contentType: registry.contentType, body: `${own}\n${proc}` };
    },
  };
}

/**
 * Counts every request when its response ends (given to requestContext, which times it). Requests
 * that matched no declared route share the label `unmatched`, so scanners probing random paths
 * cannot blow up the number of series.
 */
export function httpObserver(metrics: Metrics): RequestObserver {
  return (ctx, seconds, status) => {
    const routeName = ctx.state.routeName as string | undefined;
    // routeName is "GET /api/…/:param"; the method is its own label.
    const route = routeName ? routeName.slice(routeName.indexOf(' ') + 1) : 'unmatched';
    metrics.observeRequest(ctx.method, route, status ?? 'none', seconds);
    if (ctx.state.problemCode === 'database_busy') metrics.countBusy('request'); // set by problems()
  };
}

/** The database file and its -wal, in bytes, read at each scrape (RELIABILITY.md L0: the -wal stays bounded). */
export function registerDatabaseMetrics(metrics: MetricsRegistry, dbFile: string): void {
  const size = (path: string) => {
    try {
      return statSync(path).size;
    } catch {
      return 0; // no -wal between a TRUNCATE checkpoint and the next write
    }
  };
  metrics.gauge({
    name: 'contact_ledger_database_bytes',
    help: 'Size of the database file (file="database") and of its write-ahead log (file="wal").',
    labelNames: ['file'],
    collect() {
      this.set({ file: 'database' }, size(dbFile));
      this.set({ file: 'wal' }, size(`${dbFile}-wal`));
    },
  });
}

/** Compares a presented bearer token with METRICS_TOKEN in constant time (digests of equal length). */
export function metricsTokenMatches(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Webhook delivery attempts (src/webhooks/index.ts counts each recorded attempt). */
export function registerWebhookMetrics(reg: MetricsRegistry) {
  return {
    deliveries: everySeries(
      reg.counter({ name: 'contact_ledger_webhook_deliveries_total', help: 'Webhook delivery attempts by outcome (delivered, retry, failed), and deliveries dropped unsent because their contact or ledger was deleted (dropped).', labelNames: ['outcome'] }),
      'outcome',
      ['delivered', 'retry', 'failed', 'dropped'],
    ),
  };
}
