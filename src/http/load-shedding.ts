import type Koa from 'koa';
import { AppError } from '../errors.ts';
import type { MetricsRegistry } from '../ops/metrics.ts';
import { hasBody } from './request-body.ts';

/**
 * Load shedding for bulk intake (docs/decisions.md, "Overload"). A server asked for more than its
 * CPU can do queues every request: under L2's 4 MiB batches on top of a busy read mix, reads waited
 * for seconds (docs/benchmarks.md, Load scenarios). What a server can refuse without failing anyone
 * for good is new bulk work — a large batch, a CSV upload, a feed — which a client retries after
 * `Retry-After`; the reads, single contacts and sign-ins it serves as before.
 *
 * "Overloaded" is either of two things, looked at by a timer every SAMPLE_MS:
 * - a standing queue on the event loop (the rule of CoDel, RFC 8289): the samples have been at least
 *   `targetMs` late for HOLD_MS in a row, so new work waits at least that long before the loop gets
 *   to it. A burst that the loop absorbs in a moment does not count, nor does one long turn (a
 *   stall, not a queue: it takes MIN_LATE_SAMPLES late samples in a row);
 * - a saturated event loop: busy SATURATED_UTILIZATION of the last HOLD_MS, in turns short enough
 *   that the timer ran between them. Clients that wait for each answer before they send the next
 *   request (a connection pool) keep their queue on their side, and the loop stays on time while
 *   every answer is late; its utilization shows it. Turns of STALL_MS or more are left out (one
 *   long turn is a stall, as above).
 */

/** How often the loop's lateness is sampled. */
const SAMPLE_MS = 10;
/** How long the loop must stay late (or busy) before large bodies are refused. */
export const HOLD_MS = 500;
/** Late samples in a row it takes, however long they span. */
const MIN_LATE_SAMPLES = 3;
/** The share of a window the event loop may be busy (in short turns) before it counts as saturated. */
export const SATURATED_UTILIZATION = 0.9;
/** A turn this long is a stall, left out of the utilization. */
const STALL_MS = 100;
/** A body this large, or of unannounced length, or compressed, is bulk work that may be refused. */
export const BULK_BODY_BYTES = 64 * 1024;
/** What a refused client is told to wait. */
export const RETRY_AFTER_SECONDS = 2;

export class LoadShedder {
  private readonly targetMs: number;
  /** When the current run of late samples began (the first one's due time), and how many it has. */
  private lateSince = 0;
  private lateSamples = 0;
  /** When the pending sample is due. */
  private due = 0;
  private timer: NodeJS.Timeout | undefined;
  private refusals: { inc(): void } | undefined;
  /** The utilization window: since when, the loop's time busy and in all (short turns only), and the last reading. */
  private windowStart = 0;
  private busyMs = 0;
  private countedMs = 0;
  private lastElu = performance.eventLoopUtilization();
  /** The verdict of the last complete window. */
  private saturated = false;

  /** `targetMs` 0 never sheds. */
  constructor(targetMs: number) {
    this.targetMs = targetMs;
  }

  /** `contact_ledger_overloaded` (1 while large bodies are refused) and `contact_ledger_overload_refusals_total`. */
  registerMetrics(metrics: MetricsRegistry): this {
    const shedder = this;
    metrics.gauge({
      name: 'contact_ledger_overloaded',
      help: 'Whether the server is overloaded (the event loop late, or busy nearly all the time, for half a second): 1 while bulk routes refuse large bodies with 503.',
      collect() {
        this.set(shedder.overloaded() ? 1 : 0);
      },
    });
    this.refusals = metrics.counter({
      name: 'contact_ledger_overload_refusals_total',
      help: 'Large bodies of bulk routes (batches, CSV uploads, feeds) refused with 503 while the server was overloaded.',
    });
    return this;
  }

  /** Counts a refused request. */
  refused(): void {
    this.refusals?.inc();
  }

  start(): this {
    if (this.targetMs > 0 && !this.timer) {
      this.windowStart = performance.now();
      this.lastElu = performance.eventLoopUtilization();
      this.schedule();
    }
    return this;
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Whether the event loop has been at least `targetMs` late for HOLD_MS up to `now`, or was saturated in the last window. */
  overloaded(now = performance.now()): boolean {
    if (this.timer === undefined) return false;
    return this.saturated || (this.lateSamples >= MIN_LATE_SAMPLES && now - this.lateSince >= HOLD_MS);
  }

  private schedule(): void {
    this.due = performance.now() + SAMPLE_MS;
    this.timer = setTimeout(() => {
      const now = performance.now();
      if (now - this.due < this.targetMs) this.lateSamples = 0;
      else if (this.lateSamples++ === 0) this.lateSince = this.due;
      this.measureUtilization(now);
      this.schedule();
    }, SAMPLE_MS).unref();
  }

  private measureUtilization(now: number): void {
    const elu = performance.eventLoopUtilization();
    const d = performance.eventLoopUtilization(elu, this.lastElu);
    this.lastElu = elu;
    if (d.active + d.idle < STALL_MS) {
      this.busyMs += d.active;
      this.countedMs += d.active + d.idle;
    }
    if (now - this.windowStart < HOLD_MS) return;
    // most of the window in short turns, and busy nearly all of it
    this.saturated = this.countedMs >= HOLD_MS / 2 && this.busyMs >= SATURATED_UTILIZATION * this.countedMs;
    this.windowStart = now;
    this.busyMs = this.countedMs = 0;
  }
}

/**
 * A route's middleware (before its body is read): while the server is overloaded, a large body is
 * answered 503 with Retry-After and nothing of it is kept. The body is read and dropped, so that the
 * client gets the answer rather than a reset connection; a small body goes through.
 */
export function shedLargeBodies(shedder: Pick<LoadShedder, 'overloaded' | 'refused'> | undefined): Koa.Middleware {
  return (ctx, next) => {
    if (shedder?.overloaded() && isBulkBody(ctx)) {
      shedder.refused();
      ctx.req.resume();
      throw new AppError(503, 'server_overloaded', `The server is overloaded; large uploads are refused until it catches up. Retry in ${RETRY_AFTER_SECONDS} seconds.`, {
        headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
      });
    }
    return next();
  };
}

function isBulkBody(ctx: Koa.Context): boolean {
  if (!hasBody(ctx)) return false;
  const length = ctx.request.length;
  return length === undefined || length >= BULK_BODY_BYTES || ctx.get('Content-Encoding') !== '';
}
