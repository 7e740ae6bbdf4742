// The job queue and the scheduler (SPEC §7, RELIABILITY.md D4 b–d, f): leases with fencing,
// exclusive claims, retries with backoff then failure, recovery of dead leases, shutdown.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { ManualClock } from '../src/clock.ts';
import { createLogger } from '../src/log.ts';
import { beginWork, createQueue, keepingLease, LEASE_MS, LeaseLostError } from '../src/jobs/queue.ts';
import { createQueueRepo, MAX_IDLE_GIVEBACKS } from '../src/jobs/queue-repo.ts';
import { createScheduler, FINISHED_JOB_RETENTION_MS, LANE_SLOTS, type Runner } from '../src/jobs/scheduler.ts';
import { byteBoundedEnd, CHUNK_BUDGET_MS, CHUNK_MAX_BYTES, ChunkSizer, deleteInChunks, FIRST_DELETE_CHUNK } from '../src/jobs/chunk-pacing.ts';
import { openDb, type Db } from '../src/storage/db.ts';
import { loadMigrations, migrate } from '../src/storage/migrate.ts';
import { paths } from '../src/paths.ts';
import { addContacts, clientToken, createLedger, expectStatus, LEDGER, ledgerPath, PASSWORD, seedWorld, signIn, startApp, tempDir, until } from './helpers.ts';
import { HARNESS } from './child-server.ts';

const quiet = createLogger('silent');

function freshDb(): Db {
  const db = openDb(join(tempDir(), 'jobs.db'));
  migrate(db, loadMigrations(paths.migrations), Date.now());
  return db;
}

/** A fresh database and a manual clock: what each queue test starts from. */
const fixture = () => ({ db: freshDb(), clock: new ManualClock('2026-11-22T10:00:00Z') });

const Q = suite('job queue');

Q('a worker whose lease expired is fenced off: its next chunk writes nothing (D4 b)', () => {
  const { db, clock } = fixture();
  const w1 = createQueue(db, clock);
  const w2 = createQueue(db, clock);
  db.tx(() => w1.enqueue('job_a', 'test'));
  const l1 = w1.claim()!;
  assert.is(l1.job.id, 'job_a');
  assert.is(w2.claim(), undefined, 'held: nobody else may claim it');
  clock.advance(31_000); // the lease runs out (the holder is "dead")
  const l2 = w2.claim()!;
  assert.is(l2.job.id, 'job_a');
  assert.ok(l2.job.token > l1.job.token);
  db.raw.exec('CREATE TABLE side_effects (n INTEGER)');
  assert.throws(
    () =>
      db.tx(() => {
        db.raw.prepare('INSERT INTO side_effects VALUES (1)').run();
        l1.renew();
      }),
    (e: unknown) => e instanceof LeaseLostError,
  );
  assert.is(db.raw.prepare('SELECT count(*) FROM side_effects').pluck().get(), 0, 'the stale chunk rolled back');
  assert.throws(() => db.tx(() => l1.complete()), (e: unknown) => e instanceof LeaseLostError);
  db.tx(() => l2.complete());
  assert.is(w1.find('job_a')!.status, 'completed');
  db.close();
});

Q('the claim poll takes no write lock when nothing is due: another holder of the lock does not make it wait', () => {
  const { db, clock } = fixture();
  const q = createQueue(db, clock);
  db.tx(() => q.enqueue('job_later', 'test', { delayMs: 60_000 }));
  const other = new Database(db.file);
  other.pragma('busy_timeout = 0');
  other.exec('BEGIN IMMEDIATE'); // holds the write lock, as the checkpoint thread does while it cuts the -wal
  try {
    db.raw.pragma('busy_timeout = 0'); // a wait for the lock would fail at once instead of blocking
    assert.is(q.claim('bulk'), undefined, 'nothing due: answered without the lock');
    assert.is(q.claim('express'), undefined);
    clock.advance(61_000);
    assert.throws(() => q.claim('bulk'), /locked|busy/i, 'a job due: the claim does need the lock');
  } finally {
    other.exec('ROLLBACK');
    other.close();
  }
  assert.is(q.claim('bulk')!.job.id, 'job_later');
  db.close();
});

interface WorkerReport {
  claimed: [string, number][];
  /** Jobs whose lease was lost, and the write that was refused: the chunk or the completion. */
  lost: [string, 'chunk' | 'complete'][];
  /** Jobs written although the writer's lease token was no longer the job's. */
  unfenced: string[];
}

/**
 * Two queue workers in processes of their own (test/queue-worker.ts), each with its own connection
 * to `file`, started together once both are ready; resolves with what each did.
 */
async function raceWorkers(file: string, opts: { offsetMs: number; holdMs: number }[]): Promise<[WorkerReport, WorkerReport]> {
  const workers = opts.map(({ offsetMs, holdMs }, i) => {
    const child = spawn(process.execPath, [HARNESS.queueWorker], {
      env: { PATH: process.env.PATH ?? '', QUEUE_DB: file, QUEUE_WORKER: `w${i + 1}`, QUEUE_CLOCK_OFFSET_MS: String(offsetMs), QUEUE_HOLD_MS: String(holdMs) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const ready = new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.startsWith('ready\n')) resolve();
      }),
    );
    const done = new Promise<WorkerReport>((resolve, reject) =>
      child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.slice('ready\n'.length)) as WorkerReport) : reject(new Error(`worker ${i + 1} exited with ${code}: ${err}`)))),
    );
    return { child, ready, done };
  });
  const deadline = setTimeout(() => workers.forEach((w) => w.child.kill('SIGKILL')), 60_000); // bounds a hang
  try {
    await Promise.all(workers.map((w) => w.ready));
    for (const w of workers) w.child.stdin.end('go\n');
    return (await Promise.all(workers.map((w) => w.done))) as [WorkerReport, WorkerReport];
  } finally {
    clearTimeout(deadline);
  }
}

/** A database file with `n` pending jobs and the workers' `effects` table; closed again. */
function raceDb(n: number): string {
  const file = join(tempDir(), 'race.db');
  const db = openDb(file);
  migrate(db, loadMigrations(paths.migrations), Date.now());
  db.raw.exec('CREATE TABLE effects (job_id TEXT NOT NULL, token INTEGER NOT NULL, worker TEXT NOT NULL, PRIMARY KEY (job_id, token))');
  const q = createQueue(db, { now: () => Date.now() - 1000 });
  db.tx(() => {
    for (let i = 0; i < n; i++) q.enqueue(`job_${String(i).padStart(4, '0')}`, 'test');
  });
  db.close();
  return file;
}

Q('two processes, each with its own connection, race for 200 jobs: each job is claimed exactly once (D4 c)', async () => {
  const N = 200;
  const file = raceDb(N);
  // Each holds a job for a millisecond before its chunk, so that they take turns at the database.
  const [a, b] = await raceWorkers(file, [
    { offsetMs: 0, holdMs: 1 },
    { offsetMs: 0, holdMs: 1 },
  ]);
  assert.ok(a.claimed.length > 0 && b.claimed.length > 0, `both took part (${a.claimed.length} / ${b.claimed.length})`);
  const all = [...a.claimed, ...b.claimed].map(([id]) => id);
  assert.is(all.length, N, 'claims in all');
  assert.is(new Set(all).size, N, 'no job claimed twice');
  assert.equal([...a.lost, ...b.lost], [], 'no lease lost');
  assert.equal([...a.unfenced, ...b.unfenced], []);
  const db = openDb(file, { check: false });
  assert.equal(db.raw.prepare("SELECT status, count(*) AS n, max(lease_token) AS token FROM jobs GROUP BY status").all(), [{ status: 'completed', n: N, token: 1 }]);
  assert.is(db.raw.prepare('SELECT count(DISTINCT job_id) FROM effects').pluck().get(), N);
  assert.is(db.raw.prepare('SELECT count(*) FROM effects').pluck().get(), N, 'one side effect per job');
  db.close();
});

Q('a process whose leases the other one took over is fenced off: every write it tries afterwards is refused and rolled back (D4 b, c)', async () => {
  const N = 150;
  // w2's clock runs a lease length ahead: every job w1 holds looks abandoned to it, so it takes
  // them over whenever it finds one between w1's claim and w1's commits (w1 holds each job 2 ms).
  // That needs the two to overlap: on a loaded machine w1 may start after w2 has done every job,
  // so the race is run again (on a fresh file) until it did — at most five times.
  let file = '';
  let w1: WorkerReport | undefined;
  let w2: WorkerReport | undefined;
  let takenOver: string[] = [];
  for (let attempt = 0; attempt < 5 && takenOver.length === 0; attempt++) {
    file = raceDb(N);
    [w1, w2] = await raceWorkers(file, [
      { offsetMs: 0, holdMs: 2 },
      { offsetMs: LEASE_MS + 1000, holdMs: 0 },
    ]);
    const firstClaims = new Map(w1.claimed.map(([id, token]) => [id, token]));
    takenOver = w2.claimed.filter(([id, token]) => token > 1 && firstClaims.get(id) === token - 1).map(([id]) => id);
  }
  if (!w1 || !w2) throw new Error('no race ran');
  assert.ok(takenOver.length > 0, `w2 took over some of w1's jobs (${w1.claimed.length} claimed by w1, ${w2.claimed.length} by w2)`);
  assert.equal([...w1.unfenced, ...w2.unfenced], [], 'every write that went through was made under the current lease');
  assert.equal(w2.lost, [], 'nobody took a job over from w2');
  assert.equal(w1.lost.map(([id]) => id).sort(), takenOver.sort(), 'w1 lost exactly the jobs taken over from it, each at its next write');
  const db = openDb(file, { check: false });
  assert.equal(db.raw.prepare('SELECT status, count(*) AS n FROM jobs GROUP BY status').all(), [{ status: 'completed', n: N }]);
  // Every job's last holder did its work: a side effect under the job's final lease token.
  assert.is(db.raw.prepare('SELECT count(*) FROM jobs j WHERE NOT EXISTS (SELECT 1 FROM effects e WHERE e.job_id = j.id AND e.token = j.lease_token)').pluck().get(), 0);
  // w1's side effects under a lease that was no longer the job's are exactly those of the jobs it
  // lost at the completion, i.e. chunks it committed before the takeover. A chunk refused by the
  // fencing check left nothing behind.
  const stale = db.raw.prepare("SELECT e.job_id FROM effects e JOIN jobs j ON j.id = e.job_id WHERE e.worker = 'w1' AND e.token <> j.lease_token ORDER BY 1").pluck().all();
  assert.equal(stale, w1.lost.filter(([, stage]) => stage === 'complete').map(([id]) => id).sort());
  db.close();
});

Q('jobs of one sequence run one at a time in the order they were added, also across a retry and a dead holder; other jobs pass them', () => {
  const { db, clock } = fixture();
  const q = createQueue(db, clock);
  db.tx(() => {
    q.enqueue('job_s1', 'test', { sequence: 'feed' });
    q.enqueue('job_s2', 'test', { sequence: 'feed' });
    q.enqueue('job_free', 'test');
  });
  clock.advance(1);
  db.tx(() => q.enqueue('job_s3', 'test', { sequence: 'feed' }));
  const claimed = [q.claim()!, q.claim()!];
  assert.equal(claimed.map((l) => l.job.id).sort(), ['job_free', 'job_s1'], 'the first of the sequence, and a job without one: it does not wait');
  const first = claimed.find((l) => l.job.id === 'job_s1')!;
  db.tx(() => claimed.find((l) => l.job.id === 'job_free')!.complete());
  assert.is(q.claim(), undefined, 'job_s2 waits while job_s1 runs');
  // job_s1 fails and waits for its retry: job_s2 still waits behind it
  assert.is(db.tx(() => q.failed(first, 'boom')), 'retry');
  assert.is(q.claim(), undefined, 'job_s2 waits while job_s1 waits for its retry');
  clock.advance(60_000);
  const again = q.claim()!;
  assert.is(again.job.id, 'job_s1', 'the retry comes first');
  // its holder dies: after the lease runs out job_s1 is taken over, still before job_s2
  clock.advance(LEASE_MS + 1);
  const takeover = q.claim()!;
  assert.is(takeover.job.id, 'job_s1');
  assert.is(q.claim(), undefined);
  db.tx(() => takeover.complete());
  assert.is(q.claim()?.job.id, 'job_s2', 'then the next in order');
  assert.is(q.claim(), undefined, 'job_s3 waits for job_s2');
  db.close();
});

Q('with thousands of jobs waiting, a claim reads the runnable index in claim order and stops: no table scan, nothing sorted', () => {
  const { db, clock } = fixture();
  const q = createQueue(db, clock);
  // a soak's backlog: single-contact imports of a few ledgers (one sequence each), and one of them running
  db.tx(() => {
    for (let i = 0; i < 3000; i++) q.enqueue(`job_${String(i).padStart(4, '0')}`, 'test', { lane: 'express', sequence: `ledger_${i % 3}` });
  });
  const running = q.claim('express')!;
  assert.is(running.job.id, 'job_0000');
  const plan = createQueueRepo(db).explainClaim();
  assert.not.ok(plan.some((d) => d.startsWith('SCAN jobs')), plan.join(' | '));
  assert.ok(plan.some((d) => d.startsWith('SEARCH jobs USING INDEX jobs_runnable (lane=? AND status=?')), plan.join(' | '));
  // the only sort is of the one or two jobs the two walks found (pending and due; lease run out)
  plan.forEach((d, i) => d.includes('TEMP B-TREE') && assert.match(plan[i - 1] ?? '', /^SCAN \(subquery-\d+\)$/, plan.join(' | ')));
  // the order is the queue's: the oldest due job that heads its sequence; a dead holder's job first again
  assert.equal([q.claim('express')!.job.id, q.claim('express')!.job.id], ['job_0001', 'job_0002']);
  assert.is(q.claim('express'), undefined, 'each sequence has its job running');
  assert.is(q.claim('bulk'), undefined, 'another lane');
  clock.advance(LEASE_MS + 1);
  assert.is(q.nextDueAt(), Date.parse('2026-11-22T10:00:00Z'));
  assert.is(q.claim('express')!.job.id, 'job_0000', 'taken over once its lease ran out');
  db.close();
});

Q('a job that keeps failing is retried with backoff, then failed with its error (D4 d)', () => {
  const { db, clock } = fixture();
  const q = createQueue(db, clock);
  db.tx(() => q.enqueue('job_f', 'test', { maxAttempts: 3 }));
  const outcomes: string[] = [];
  for (let i = 0; i < 3; i++) {
    const l = q.claim();
    assert.ok(l, `attempt ${i + 1} claimable`);
    outcomes.push(db.tx(() => q.failed(l, `boom ${i + 1}`)));
    assert.is(q.claim(), undefined, 'not before its backoff');
    clock.advance(10 * 60_000);
  }
  assert.equal(outcomes, ['retry', 'retry', 'failed']);
  const row = q.find('job_f')!;
  assert.is(row.status, 'failed');
  assert.is(row.lastError, 'boom 3');
  db.close();
});

Q('renewing a lease is not progress: a job that fails before getting anywhere ends failed, even when a chunk checkpointed and rolled back', () => {
  const { db, clock } = fixture();
  const q = createQueue(db, clock);
  db.tx(() => q.enqueue('job_p', 'test', { maxAttempts: 3 }));
  const outcomes: string[] = [];
  for (let i = 0; i < 10 && !outcomes.includes('failed'); i++) {
    const l = q.claim();
    assert.ok(l, `attempt ${i + 1} claimable`);
    db.tx(() => l.renew()); // "started"
    // a chunk that records progress, then throws: it rolls back, progress included
    assert.throws(() =>
      db.tx(() => {
        l.checkpoint();
        throw new Error('poison chunk');
      }),
    );
    outcomes.push(db.tx(() => q.failed(l, 'poison chunk')));
    clock.advance(10 * 60_000);
  }
  assert.equal(outcomes, ['retry', 'retry', 'failed']);
  assert.is(q.find('job_p')!.status, 'failed');
  db.close();
});

Q('a job that failed after committed progress is retried with a fresh budget', () => {
  const { db, clock } = fixture();
  const q = createQueue(db, clock);
  db.tx(() => q.enqueue('job_c', 'test', { maxAttempts: 2 }));
  const first = q.claim()!;
  assert.is(db.tx(() => q.failed(first, 'nothing stored')), 'retry');
  clock.advance(10 * 60_000);
  const last = q.claim()!;
  assert.is(last.job.attempts, 2, 'claimed as its last attempt');
  db.tx(() => last.checkpoint()); // stores a chunk, then fails
  assert.is(db.tx(() => q.failed(last, 'a later chunk failed')), 'retry', 'the stored chunk started the count over');
  clock.advance(10 * 60_000);
  assert.is(q.claim()!.job.attempts, 1);
  db.close();
});

Q('handing a job back at shutdown does not use up an attempt', () => {
  const { db, clock } = fixture();
  const q = createQueue(db, clock);
  db.tx(() => q.enqueue('job_s', 'test', { maxAttempts: 2 }));
  for (let i = 0; i < 5; i++) db.tx(() => q.release(q.claim()!));
  assert.is(q.find('job_s')!.status, 'pending');
  assert.is(q.claim()!.job.attempts, 1);
  db.close();
});

Q('recovery at start makes jobs of a dead process claimable at once; progress resets attempts', () => {
  const { db, clock } = fixture();
  const dead = createQueue(db, clock);
  db.tx(() => dead.enqueue('job_r', 'test'));
  const l = dead.claim()!;
  db.tx(() => l.checkpoint());
  const next = createQueue(db, clock);
  assert.is(next.claim(), undefined);
  assert.is(next.recover(), 1);
  const again = next.claim()!;
  assert.is(again.job.id, 'job_r');
  assert.is(again.job.attempts, 1, 'checkpoint() recorded progress, so the retry budget starts over');
  db.close();
});

Q('keepingLease renews the lease while a wait lasts (one renewal at a time, failures swallowed), and stops when it ends', async () => {
  let renewals = 0;
  let inFlight = 0;
  let release!: (v: string) => void;
  const wait = new Promise<string>((resolve) => (release = resolve));
  const kept = keepingLease(
    async () => {
      inFlight++;
      assert.is(inFlight, 1, 'never two renewals at once');
      renewals++;
      await new Promise((r) => setTimeout(r, 12)); // a renewal slower than the interval (it waits out a backup)
      inFlight--;
      if (renewals === 2) throw new LeaseLostError('lost'); // left to the next chunk's checkpoint
      if (renewals === 4) release('batch');
    },
    wait,
    5,
  );
  assert.is(await kept, 'batch');
  const after = renewals;
  // nothing tells of a renewal that does not happen: a few intervals' time is the only witness
  await new Promise((r) => setTimeout(r, 40));
  assert.is(renewals, after, 'no renewal once the wait ended');
  assert.is(await keepingLease(() => assert.unreachable('a wait that is over at once needs no renewal'), Promise.resolve(7), 5), 7);
});

Q.run();

const S = suite('scheduler');

S('runs kicked jobs at once, one runner per job, and stops cleanly between chunks', async () => {
  const db = freshDb();
  const clock = { now: () => Date.now() };
  const queue = createQueue(db, clock);
  const runs: string[] = [];
  let chunks = 0;
  let release: (() => void) | undefined;
  const gate = new Promise<void>((r) => (release = r));
  const runners: Record<string, Runner> = {
    quick: {
      pruneFinishedAfterMs: null,
      async run(lease) {
        runs.push(lease.job.id);
        db.tx(() => lease.complete());
        return 'done';
      },
    },
    long: {
      pruneFinishedAfterMs: null,
      async run(lease, ctl) {
        for (;;) {
          db.tx(() => lease.renew());
          chunks++;
          if (chunks === 2) release!();
          if (ctl.stopping) return 'stopped';
          await new Promise((r) => setImmediate(r));
        }
      },
    },
    broken: {
      pruneFinishedAfterMs: null,
      async run() {
        throw new Error('always broken');
      },
      failed(jobId, message) {
        runs.push(`failed ${jobId}: ${message}`);
      },
    },
  };
  const scheduler = createScheduler({ db, queue, log: quiet, runners, concurrency: 2 });
  scheduler.start();
  db.tx(() => {
    queue.enqueue('job_q1', 'quick');
    queue.enqueue('job_q2', 'quick');
    queue.enqueue('job_long', 'long');
    queue.enqueue('job_broken', 'broken', { maxAttempts: 1 });
    queue.enqueue('job_unknown', 'nobody-runs-this', { maxAttempts: 1 });
  });
  scheduler.kick();
  await gate;
  await until('job_broken failed', () => queue.find('job_broken')?.status === 'failed', Boolean, 10_000);
  assert.ok(runs.includes('job_q1') && runs.includes('job_q2'));
  assert.is(runs.filter((r) => r === 'job_q1').length, 1);
  assert.ok(runs.includes('failed job_broken: always broken'));
  await until('job_unknown failed', () => queue.find('job_unknown')?.status === 'failed', Boolean, 10_000);
  assert.match(queue.find('job_unknown')!.lastError!, /no runner/);
  await scheduler.stop();
  const long = queue.find('job_long')!;
  assert.is(long.status, 'pending', 'handed back at shutdown');
  assert.is(long.leaseOwner, null);
  assert.not.ok(scheduler.isRunning());
  db.close();
});

/**
 * Starts a scheduler whose runner of `kind` records what happens to its jobs ('run', or 'failed
 * <id>: <message>'), waits until job `id` has ended, stops it and returns the record.
 */
async function recordedRun(db: Db, queue: ReturnType<typeof createQueue>, kind: string, id: string, marksWork = false): Promise<string[]> {
  const seen: string[] = [];
  const runners: Record<string, Runner> = {
    [kind]: {
      pruneFinishedAfterMs: null,
      marksWork,
      async run(lease) {
        seen.push('run');
        db.tx(() => lease.complete());
        return 'done';
      },
      failed(jobId, message) {
        seen.push(`failed ${jobId}: ${message}`);
      },
    },
  };
  const scheduler = createScheduler({ db, queue, log: quiet, runners });
  scheduler.start();
  const ended = () => ['completed', 'failed'].includes(queue.find(id)?.status ?? '');
  await until('the run ended', ended, Boolean, 10_000);
  await scheduler.stop();
  return seen;
}

S("a wall clock set back while the server runs: the times of day are planned again from now (node-cron waited for the clock to reach the time it had planned: backups stopped for as long as the clock had been ahead; an operator tester's case)", async () => {
  const RealDate = Date;
  let aheadMs = 120_000; // the clock two minutes ahead, as NTP finds it
  class ShiftedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + aheadMs);
      else super(...(args as [string]));
    }
    static override now() {
      return RealDate.now() + aheadMs;
    }
  }
  globalThis.Date = ShiftedDate as DateConstructor;
  const { db, clock } = fixture();
  const lines: string[] = [];
  const log = createLogger('info', new Writable({ write: (chunk, _enc, done) => void (lines.push(String(chunk)), done()) }));
  const scheduler = createScheduler({ db, queue: createQueue(db, clock), log, runners: {} });
  try {
    let runs = 0;
    scheduler.every('* * * * * *', 'every-second', () => void runs++);
    scheduler.start();
    await until('it runs while the clock is ahead', () => runs, (n) => n >= 2, 10_000);
    aheadMs = 0; // set right: two minutes back
    const before = runs;
    await until('it runs again within seconds, not two minutes later', () => runs, (n) => n >= before + 2, 10_000);
    const said = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'the wall clock went back: the times of day are planned again from now');
    assert.ok(said, lines.join(''));
    assert.is(said.level, 'warn');
    assert.ok(said.tasks.includes('every-second'), said.tasks.join());
    assert.ok(said.backSeconds >= 119 && said.backSeconds <= 121, String(said.backSeconds));
  } finally {
    await scheduler.stop();
    globalThis.Date = RealDate;
    db.close();
  }
});

S('a job deleted while it ran (its ledger or organization deleted) is logged as such, not as a lease another worker took', async () => {
  const { db, clock } = fixture();
  const queue = createQueue(db, clock);
  const lines: string[] = [];
  const log = createLogger('info', new Writable({ write: (chunk, _enc, done) => void (lines.push(String(chunk)), done()) }));
  db.tx(() => {
    queue.enqueue('job_gone', 'gone', {});
    queue.enqueue('job_taken', 'taken', {});
  });
  const runners: Record<string, Runner> = {};
  for (const kind of ['gone', 'taken']) {
    runners[kind] = {
      pruneFinishedAfterMs: null,
      async run(lease) {
        // gone: the job's row deleted (as a ledger's deletion does); taken: another worker's lease on it
        if (kind === 'gone') db.raw.prepare('DELETE FROM jobs WHERE id = ?').run(lease.job.id);
        else db.raw.prepare("UPDATE jobs SET lease_token = lease_token + 1 WHERE id = ?").run(lease.job.id);
        db.tx(() => lease.renew());
        return 'done';
      },
    };
  }
  const scheduler = createScheduler({ db, queue, log, runners });
  scheduler.start();
  await until('both runs ended', () => lines.filter((l) => /deleted while it ran|lost the lease/.test(l)).length === 2, Boolean, 10_000);
  await scheduler.stop();
  const said = lines.map((l) => JSON.parse(l)).filter((l) => /deleted while it ran|lost the lease/.test(l.msg)).map((l) => [l.level, l.msg]).sort();
  assert.equal(said, [
    ['info', 'job deleted while it ran (its ledger or organization was deleted); its run stopped'],
    ['warn', 'lost the lease; another worker owns the job now'],
  ]);
  db.close();
});

S("a failed job's message, which users read, names the data folder <data>, not where the server keeps it; the log keeps the whole path (a reviewer's case)", async () => {
  const { db, clock } = fixture();
  const queue = createQueue(db, clock);
  const dataDir = tempDir();
  const lines: string[] = [];
  const log = createLogger('info', new Writable({ write: (chunk, _enc, done) => void (lines.push(String(chunk)), done()) }));
  db.tx(() => {
    queue.enqueue('job_once', 'denied', { maxAttempts: 1 });
    queue.enqueue('job_again', 'denied', { maxAttempts: 2 });
  });
  const lastWords: string[] = [];
  const runners: Record<string, Runner> = {
    denied: {
      pruneFinishedAfterMs: null,
      async run(lease) {
        throw new Error(`EACCES: permission denied, open '${join(dataDir, 'uploads', `${lease.job.id}.csv`)}' (not '${dataDir}-old')`);
      },
      failed: (jobId, message) => void lastWords.push(`${jobId}: ${message}`),
    },
  };
  const scheduler = createScheduler({ db, queue, log, runners, dataDir });
  scheduler.start();
  await until('both tried', () => queue.find('job_once')?.status === 'failed' && queue.find('job_again')?.attempts === 1, Boolean, 10_000);
  await scheduler.stop();
  const said = (id: string) => `EACCES: permission denied, open '<data>/uploads/${id}.csv' (not '${dataDir}-old')`;
  assert.is(queue.find('job_once')!.lastError, said('job_once'));
  assert.equal(lastWords, [`job_once: ${said('job_once')}`], "the runner's last word, which the import's or feed's message becomes");
  assert.equal([queue.find('job_again')!.status, queue.find('job_again')!.lastError], ['pending', said('job_again')], 'shown while the job waits to be tried again');
  const logged = lines.map((l) => JSON.parse(l)).filter((l) => /job failed/.test(l.msg));
  assert.is(logged.length, 2);
  for (const l of logged) assert.ok(String(l.error ?? l.err?.message).includes(join(dataDir, 'uploads')), `the operator's log names the path: ${JSON.stringify(l)}`);
  db.close();
});

S('a job whose process died on every attempt is failed, not run again', async () => {
  const { db, clock } = fixture();
  const queue = createQueue(db, clock);
  db.tx(() => queue.enqueue('job_oom', 'oom', { maxAttempts: 2 }));
  for (let i = 0; i < 2; i++) {
    const lease = queue.claim();
    assert.ok(lease, `claim ${i + 1}`);
    beginWork(db, lease); // at work on it, then the process died: its lease runs out
    clock.advance(31_000);
  }
  const seen = await recordedRun(db, queue, 'oom', 'job_oom');
  assert.equal(seen, ['failed job_oom: the service stopped 2 times while working on this job without getting any further']);
  assert.is(queue.find('job_oom')!.status, 'failed');
  db.close();
});

S('a process that died before its run began work on the job is no attempt: a crash loop of restarts does not fail the job; one death at work counts', async () => {
  const { db, clock } = fixture();
  const queue = createQueue(db, clock);
  db.tx(() => queue.enqueue('job_loop', 'loop', { maxAttempts: 2 }));
  const attempts = () => db.raw.prepare("SELECT attempts FROM jobs WHERE id = 'job_loop'").pluck().get();
  const selfMarking = ['loop']; // its runner marks its work (marksWork): claimed idle
  for (let i = 0; i < 10; i++) {
    assert.ok(queue.claim('bulk', selfMarking), `claim ${i + 1}`); // claimed, then killed while starting: never at work
    if (i % 2) queue.recover(); // found by the next start's sweep, or by its lease running out
    else clock.advance(31_000);
  }
  assert.is(attempts(), 1, 'only the claim in hand counts');
  const lease = queue.claim('bulk', selfMarking)!;
  beginWork(db, lease);
  beginWork(db, lease); // once a run: the second call writes nothing
  clock.advance(31_000); // died at work: that one counts
  assert.is(queue.claim('bulk', selfMarking)!.job.attempts, 2);
  clock.advance(31_000); // and that claim died idle: its attempt is given back, and the job runs
  assert.equal(await recordedRun(db, queue, 'loop', 'job_loop', true), ['run']);
  db.close();
});

S(`deaths before work are given back ${MAX_IDLE_GIVEBACKS} times since the last progress, then count: whatever kills the process before a run marks its work cannot crash-loop the service for ever`, async () => {
  const { db, clock } = fixture();
  const queue = createQueue(db, clock);
  db.tx(() => queue.enqueue('job_early', 'early', { maxAttempts: 2 }));
  for (let i = 0; i < MAX_IDLE_GIVEBACKS + 2; i++) {
    queue.claim('bulk', ['early']);
    queue.recover();
  }
  const seen = await recordedRun(db, queue, 'early', 'job_early', true);
  assert.equal(seen, ['failed job_early: the service stopped 2 times while working on this job without getting any further']);
  // and progress starts the count over
  db.tx(() => queue.enqueue('job_later', 'early', { maxAttempts: 2 }));
  for (let i = 0; i < MAX_IDLE_GIVEBACKS; i++) {
    queue.claim('bulk', ['early']);
    queue.recover();
  }
  const l = queue.claim('bulk', ['early'])!;
  db.tx(() => l.checkpoint());
  queue.recover();
  for (let i = 0; i < MAX_IDLE_GIVEBACKS; i++) {
    queue.claim('bulk', ['early']);
    queue.recover();
  }
  assert.is(queue.claim('bulk', ['early'])!.job.attempts, 1, 'every death since the progress given back');
  db.close();
});

S('a job or periodic task that did not get the write lock in time is counted (SQLITE_BUSY, RELIABILITY.md L0) and retried', async () => {
  const { db, clock } = fixture();
  const queue = createQueue(db, clock);
  db.tx(() => queue.enqueue('job_busy', 'busy'));
  const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY_SNAPSHOT' });
  const counted: string[] = [];
  const runners: Record<string, Runner> = {
    busy: {
      pruneFinishedAfterMs: null,
      async run() {
        throw busy();
      },
    },
  };
  const scheduler = createScheduler({ db, queue, log: quiet, runners, onBusy: (where) => counted.push(where) });
  scheduler.every('0 0 1 1 *', 'locked', () => {
    throw busy();
  });
  scheduler.start();
  scheduler.kick();
  await until('the job counted', () => counted.includes('job'), Boolean, 10_000);
  await scheduler.runNow('locked');
  await scheduler.stop();
  assert.equal(counted.sort(), ['job', 'task']);
  assert.is(queue.find('job_busy')!.status, 'pending', 'to be tried again');
  assert.is(queue.find('job_busy')!.attempts, 1);
  db.close();
});

S('stop() waits for start-up and periodic work, which sees `stopping` and ends; nothing runs after', async () => {
  const db = freshDb();
  const queue = createQueue(db, { now: () => Date.now() });
  const scheduler = createScheduler({ db, queue, log: quiet, runners: {} });
  const events: string[] = [];
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  scheduler.onStart('catch-up', async (ctl) => {
    events.push('start');
    started();
    while (!ctl.stopping) await new Promise((r) => setImmediate(r));
    db.raw.prepare('SELECT 1').get(); // still allowed: the database is not closed yet
    events.push('saw stopping');
  });
  scheduler.start();
  await running;
  await scheduler.stop();
  events.push('stopped');
  db.close();
  assert.equal(events, ['start', 'saw stopping', 'stopped']);
});

S('a small job in the express lane runs while long jobs hold every bulk slot', async () => {
  const db = freshDb();
  const queue = createQueue(db, { now: () => Date.now() });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let longRunning = 0;
  const runners: Record<string, Runner> = {
    long: {
      pruneFinishedAfterMs: null,
      async run(lease) {
        longRunning++;
        await gate;
        db.tx(() => lease.complete());
        return 'done';
      },
    },
    quick: {
      pruneFinishedAfterMs: null,
      async run(lease) {
        db.tx(() => lease.complete());
        return 'done';
      },
    },
  };
  const scheduler = createScheduler({ db, queue, log: quiet, runners });
  scheduler.start();
  db.tx(() => {
    for (let i = 0; i < LANE_SLOTS.bulk + 1; i++) queue.enqueue(`job_long${i}`, 'long');
  });
  scheduler.kick();
  await until('every bulk slot running', () => longRunning >= LANE_SLOTS.bulk, Boolean, 10_000);
  assert.is(longRunning, LANE_SLOTS.bulk, 'every bulk slot is taken');
  db.tx(() => queue.enqueue('job_small', 'quick', { lane: 'express' }));
  scheduler.kick();
  await until('job_small completed', () => queue.find('job_small')!.status === 'completed', Boolean, 10_000);
  assert.is(queue.find('job_small')!.status, 'completed', 'the small job did not wait');
  assert.is(queue.find('job_long0')!.status, 'processing');
  assert.is(queue.find(`job_long${LANE_SLOTS.bulk}`)!.status, 'pending', 'a third long job waits for a bulk slot');
  release();
  await scheduler.stop();
  db.close();
});

S('a periodic task never overlaps itself (D4 f)', async () => {
  const db = freshDb();
  const queue = createQueue(db, { now: () => Date.now() });
  const scheduler = createScheduler({ db, queue, log: quiet, runners: {} });
  let runs = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  scheduler.every('0 0 1 1 *', 'slow', async () => {
    runs++;
    await gate;
  });
  scheduler.start();
  const first = scheduler.runNow('slow');
  assert.is(await scheduler.runNow('slow'), false, 'a second run while the first goes on is skipped');
  release();
  assert.is(await first, true);
  assert.is(runs, 1);
  await scheduler.stop();
  db.close();
});

S('start() runs the tasks it is told to: `tasks` names the ones to run, `except` the ones left out; an unknown name is refused', async () => {
  const ran: string[] = [];
  const started = async (opts: Parameters<ReturnType<typeof createScheduler>['start']>[0]) => {
    const db = freshDb();
    const scheduler = createScheduler({ db, queue: createQueue(db, { now: () => Date.now() }), log: quiet, runners: {} });
    for (const name of ['inbox', 'sets', 'hooks']) scheduler.onStart(name, () => void ran.push(name));
    ran.length = 0;
    try {
      scheduler.start(opts);
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
      return [...ran].sort();
    } finally {
      await scheduler.stop();
      db.close();
    }
  };
  assert.equal(await started({}), ['hooks', 'inbox', 'sets']);
  assert.equal(await started({ except: ['inbox'] }), ['hooks', 'sets']);
  assert.equal(await started({ tasks: ['inbox', 'sets'], except: ['sets'] }), ['inbox']);
  const refused = await started({ except: ['inbx'] }).then(() => null, (err: Error) => err.message);
  assert.is(refused, 'no task named "inbx"');
});

S('chunk sizes follow the measured cost: about CHUNK_BUDGET_MS per chunk, growing at most 2× a chunk, within bounds', () => {
  const sizer = new ChunkSizer(100);
  assert.is(sizer.next(), 100);
  sizer.record(100, 1); // 0.01 ms per item: the budget would allow 3,000
  assert.is(sizer.next(), 200, 'grows at most 2×');
  for (let i = 0; i < 10; i++) sizer.record(sizer.next(), sizer.next() * 0.01);
  assert.is(sizer.next(), CHUNK_BUDGET_MS / 0.01);
  for (let i = 0; i < 20; i++) sizer.record(sizer.next(), sizer.next() * 1); // 1 ms per item
  assert.is(sizer.next(), 30, 'shrinks to the budget');
  sizer.record(5, 1000);
  assert.is(sizer.next(), 30, 'a short tail is ignored');
  for (let i = 0; i < 20; i++) sizer.record(sizer.next(), sizer.next() * 100);
  assert.is(sizer.next(), 20, 'never below the minimum');
});


S('an import chunk of wide rows stops at CHUNK_MAX_BYTES after its first row; ordinary rows fill the count; the first row is always taken', () => {
  const rowsOf = (...widths: number[]) => {
    let end = 0;
    return widths.map((w) => ({ endBytes: (end += w) }));
  };
  const mib = CHUNK_MAX_BYTES;
  const wide = rowsOf(...Array.from({ length: 40 }, () => mib / 2));
  assert.is(byteBoundedEnd(wide, 0, 20), 3, 'two half-MiB rows after the first');
  assert.is(byteBoundedEnd(wide, 37, 20), 40, 'up to the last row');
  const huge = rowsOf(mib, mib, mib);
  assert.is(byteBoundedEnd(huge, 0, 20), 2, 'one row of the limit after the first');
  assert.is(byteBoundedEnd(rowsOf(3 * mib, 3 * mib), 1, 20), 2, 'a row over the limit alone');
  const ordinary = rowsOf(...Array.from({ length: 6000 }, () => 150));
  assert.is(byteBoundedEnd(ordinary, 0, 5000), 5000, 'the largest chunk of ordinary rows is under the limit');
  assert.is(byteBoundedEnd(ordinary, 5990, 5000), 6000);
  assert.is(byteBoundedEnd(ordinary, 6000, 5000), 6000, 'nothing left: an empty chunk');
});

S('chunked deletes (purges, retention): one transaction a chunk, each sized by its own ChunkSizer, steps in order, resumable', async () => {
  const db = freshDb();
  db.raw.exec('CREATE TABLE a (n INTEGER); CREATE TABLE b (n INTEGER)');
  const fill = (table: string, rows: number) => db.raw.prepare(`WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ?) INSERT INTO ${table} SELECT n FROM s`).run(rows);
  const count = (table: string) => db.raw.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  const del = (table: string) => (n: number) => db.raw.prepare(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} LIMIT ?)`).run(n).changes;
  fill('a', 3000);
  fill('b', 250);
  // every chunk is a transaction of its own, and asks its step for the size its sizer gives
  const asked: [string, number][] = [];
  const commits: number[] = [];
  const step = (table: string) => (n: number) => {
    assert.ok(db.raw.inTransaction, 'inside the chunk transaction');
    const went = del(table)(n);
    if (went) asked.push([table, n]);
    return went;
  };
  const writes = db.writes;
  const out = await deleteInChunks(db, [step('a'), step('b')], { inTx: () => commits.push(db.writes) });
  assert.equal(out, { deleted: 3250, done: true });
  assert.equal([count('a'), count('b')], [0, 0]);
  assert.is(db.writes - writes, commits.length, 'one transaction per chunk, plus the last one that found nothing');
  const sizes = (table: string) => asked.filter(([t]) => t === table).map(([, n]) => n);
  const a = sizes('a');
  const b = sizes('b');
  assert.equal(asked.map(([t]) => t), [...a.map(() => 'a'), ...b.map(() => 'b')], 'a first, then b');
  // 3,000 rows in chunks that start at FIRST_DELETE_CHUNK and at most double: at least 5 of them
  // (100 + 200 + 400 + 800 + 1600), never one fixed chunk of 5,000 rows
  assert.is(a[0], FIRST_DELETE_CHUNK);
  assert.ok(a.length >= 5, `3,000 rows in ${a.length} chunks: ${a}`);
  for (let i = 1; i < a.length; i++) assert.ok(a[i]! <= 2 * a[i - 1]! && a[i]! >= 20, `chunk sizes ${a}`);
  assert.is(b[0], FIRST_DELETE_CHUNK, 'the next step starts with a sizer of its own');
  assert.ok(b.length >= 2);

  // rows that cost more than the budget allows: the next chunk shrinks to fit it (≥ 1 ms a row: ≤ 30 rows)
  fill('a', 200);
  const slow: number[] = [];
  await deleteInChunks(db, [
    (n) => {
      slow.push(n);
      const went = del('a')(n);
      const until = performance.now() + went;
      while (performance.now() < until); // 1 ms a row
      return went;
    },
  ]);
  assert.is(slow[0], FIRST_DELETE_CHUNK);
  assert.ok(slow[1]! <= CHUNK_BUDGET_MS, `after 100 rows of ≥ 1 ms: ${slow}`);
  assert.is(count('a'), 0);

  // stopping: ends between two chunks with the rest still there; running it again finishes
  fill('a', 1000);
  let looks = 0;
  const stopped = await deleteInChunks(db, [del('a')], { stopping: () => looks++ === 2 });
  assert.is(stopped.done, false);
  // the second chunk is sized by the first one's cost: fewer rows after a slow fsync
  assert.ok(stopped.deleted > FIRST_DELETE_CHUNK && stopped.deleted < 1000, `two chunks: ${stopped.deleted}`);
  assert.is(count('a'), 1000 - stopped.deleted);
  assert.equal(await deleteInChunks(db, [del('a')]), { deleted: 1000 - stopped.deleted, done: true });
  assert.is(count('a'), 0);

  // a chunk that throws (a lost lease) rolls back alone: what earlier chunks deleted stays deleted
  fill('a', 500);
  let calls = 0;
  const failed = await deleteInChunks(db, [
    (n) => {
      const went = del('a')(n);
      if (++calls === 2) throw new Error('lease lost');
      return went;
    },
  ]).catch((err: Error) => err);
  assert.instance(failed, Error);
  assert.is(count('a'), 500 - FIRST_DELETE_CHUNK);
  db.close();
});

S('the nightly jobs-prune deletes finished jobs of the kinds with a retention, in chunks; kinds whose records the API shows stay', async () => {
  const { db, clock } = fixture();
  const queue = createQueue(db, clock);
  const done: Runner['run'] = async () => 'done';
  const runners: Record<string, Runner> = {
    shown: { pruneFinishedAfterMs: null, run: done },
    purge: { pruneFinishedAfterMs: FINISHED_JOB_RETENTION_MS, run: done },
  };
  const scheduler = createScheduler({ db, queue, log: quiet, runners });
  const now = clock.now();
  const old = now - FINISHED_JOB_RETENTION_MS - 1;
  const recent = now - FINISHED_JOB_RETENTION_MS + 60_000;
  const ins = db.raw.prepare("INSERT INTO jobs (id, kind, status, run_after, attempts, max_attempts, created_at, updated_at) VALUES (?, ?, ?, 1, 1, 5, 1, ?)");
  db.tx(() => {
    for (let i = 0; i < 1000; i++) ins.run(`job_old_purge_${i}`, 'purge', i % 10 ? 'completed' : 'failed', old - i);
    for (let i = 0; i < 1000; i++) ins.run(`job_old_shown_${i}`, 'shown', i % 10 ? 'completed' : 'failed', old - i);
    ins.run('job_recent_purge', 'purge', 'completed', recent);
    ins.run('job_pending_purge', 'purge', 'pending', old);
    ins.run('job_processing_purge', 'purge', 'processing', old);
    ins.run('job_old_unknown', 'kind.of.an.older.version', 'completed', old); // no runner says anything: kept
  });
  const left = () => db.raw.prepare('SELECT id FROM jobs WHERE id NOT LIKE ? ORDER BY id').pluck().all('job_old_shown_%');
  const writes = db.writes;
  assert.ok(await scheduler.runNow('jobs-prune'));
  assert.equal(left(), ['job_old_unknown', 'job_pending_purge', 'job_processing_purge', 'job_recent_purge']);
  assert.is(db.raw.prepare("SELECT count(*) FROM jobs WHERE kind = 'shown'").pluck().get(), 1000, 'every finished job of a kind the API shows stays');
  assert.ok(db.writes - writes >= 3, `in chunks, one transaction each (${db.writes - writes})`);
  // each chunk reads the index of finished jobs of its kind, never the whole table
  const plan = createQueueRepo(db).explainDeleteFinishedJobs('purge', now, 100);
  assert.ok(plan.includes('SEARCH jobs USING INDEX jobs_finished (kind=? AND updated_at<?)'), plan.join(' | '));
  assert.not.ok(plan.some((p) => p.startsWith('SCAN jobs')), plan.join(' | '));
  // the finished job no runner keeps becomes due 30 days after it ended
  clock.advance(60_001);
  await scheduler.runNow('jobs-prune');
  assert.equal(left(), ['job_old_unknown', 'job_pending_purge', 'job_processing_purge']);
  db.close();
});

S.run();

const P = suite('finished jobs of the service');

P('after 30 days the purge jobs of a ledger and a webhook are gone; import and feed jobs stay, and the API still shows them', async () => {
  const t = await startApp();
  try {
    const w = await seedWorld(t);
    const clock = t.clock as ManualClock;
    const raw = t.rt.db.raw;
    const ledgerId = await createLedger(t, w.tokens.editor, w.orgId, 'kept imports');
    const imp = await addContacts(t, w.tokens.editor, w.orgId, ledgerId, [{ name: 'Ann Lee', company: 'Acme', linkedin: 'linkedin.com/in/prune-ann' }]);
    const fed = await t.call('POST', `${LEDGER}/feed`, { token: w.serviceAccounts.feed.token, raw: `${JSON.stringify({ linkedin: 'linkedin.com/in/prune-ann', name: 'Ann Lee', company: 'Globex' })}\n`, headers: { 'content-type': 'application/x-ndjson' } });
    expectStatus(fed, 202, 'feed');
    const doomed = await createLedger(t, w.tokens.editor, w.orgId, 'deleted');
    expectStatus(await t.call('DELETE', ledgerPath(w.orgId, doomed), { token: w.tokens.admin }), 204);
    const hook = await t.call('POST', `${LEDGER}/orgs/${w.orgId}/webhooks`, { token: w.tokens.admin, body: { url: 'https://hooks.example.test/', events: ['import.completed'] } });
    expectStatus(await t.call('DELETE', `${LEDGER}/orgs/${w.orgId}/webhooks/${hook.body.id}`, { token: w.tokens.admin }), 204);
    const jobs = () => raw.prepare<[], { kind: string; status: string }>('SELECT kind, status FROM jobs ORDER BY kind').all();
    await until('every job finished', jobs, (j) => j.length === 4 && j.every((x) => x.status === 'completed'), 60_000);
    assert.equal(jobs().map((j) => j.kind), ['feed', 'import', 'ledger.purge', 'webhook.purge']);

    await t.rt.scheduler.runNow('jobs-prune');
    assert.is(jobs().length, 4, 'nothing is due yet');
    clock.advance(FINISHED_JOB_RETENTION_MS + 60_000);
    await t.rt.scheduler.runNow('jobs-prune');
    assert.equal(jobs().map((j) => j.kind), ['feed', 'import'], 'the purge jobs are gone');
    // the kept records, as the API shows them (fresh tokens: the old ones expired with the jump)
    const editor = (await signIn(t, 'editor@a.test', PASSWORD)).accessToken;
    const feedToken = await clientToken(t, w.serviceAccounts.feed.id, w.serviceAccounts.feed.secret);
    const gotImport = await t.call('GET', `${ledgerPath(w.orgId, ledgerId)}/imports/${imp.id}`, { token: editor });
    expectStatus(gotImport, 200, 'the import');
    assert.is(gotImport.body.status, 'completed');
    const gotFeed = await t.call('GET', `${LEDGER}/feed/${fed.body.id}`, { token: feedToken });
    expectStatus(gotFeed, 200, 'the feed');
    assert.is(gotFeed.body.status, 'completed');
  } finally {
    await t.close();
  }
});

P.run();
