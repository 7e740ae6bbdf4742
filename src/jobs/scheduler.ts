import cron, { type ScheduledTask } from 'node-cron';
import { isBusyError, isStorageFullError, type Db } from '../storage/db.ts';
import type { Logger } from '../log.ts';
import { withoutDataFolderPath } from '../storage/data-files.ts';
import { deleteInChunks, type DeleteStep } from './chunk-pacing.ts';
import { WAITING_FOR_DISK_SPACE } from './queue-repo.ts';
import { LEASE_MS, LeaseLostError, type JobLane, type Lease, type Queue } from './queue.ts';

/**
 * The in-process scheduler (SPEC §7): the jobs table is polled every second, and a new job also
 * kicks the poll at once; each poll claims runnable jobs up to the concurrency limit and hands
 * them to the runner of their kind. Runners work in bounded chunks (one transaction each) and look
 * at `stopping` between chunks, so shutdown waits for at most one chunk.
 *
 * Work at times of the day (change sets, retention, backups) is node-cron's, in UTC; polls every
 * few seconds (the jobs table, the inbox, webhook deliveries) run on interval timers, which count
 * elapsed time and not the wall clock. node-cron 4 goes through every slot a schedule missed, one
 * by one and synchronously, when the wall clock jumps forward (a VM resumed, a clock set right by
 * NTP): for a schedule of every second, 86,400 slots a day, which held the event loop for 25 s
 * after a jump of one day and for minutes after a week, deaf to SIGTERM (a tester's case). A time
 * of the day that a jump passed over runs once, late.
 */

export interface RunControl {
  /** True once shutdown began: finish the current chunk, then return 'stopped'. */
  readonly stopping: boolean;
  /** Aborted when shutdown begins, for runners that must pass the word on (the bulk thread). */
  readonly signal?: AbortSignal;
}

export interface Runner {
  /** Does the job; completes it (lease.complete in its last transaction) or returns 'stopped'. */
  run(lease: Lease, ctl: RunControl): Promise<'done' | 'stopped'>;
  /**
   * How long a finished (completed or failed) job of this kind stays in the jobs table before the
   * nightly `jobs-prune` deletes it; null: it stays — the API shows the job's record (imports,
   * feeds, whose tables go with the job row by ON DELETE CASCADE). Every kind says which.
   */
  readonly pruneFinishedAfterMs: number | null;
  /** Records the final failure in the job's own table (same transaction as the job's). */
  failed?(jobId: string, message: string): void;
  /**
   * The runner marks its work itself (beginWork, markWorking), right before it reads the job's
   * content (after loading, opening its input, passing over what a resumed run did): a process
   * killed before that is no attempt. The others are at work from their claim.
   */
  readonly marksWork?: boolean;
}

/** How often the jobs table is polled (besides the kicks of new and finished jobs). */
const POLL_MS = 1000;
/** How far the wall clock must go back between two polls for the cron tasks to be planned again (replanAfterClockBack). */
const CLOCK_BACK_MS = 2000;

/** How long a job waits after the disk was full before it tries again. */
export const FULL_DISK_RETRY_MS = 30_000;

/**
 * Periodic or start-up work (inbox poll, daily change sets, backups). It may be async; the
 * scheduler waits for it on stop(), and long work should return early once `ctl.stopping` is set.
 */
export type BackgroundTask = (ctl: RunControl) => unknown;

export type Scheduler = ReturnType<typeof createScheduler>;

/** How long finished jobs that no API shows (purges) are kept: long enough to look into one. */
export const FINISHED_JOB_RETENTION_MS = 30 * 86_400_000;

/** Jobs run at once per lane: long jobs share the bulk slots; small ones never wait behind them. */
export const LANE_SLOTS: Readonly<Record<JobLane, number>> = { express: 2, bulk: 2 };

export function createScheduler(d: {
  db: Db;
  queue: Queue;
  log: Logger;
  runners: Record<string, Runner>;
  concurrency?: number;
  onBusy?: (where: 'job' | 'task') => void;
  /** The data folder, written `<data>` in the messages of failed jobs, which users read (the log keeps it). */
  dataDir?: string;
}) {
  /** The kinds whose runners mark their work themselves: claimed idle (queue-repo.ts claim). */
  const selfMarking = Object.entries(d.runners).flatMap(([kind, r]) => (r.marksWork ? [kind] : []));
  const slots: Record<JobLane, number> = d.concurrency ? { express: d.concurrency, bulk: d.concurrency } : { ...LANE_SLOTS };
  // Keyed by job and lease token: a job this process claims again (its lease ran out meanwhile)
  // is a second run, and the first run's end must not forget it.
  const running = new Map<string, { lane: JobLane; done: Promise<void> }>();
  const shutdown = new AbortController();
  const ctl: RunControl = {
    get stopping() {
      return shutdown.signal.aborted;
    },
    signal: shutdown.signal,
  };
  let started = false;
  /** The stop under way (stop). */
  let stopped: Promise<void> | undefined;
  let poll: NodeJS.Timeout | undefined;
  let pending = false;
  const startHooks: { name: string; fn: BackgroundTask }[] = [];
  /** When a periodic task runs: a cron expression (UTC, node-cron), or every so many seconds (a timer). */
  type When = string | { seconds: number };
  const periodic: { when: When; name: string; fn: BackgroundTask; task?: ScheduledTask; timer?: NodeJS.Timeout }[] = [];
  /** Periodic and start-up work in flight, by name: stop() waits for it, a tick never overlaps it. */
  const background = new Map<string, Promise<void>>();

  /**
   * Deletes finished jobs of the kinds whose runner gives them a retention, in chunks paced like the
   * other retention work (jobs/chunk-pacing.ts), one kind after the other. Returns how many went.
   */
  async function pruneFinishedJobs(ctl: RunControl): Promise<number> {
    const steps = Object.entries(d.runners).flatMap(([kind, r]): DeleteStep[] => {
      const keep = r.pruneFinishedAfterMs;
      return keep === null ? [] : [(n) => d.queue.pruneFinished(kind, keep, n)];
    });
    if (!steps.length) return 0;
    return (await deleteInChunks(d.db, steps, { stopping: () => ctl.stopping })).deleted;
  }
  // every night, with the other retention work (identity-prune 03:40, webhook-prune 00:20)
  periodic.push({
    when: '50 3 * * *',
    name: 'jobs-prune',
    fn: async (ctl) => {
      const removed = await pruneFinishedJobs(ctl);
      if (removed) d.log.info({ removed }, 'finished jobs removed');
    },
  });

  /** Runs a background task unless stopping or the same task still runs; its failure is logged. */
  function runBackground(name: string, fn: BackgroundTask): void {
    if (ctl.stopping || background.has(name)) return;
    const p = (async () => {
      try {
        await fn(ctl);
      } catch (err) {
        if (isBusyError(err)) d.onBusy?.('task');
        d.log.error({ err, task: name }, 'a periodic task failed');
      }
    })().finally(() => background.delete(name));
    background.set(name, p);
  }

  async function execute(lease: Lease): Promise<void> {
    const runner = d.runners[lease.job.kind];
    const log = d.log.child({ job: lease.job.id, kind: lease.job.kind });
    try {
      if (!runner) throw new Error(`no runner for jobs of kind "${lease.job.kind}"`);
      // Claimed more often than it may be tried, and no earlier run recorded a failure or progress:
      // the process died while working on it each time (e.g. out of memory). Do not try again. (A
      // process that died before its run began work gave its attempt back: Lease.working.)
      if (lease.job.attempts > lease.job.maxAttempts) {
        throw new Error(`the service stopped ${lease.job.attempts - 1} times while working on this job without getting any further`);
      }
      const outcome = await runner.run(lease, ctl);
      if (outcome === 'stopped') d.db.tx(() => d.queue.release(lease));
      // a run that failed its job itself (its input gone, unreadable) is said in the log too, not
      // only in the API (an operator found a restored import failed with no line about it)
      const ended = outcome === 'done' ? d.queue.outcomeOf(lease.job.id) : undefined;
      // (info: a failure of its input, not of the server — a command's own summary says it besides, without this line)
      if (ended?.status === 'failed') log.info({ error: ended.error }, 'job failed');
    } catch (err) {
      if (err instanceof LeaseLostError) {
        // a job deleted while it ran (its ledger or organization was deleted) is no lost lease: said
        // as what it is, not as another worker's doing (an org tester's misleading warning)
        if (d.queue.find(lease.job.id) === undefined) log.info('job deleted while it ran (its ledger or organization was deleted); its run stopped');
        else log.warn('lost the lease; another worker owns the job now');
        return;
      }
      const said = (err as Error).message || String(err);
      const message = d.dataDir ? withoutDataFolderPath(d.dataDir, said) : said;
      if (isBusyError(err)) d.onBusy?.('job');
      if (isStorageFullError(err)) {
        // Not the job's fault: wait for space without using up its attempts (RELIABILITY.md D3).
        // Until a chunk of it commits again, the job's message says so and /readyz is degraded.
        try {
          d.db.tx(() => d.queue.postpone(lease, `${WAITING_FOR_DISK_SPACE}: ${message}`, FULL_DISK_RETRY_MS));
        } catch (inner) {
          log.error(
            { err: inner },
            `could not postpone a job (the disk is full): it is tried again when its lease runs out, within ${LEASE_MS / 1000} s; free disk space in the data folder`,
          );
        }
        log.error({ err }, `the disk is full; the job will be retried in ${FULL_DISK_RETRY_MS / 1000} s (free disk space in the data folder; /readyz is degraded meanwhile)`);
        return;
      }
      try {
        const outcome = d.db.tx(() => {
          const o = d.queue.failed(lease, message);
          if (o === 'failed') runner?.failed?.(lease.job.id, message);
          return o;
        });
        log.error({ err, outcome }, outcome === 'failed' ? 'job failed for good' : 'job failed; it will be retried');
      } catch (inner) {
        log.error({ err: inner }, 'could not record the failure of a job');
      }
    }
  }

  const busy = (lane: JobLane) => [...running.values()].filter((r) => r.lane === lane).length;

  function tick(): void {
    if (!started || ctl.stopping) return;
    for (const lane of ['express', 'bulk'] as const) {
      while (busy(lane) < slots[lane]) {
        let lease: Lease | undefined;
        try {
          lease = d.queue.claim(lane, selfMarking);
        } catch (err) {
          d.log.error({ err }, 'could not claim a job');
          return;
        }
        if (!lease) break;
        const key = `${lease.job.id}#${lease.job.token}`;
        const done = execute(lease).finally(() => {
          running.delete(key);
          kick();
        });
        running.set(key, { lane, done });
      }
    }
  }

  /** Looks for work now (after a job was enqueued or finished) instead of at the next tick. */
  function kick(): void {
    if (pending) return;
    pending = true;
    setImmediate(() => {
      pending = false;
      tick();
    });
  }

  /**
   * node-cron waits for the wall clock to reach the time it planned: a clock set back (NTP after a
   * clock that ran ahead, an operator setting a wrong clock right) stopped every time-of-day task —
   * backups, daily change sets, retention — for as long as the clock had been ahead, and the backup
   * age alert stayed quiet (an operator tester's case, docs/operations.md promises a jumping clock
   * is fine). Against the monotonic clock, a wall clock that went back by more than
   * CLOCK_BACK_MS between two polls has its cron tasks planned again from now (a jump forward is
   * node-cron's `execution:missed`, above). Returns the clocks to compare with at the next poll.
   */
  function replanAfterClockBack(last: { wall: number; mono: number }): { wall: number; mono: number } {
    const now = { wall: Date.now(), mono: performance.now() };
    const back = now.mono - last.mono - (now.wall - last.wall);
    if (back > CLOCK_BACK_MS) {
      const replanned = periodic.filter((p) => p.task);
      for (const p of replanned) {
        void p.task!.stop();
        void p.task!.start();
      }
      if (replanned.length) d.log.warn({ backSeconds: Math.round(back / 1000), tasks: replanned.map((p) => p.name) }, 'the wall clock went back: the times of day are planned again from now');
    }
    return now;
  }

  return {
    /**
     * Recovery sweep at once (not at the first tick), then the cron poll. `tasks` names the periodic
     * and start-up tasks to run (default: all of them): a command-line `import` or `feed` runs jobs
     * and nothing else — webhook deliveries, backups, retention and change sets are the server's,
     * made with its configuration (a command run without the server's WEBHOOK_ALLOW_* would have
     * used up deliveries' attempts). `except` names tasks to leave out of all of them (a test that
     * runs the inbox poll itself, so no cron tick races it).
     */
    start(opts: { tasks?: readonly string[]; except?: readonly string[] } = {}): void {
      if (started) return;
      const wanted = (name: string) => (!opts.tasks || opts.tasks.includes(name)) && !opts.except?.includes(name);
      for (const name of [...(opts.tasks ?? []), ...(opts.except ?? [])]) {
        if (!periodic.some((p) => p.name === name) && !startHooks.some((h) => h.name === name)) throw new Error(`no task named "${name}"`);
      }
      started = true;
      // node-cron's own messages go to our log (a missed time of the day runs late: below)
      const cronLog = d.log.child({ component: 'node-cron' });
      cron.setLogger({
        info: (m) => cronLog.debug(m),
        warn: (m) => cronLog.debug(m),
        error: (m, err) => cronLog.error({ err: err ?? m }, String(m)),
        debug: (m) => cronLog.debug(String(m)),
      });
      const recovered = d.queue.recover();
      if (recovered) d.log.info({ recovered }, 'jobs of a previous process are claimable again');
      let clocks = { wall: Date.now(), mono: performance.now() };
      poll = setInterval(() => {
        clocks = replanAfterClockBack(clocks);
        tick();
      }, POLL_MS);
      for (const p of periodic) {
        if (!wanted(p.name)) continue;
        const run = () => runBackground(p.name, p.fn);
        if (typeof p.when !== 'string') p.timer = setInterval(run, p.when.seconds * 1000);
        else {
          p.task = cron.schedule(p.when, run, { name: p.name, noOverlap: true, timezone: 'Etc/UTC' });
          // a time of the day the wall clock jumped over: once, now (a run in progress covers the rest)
          p.task.on('execution:missed', run);
        }
      }
      kick();
      for (const h of startHooks) if (wanted(h.name)) setImmediate(() => runBackground(h.name, h.fn));
    },
    kick,
    /** Runs once when the scheduler starts (catch-up work); shares `name` with a periodic task to never overlap it. */
    onStart(name: string, fn: BackgroundTask): void {
      startHooks.push({ name, fn });
    },
    /**
     * A periodic task: at the times of a cron expression (UTC), or every `seconds`; register before
     * start(). A time that comes while it still runs is skipped.
     */
    every(when: When, name: string, fn: BackgroundTask): void {
      periodic.push({ when, name, fn });
    },
    /**
     * Runs a periodic task now (operators, tests), unless it is running already: false then.
     * Resolves when that run ended.
     */
    async runNow(name: string): Promise<boolean> {
      const task = periodic.find((p) => p.name === name) ?? startHooks.find((h) => h.name === name);
      if (!task) throw new Error(`no periodic task named "${name}"`);
      if (background.has(name)) return false;
      runBackground(name, task.fn);
      await background.get(name);
      return true;
    },
    /** When a started time-of-day task (a cron expression) runs next; undefined for others or before start(). */
    nextRun(name: string): Date | undefined {
      return periodic.find((p) => p.name === name)?.task?.getNextRun() ?? undefined;
    },
    isRunning: () => started && !ctl.stopping,
    /** Active job ids (for tests and metrics). */
    active: () => [...running.keys()].map((k) => k.slice(0, k.lastIndexOf('#'))),
    /**
     * Stops claiming and starting periodic work, lets each runner finish its chunk and hand its job
     * back. Called again while it waits, returns the same wait (a server's shutdown calls it first,
     * when the stop is asked: a backup started while the last requests drained, and the stop
     * waited for it — an operator tester's case; its runtime's close then waits for that).
     */
    stop(): Promise<void> {
      if (!started) return Promise.resolve();
      stopped ??= (async () => {
        shutdown.abort();
        clearInterval(poll);
        for (const p of periodic) {
          clearInterval(p.timer);
          await p.task?.stop();
        }
        await Promise.allSettled([...[...running.values()].map((r) => r.done), ...background.values()]);
        started = false;
        stopped = undefined;
      })();
      return stopped;
    },
  };
}
