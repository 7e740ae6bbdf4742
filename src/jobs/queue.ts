import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { MetricsRegistry } from '../ops/metrics.ts';
import type { Db } from '../storage/db.ts';
import { createQueueRepo, type ClaimedJob, type JobLane, type JobRow, type JobStatus } from './queue-repo.ts';

export type { ClaimedJob, JobLane, JobRow, JobStatus };

/** Thrown inside a chunk when another worker now holds the job: the chunk rolls back. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

export const LEASE_MS = 30_000;
/** A run that waits rather than works (a skip, a pause) renews its lease once it is this old: two chances before it runs out. */
export const RENEW_LEASE_AFTER_MS = LEASE_MS / 3;

/**
 * Awaits `wait` while calling `renew` every `everyMs`: for a run that waits outside its chunks for
 * longer than its lease may last (an import waiting for the CSV worker's next batch of very wide
 * rows: a tester's file of ~1 MB rows took longer than the lease, the job was taken for abandoned
 * again and again and failed as if the service had stopped). A renewal that finds the lease lost
 * leaves it to the next chunk's checkpoint to stop the run.
 */
export async function keepingLease<T>(renew: () => Promise<void> | void, wait: Promise<T>, everyMs = RENEW_LEASE_AFTER_MS): Promise<T> {
  let renewing = false;
  const timer = setInterval(() => {
    if (renewing) return;
    renewing = true;
    Promise.resolve()
      .then(renew)
      .catch(() => {}) // lost or busy: the next chunk's checkpoint says so
      .finally(() => (renewing = false));
  }, everyMs);
  try {
    return await wait;
  } finally {
    clearInterval(timer);
  }
}

const working = new WeakSet<Lease>();

/**
 * Marks the run of `lease` as working on the job's content (Lease.working), in a transaction of
 * its own, the first time it is called for that run; later calls cost nothing. Runners with
 * `marksWork` call it right before they read the job's content (the others are at work from
 * their claim).
 */
export function beginWork(db: Db, lease: Lease): void {
  if (!working.has(lease)) db.tx(() => markWorking(lease));
}

/** beginWork inside a transaction the caller has open, which commits the mark with its own writes. */
export function markWorking(lease: Lease): void {
  if (working.has(lease)) return;
  lease.working();
  working.add(lease);
}

/**
 * Renews a lease between a run's chunks, as a write like a chunk's: after `db.relieve()`, so not
 * while a backup pauses the writers nor past the -wal's bulk limit. Throws LeaseLostError.
 */
export async function renewBetweenChunks(db: Db, lease: Lease): Promise<void> {
  await db.relieve();
  db.tx(() => lease.renew());
}

/** What a runner holds while it works on a job. Every method must run inside a transaction. */
export interface Lease {
  readonly job: ClaimedJob;
  /** Fencing check + lease extension; throws LeaseLostError. */
  renew(): void;
  /**
   * renew(), and the transaction it runs in makes progress (a chunk stored, a cursor advanced): the
   * job's retry budget starts over. Call in every chunk transaction — and only there, so that a job
   * failing before it gets anywhere uses up its attempts and ends `failed` (SPEC §4.4).
   */
  checkpoint(): void;
  /**
   * The run begins work on the job's content (its first chunk): from now on, a process that dies
   * before the next checkpoint counts as an attempt, so a job that kills the process (out of
   * memory) fails after its attempts; a death before (while the process started, claimed the job,
   * opened its file) does not, up to MAX_IDLE_GIVEBACKS times (migration 0037). Through
   * beginWork or markWorking, which commit it before the work it announces, once a run. Throws
   * LeaseLostError.
   */
  working(): void;
  complete(): void;
  fail(message: string): void;
}

export type Queue = ReturnType<typeof createQueue>;

/** The job queue on top of the jobs table (SPEC §7, RELIABILITY.md D4). */
export function createQueue(db: Db, clock: Clock) {
  const repo = createQueueRepo(db);
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

  const leaseOf = (job: ClaimedJob): Lease => ({
    job,
    working() {
      if (!repo.markWorking(job.id, job.token, clock.now())) throw new LeaseLostError(`lost the lease on ${job.id}`);
    },
    renew() {
      const now = clock.now();
      if (!repo.renewLease(job.id, job.token, now + LEASE_MS, now)) throw new LeaseLostError(`lost the lease on ${job.id}`);
    },
    checkpoint() {
      const now = clock.now();
      if (!repo.checkpointLease(job.id, job.token, now + LEASE_MS, now)) throw new LeaseLostError(`lost the lease on ${job.id}`);
    },
    complete() {
      if (!repo.finishJob(job.id, job.token, 'completed', null, clock.now())) throw new LeaseLostError(`lost the lease on ${job.id}`);
    },
    fail(message: string) {
      if (!repo.finishJob(job.id, job.token, 'failed', message, clock.now())) throw new LeaseLostError(`lost the lease on ${job.id}`);
    },
  });

  return {
    owner,
    /**
     * Adds a job; call inside the transaction that creates its domain row. Jobs given the same
     * `sequence` run one at a time, in the order they were added (a later one waits while an
     * earlier one is pending, retrying or running).
     */
    enqueue(id: string, kind: string, opts: { payload?: unknown; delayMs?: number; maxAttempts?: number; lane?: JobLane; sequence?: string } = {}): void {
      const now = clock.now();
      repo.insertJob({
        id,
        kind,
        lane: opts.lane ?? 'bulk',
        sequence: opts.sequence,
        payload: opts.payload === undefined ? null : JSON.stringify(opts.payload),
        runAfter: now + (opts.delayMs ?? 0),
        maxAttempts: opts.maxAttempts,
        now,
      });
    },
    /** A job's status and last error (undefined: no such job). */
    outcomeOf(id: string): { status: JobStatus; error: string | null } | undefined {
      const j = repo.findJob(id);
      return j && { status: j.status, error: j.lastError };
    },
    /** True when a job of one of these kinds waits or runs (a previous process's included). */
    hasUnfinished: (kinds: readonly string[]): boolean => repo.hasUnfinished(kinds),
    /** A job that ends before it runs (its input cannot be used at all): `failed` at once. Call in the transaction that enqueued it. */
    failAtOnce(id: string, error: string): void {
      repo.failPendingJob(id, error, clock.now());
    },
    /**
     * Claims the next runnable job of a lane; undefined when none is due. The scheduler asks every
     * second: when nothing is due the answer comes from a read, without the write lock, so the
     * poll never waits behind another holder of it (the checkpoint thread cutting the -wal) on the
     * event loop.
     */
    claim(lane: JobLane = 'bulk', selfMarking: readonly string[] = []): Lease | undefined {
      const now = clock.now();
      if (!repo.hasClaimable(now, lane)) return undefined;
      const job = db.tx(() => repo.claimJob(owner, now + LEASE_MS, now, lane, selfMarking));
      return job && leaseOf(job);
    },
    /**
     * The lease on a job claimed elsewhere in this process (the bulk thread works on jobs the main
     * thread claimed): fencing is in SQL, on the job's token, so this lease is exactly as safe.
     */
    adopt: (job: ClaimedJob): Lease => leaseOf(job),
    /** After a runner failed: retry with backoff, or fail for good after max attempts. */
    failed(lease: Lease, error: string): 'retry' | 'failed' {
      const now = clock.now();
      const { job } = lease;
      // As stored, not as claimed: a committed checkpoint since the claim has started the count over.
      const attempts = repo.findJob(job.id)?.attempts ?? job.attempts;
      if (attempts >= job.maxAttempts) {
        repo.finishJob(job.id, job.token, 'failed', error, now);
        return 'failed';
      }
      repo.retryJob(job.id, job.token, error, now + Math.min(2 ** attempts * 1000, 300_000), now);
      return 'retry';
    },
    /** The job could not run for a reason outside it (disk full): try again later, no attempt used. */
    postpone(lease: Lease, error: string, delayMs: number): void {
      const now = clock.now();
      repo.postponeJob(lease.job.id, lease.job.token, error, now + delayMs, now);
    },
    /** Hands a job back at shutdown: it is claimable again at once, and this run does not count as an attempt. */
    release(lease: Lease): void {
      const now = clock.now();
      repo.releaseJob(lease.job.id, lease.job.token, now);
    },
    /** Boot-time recovery sweep: jobs held by a dead process are claimable at once. */
    recover(): number {
      return db.tx(() => repo.expireAllLeases(clock.now()));
    },
    find: (id: string): JobRow | undefined => repo.findJob(id),
    nextDueAt: () => repo.nextDueAt(),
    depth: () => repo.queueDepth(),
    /** True while a job waits for disk space (postponed by the scheduler, no progress since): /readyz is degraded meanwhile. */
    hasJobWaitingForDisk: (): boolean => repo.hasJobWaitingForDisk(),
    /** Deletes up to `n` jobs of `kind` that ended more than `olderThanMs` ago (a chunk of the nightly prune). */
    pruneFinished: (kind: string, olderThanMs: number, n: number): number => repo.deleteFinishedJobs(kind, clock.now() - olderThanMs, n),
  };
}

/** The statuses of unfinished jobs the queue's gauges show. */
const STATUSES_SHOWN = ['pending', 'processing'] as const;

/**
 * Queue depth and the age of the oldest waiting or running job, per kind, read at each scrape.
 * `kinds`: the kinds this process runs, each shown at 0 when it has no job, so that a dashboard or
 * alert on them finds a series, not nothing (an operator tester's case: an empty queue had none).
 */
export function registerQueueMetrics(metrics: MetricsRegistry, queue: Queue, clock: Clock, kinds: () => readonly string[]): void {
  // One small GROUP BY over the unfinished jobs per gauge and scrape, over zeros for the known kinds.
  const rows = () => {
    const found = queue.depth();
    const zeros = kinds().flatMap((kind) => STATUSES_SHOWN.map((status) => ({ kind, status, n: 0, oldest: clock.now() })));
    return [...zeros.filter((z) => !found.some((r) => r.kind === z.kind && r.status === z.status)), ...found];
  };
  metrics.gauge({
    name: 'contact_ledger_jobs',
    help: 'Jobs waiting (pending) or running (processing), by kind.',
    labelNames: ['kind', 'status'],
    collect() {
      this.reset();
      for (const r of rows()) this.set({ kind: r.kind, status: r.status }, r.n);
    },
  });
  metrics.gauge({
    name: 'contact_ledger_job_oldest_age_seconds',
    help: 'Age of the oldest pending or processing job, by kind.',
    labelNames: ['kind', 'status'],
    collect() {
      this.reset();
      const now = clock.now();
      for (const r of rows()) this.set({ kind: r.kind, status: r.status }, Math.max(0, (now - r.oldest) / 1000));
    },
  });
}
