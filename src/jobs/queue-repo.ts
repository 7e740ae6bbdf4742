import type { Db } from '../storage/db.ts';

export const JOB_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** The scheduler's lanes: `express`, small jobs (an API batch of contacts) with slots of their own; `bulk`, everything else (docs/decisions.md, the scheduler). */
export const JOB_LANES = ['bulk', 'express'] as const;
export type JobLane = (typeof JOB_LANES)[number];

export interface JobRow {
  id: string;
  kind: string;
  payload: string | null;
  status: JobStatus;
  runAfter: number;
  attempts: number;
  maxAttempts: number;
  leaseOwner: string | null;
  leaseUntil: number | null;
  leaseToken: number;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface ClaimedJob {
  id: string;
  kind: string;
  lane: JobLane;
  payload: string | null;
  token: number;
  attempts: number;
  maxAttempts: number;
}

interface Row {
  id: string;
  kind: string;
  payload: string | null;
  status: JobStatus;
  run_after: number;
  attempts: number;
  max_attempts: number;
  lease_owner: string | null;
  lease_until: number | null;
  lease_token: number;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

const toJob = (r: Row): JobRow => ({
  id: r.id,
  kind: r.kind,
  payload: r.payload,
  status: r.status,
  runAfter: r.run_after,
  attempts: r.attempts,
  maxAttempts: r.max_attempts,
  leaseOwner: r.lease_owner,
  leaseUntil: r.lease_until,
  leaseToken: r.lease_token,
  lastError: r.last_error,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export type QueueRepo = ReturnType<typeof createQueueRepo>;

/** Of a sequence (migration 0018), only its oldest unfinished job may run (`jobs` unaliased). */
const HEAD_OF_ITS_SEQUENCE = `(sequence IS NULL OR id = (SELECT s.id FROM jobs s WHERE s.sequence = jobs.sequence AND s.status IN ('pending', 'processing') ORDER BY s.created_at, s.rowid LIMIT 1))`;

/**
 * The next job of a lane that may be claimed now, in each of the two ways a job can be: pending and
 * due, or processing with its lease run out (its holder died). Each branch walks `jobs_runnable`
 * (lane, status, run_after, created_at) in claim order and stops at its first job; the redundant
 * `status IN (…)` lets SQLite use that partial index. One condition with an OR over both statuses
 * read every row of the table and sorted them: with 160,000 jobs waiting (a one-hour soak of
 * single-contact POSTs) a claim took ~40 ms, and the scheduler claims after every POST, so the
 * event loop spent its time claiming and the backlog only grew (docs/benchmarks.md, Load scenarios).
 */
const NEXT_CLAIMABLE = `
  SELECT * FROM (SELECT id, run_after, created_at FROM jobs
                 WHERE lane = @lane AND status IN ('pending', 'processing') AND status = 'pending' AND run_after <= @now AND ${HEAD_OF_ITS_SEQUENCE}
                 ORDER BY run_after, created_at LIMIT 1)
  UNION ALL
  SELECT * FROM (SELECT id, run_after, created_at FROM jobs
                 WHERE lane = @lane AND status IN ('pending', 'processing') AND status = 'processing' AND lease_until < @now AND ${HEAD_OF_ITS_SEQUENCE}
                 ORDER BY run_after, created_at LIMIT 1)`;

/**
 * How the message of a job postponed for lack of disk space begins (the scheduler writes it; the
 * import and feed APIs show it): the job waits for disk space until a chunk of it commits.
 */
export const WAITING_FOR_DISK_SPACE = 'waiting for disk space';
const WAITS_FOR_DISK = `last_error LIKE '${WAITING_FOR_DISK_SPACE}:%'`;

/** The jobs table: insert, claim with a lease (one UPDATE … RETURNING), fenced transitions. */
/**
 * How many deaths of a job's holder before its run began work are given back (no attempt) since
 * the job's last progress; past that they count again (migration 0037).
 */
export const MAX_IDLE_GIVEBACKS = 20;
const GIVE_BACK = `status = 'processing' AND claimed_idle AND idle_givebacks < ${MAX_IDLE_GIVEBACKS}`;

export function createQueueRepo(db: Db) {
  const q = {
    insert: db.raw.prepare(
      'INSERT INTO jobs (id, kind, lane, sequence, payload, status, run_after, max_attempts, created_at, updated_at) VALUES (@id, @kind, @lane, @sequence, @payload, \'pending\', @runAfter, @maxAttempts, @now, @now)',
    ),
    failPending: db.raw.prepare<{ id: string; error: string; now: number }>(
      "UPDATE jobs SET status = 'failed', last_error = @error, updated_at = @now WHERE id = @id AND status = 'pending'",
    ),
    byId: db.raw.prepare<[string], Row>('SELECT * FROM jobs WHERE id = ?'),
    // A pending job whose time has come, or a processing one whose holder died (lease expired);
    // of a sequence (migration 0018), only its oldest unfinished job.
    claim: db.raw.prepare<{ owner: string; until: number; now: number; lane: JobLane; selfMarking: string }, { id: string; kind: string; payload: string | null; lease_token: number; attempts: number; max_attempts: number }>(
      // an attempt a claim; a holder that died before it began work (still claimed_idle, migration
      // 0037) gets its attempt back, MAX_IDLE_GIVEBACKS times since the last progress (SET reads the
      // row as it was). Kinds whose runners mark their work (@selfMarking) start idle; the others
      // are at work from the claim, which their run follows in the same turn.
      `UPDATE jobs SET status = 'processing', lease_owner = @owner, lease_until = @until, lease_token = lease_token + 1,
              attempts = attempts + 1 - (${GIVE_BACK}), idle_givebacks = idle_givebacks + (${GIVE_BACK}),
              claimed_idle = kind IN (SELECT value FROM json_each(@selfMarking)), updated_at = @now
       WHERE id = (SELECT id FROM (${NEXT_CLAIMABLE}) ORDER BY run_after, created_at LIMIT 1)
       RETURNING id, kind, payload, lease_token, attempts, max_attempts`,
    ),
    // The claim's own condition, read only: is there anything to claim at all?
    // in the partial index jobs_runnable (unfinished jobs only), not the table of every finished import
    unfinishedOf: db.raw.prepare<[string], number>(
      `SELECT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_runnable WHERE status IN ('pending', 'processing') AND kind IN (SELECT value FROM json_each(?)))`,
    ).pluck(),
    claimable: db.raw.prepare<{ now: number; lane: JobLane }, number>(
      `SELECT 1 FROM (${NEXT_CLAIMABLE}) LIMIT 1`,
    ).pluck(),
    renew: db.raw.prepare<{ id: string; token: number; until: number; now: number }>(
      "UPDATE jobs SET lease_until = @until, updated_at = @now WHERE id = @id AND lease_token = @token AND status = 'processing'",
    ),
    // progress ends a wait for disk space (the job wrote again): its message and /readyz say so from this commit on
    checkpoint: db.raw.prepare<{ id: string; token: number; until: number; now: number }>(
      `UPDATE jobs SET lease_until = @until, attempts = 0, claimed_idle = 0, idle_givebacks = 0, updated_at = @now,
         last_error = CASE WHEN ${WAITS_FOR_DISK} THEN NULL ELSE last_error END
       WHERE id = @id AND lease_token = @token AND status = 'processing'`,
    ),
    working: db.raw.prepare<{ id: string; token: number; now: number }>(
      "UPDATE jobs SET claimed_idle = 0, updated_at = @now WHERE id = @id AND lease_token = @token AND status = 'processing'",
    ),
    finish: db.raw.prepare<{ id: string; token: number; status: JobStatus; error: string | null; now: number }>(
      "UPDATE jobs SET status = @status, last_error = @error, lease_owner = NULL, lease_until = NULL, updated_at = @now WHERE id = @id AND lease_token = @token AND status = 'processing'",
    ),
    retry: db.raw.prepare<{ id: string; token: number; error: string | null; runAfter: number; now: number }>(
      "UPDATE jobs SET status = 'pending', last_error = @error, run_after = @runAfter, lease_owner = NULL, lease_until = NULL, updated_at = @now WHERE id = @id AND lease_token = @token AND status = 'processing'",
    ),
    release: db.raw.prepare<{ id: string; token: number; now: number }>(
      "UPDATE jobs SET status = 'pending', run_after = @now, attempts = max(attempts - 1, 0), lease_owner = NULL, lease_until = NULL, updated_at = @now WHERE id = @id AND lease_token = @token AND status = 'processing'",
    ),
    postpone: db.raw.prepare<{ id: string; token: number; error: string; runAfter: number; now: number }>(
      "UPDATE jobs SET status = 'pending', last_error = @error, run_after = @runAfter, attempts = max(attempts - 1, 0), lease_owner = NULL, lease_until = NULL, updated_at = @now WHERE id = @id AND lease_token = @token AND status = 'processing'",
    ),
    expireAll: db.raw.prepare<[number]>("UPDATE jobs SET lease_until = 0, updated_at = ? WHERE status = 'processing'"),
    // per lane, so that each is one look at the start of its part of jobs_runnable
    nextDue: db.raw.prepare<[], number | null>(
      `SELECT min(due) FROM (${JOB_LANES.map((l) => `SELECT min(run_after) AS due FROM jobs WHERE lane = '${l}' AND status IN ('pending', 'processing') AND status = 'pending'`).join(' UNION ALL ')})`,
    ).pluck(),
    // through jobs_runnable's partial index: the unfinished jobs only, a handful
    waitingForDisk: db.raw.prepare<[], number>(`SELECT EXISTS (SELECT 1 FROM jobs WHERE status IN ('pending', 'processing') AND ${WAITS_FOR_DISK})`).pluck(),
    depth: db.raw.prepare<[], { kind: string; status: JobStatus; n: number; oldest: number }>(
      "SELECT kind, status, count(*) AS n, min(created_at) AS oldest FROM jobs WHERE status IN ('pending', 'processing') GROUP BY kind, status",
    ),
    // Through the partial index of finished jobs (migration 0014): a chunk reads only rows it deletes.
    deleteFinished: db.raw.prepare<[string, number, number]>(
      "DELETE FROM jobs WHERE rowid IN (SELECT rowid FROM jobs INDEXED BY jobs_finished WHERE kind = ? AND status IN ('completed', 'failed') AND updated_at < ? ORDER BY updated_at LIMIT ?)",
    ),
  };
  return {
    insertJob: (j: { id: string; kind: string; lane?: JobLane; sequence?: string; payload?: string | null; runAfter: number; maxAttempts?: number; now: number }): void =>
      void q.insert.run({ id: j.id, kind: j.kind, lane: j.lane ?? 'bulk', sequence: j.sequence ?? null, payload: j.payload ?? null, runAfter: j.runAfter, maxAttempts: j.maxAttempts ?? 5, now: j.now }),
    failPendingJob: (id: string, error: string, now: number): void => void q.failPending.run({ id, error, now }),
    findJob: (id: string): JobRow | undefined => {
      const r = q.byId.get(id);
      return r && toJob(r);
    },
    /** Claims the next runnable job for `owner` until `until`; undefined when there is none. */
    /** Claims the next runnable job of the lane; `selfMarking`: the kinds whose runners mark their work (Lease.working). */
    claimJob: (owner: string, until: number, now: number, lane: JobLane, selfMarking: readonly string[]): ClaimedJob | undefined => {
      const r = q.claim.get({ owner, until, now, lane, selfMarking: JSON.stringify(selfMarking) });
      return r && { id: r.id, kind: r.kind, lane, payload: r.payload, token: r.lease_token, attempts: r.attempts, maxAttempts: r.max_attempts };
    },
    /** True when a job of one of these kinds is pending or processing (due or not). */
    hasUnfinished: (kinds: readonly string[]): boolean => q.unfinishedOf.get(JSON.stringify(kinds)) === 1,
    /** True when some job of the lane could be claimed now (a read: no write lock taken). */
    hasClaimable: (now: number, lane: JobLane): boolean => q.claimable.get({ now, lane }) === 1,
    /** Extends the lease; false when the lease was lost (fencing). */
    renewLease: (id: string, token: number, until: number, now: number): boolean => q.renew.run({ id, token, until, now }).changes === 1,
    /** Extends the lease and records progress (the retry budget starts over); false when the lease was lost. */
    checkpointLease: (id: string, token: number, until: number, now: number): boolean => q.checkpoint.run({ id, token, until, now }).changes === 1,
    markWorking: (id: string, token: number, now: number): boolean => q.working.run({ id, token, now }).changes === 1,
    /** Moves a held job to completed or failed; false when the lease was lost. */
    finishJob: (id: string, token: number, status: 'completed' | 'failed', error: string | null, now: number): boolean =>
      q.finish.run({ id, token, status, error, now }).changes === 1,
    /** Puts a held job back to pending (after a failure, or at shutdown). */
    retryJob: (id: string, token: number, error: string | null, runAfter: number, now: number): boolean =>
      q.retry.run({ id, token, error, runAfter, now }).changes === 1,
    /** Hands a held job back (shutdown): claimable at once, and the claim did not use up an attempt. */
    releaseJob: (id: string, token: number, now: number): boolean => q.release.run({ id, token, now }).changes === 1,
    /** Puts a held job back to pending without using up an attempt (a condition outside the job, e.g. a full disk). */
    postponeJob: (id: string, token: number, error: string, runAfter: number, now: number): boolean =>
      q.postpone.run({ id, token, error, runAfter, now }).changes === 1,
    /** At start: every lease of a previous process is void (the data folder lock proves it is gone). */
    expireAllLeases: (now: number): number => q.expireAll.run(now).changes,
    nextDueAt: (): number | null => q.nextDue.get() ?? null,
    queueDepth: () => q.depth.all(),
    /** True while an unfinished job waits for disk space: postponed for it, and no chunk of it committed since (/readyz). */
    hasJobWaitingForDisk: (): boolean => q.waitingForDisk.get() === 1,
    /**
     * Deletes up to `n` jobs of a kind that ended (completed or failed) before `before`, oldest
     * first. Never for kinds with a table of their own (import_jobs, feed_jobs: ON DELETE CASCADE).
     */
    deleteFinishedJobs: (kind: string, before: number, n: number): number => q.deleteFinished.run(kind, before, n).changes,
    /** The query plans of the claim, the poll and the next due time (tests: each reads jobs_runnable in order, never the table, nothing sorted). */
    explainClaim: (): string[] =>
      // one set of parameters for all three: a statement takes the ones it names
      [q.claim.source, q.claimable.source, q.nextDue.source].flatMap((sql) =>
        db.queryPlan(sql, { owner: 'x', until: 0, now: 0, lane: 'bulk', selfMarking: '[]' }),
      ),
    /** The query plan of deleteFinishedJobs (tests: it reads the index of finished jobs, never the table). */
    explainDeleteFinishedJobs: (kind: string, before: number, n: number): string[] =>
      db.queryPlan(q.deleteFinished.source, kind, before, n),
  };
}
