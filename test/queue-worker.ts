// A job-queue worker in a process of its own, for test/jobs.test.ts (RELIABILITY.md D4 c): opens
// the database file given in QUEUE_DB through the project's storage (a connection of its own) and,
// once told "go" on stdin, claims jobs of the bulk lane through the real queue until none is left
// for it. For each job it writes a side effect (a row in the test's `effects` table) and its
// lease's checkpoint in one transaction, then completes the job — the shape of every real runner's
// chunk. A write refused by the fencing check (LeaseLostError) rolls back and the worker lets go
// of that job; a write that went through must have been made under the job's current lease token
// (checked inside the transaction). At the end it prints one JSON line: the jobs it claimed (with
// their lease tokens), those it lost (with the write that was refused) and any unfenced write.
//
// QUEUE_HOLD_MS: how long it holds a job, the other worker having the database meanwhile — before
// the chunk, or (every other job) between the chunk and the completion. QUEUE_CLOCK_OFFSET_MS
// moves this worker's clock ahead: past the lease length, every lease the other worker holds has
// run out as far as this one can tell, so it takes those jobs over.
//
// In production the data folder's lock keeps a second server off the database; the queue must not
// rely on it, so the workers open the file directly (openDb), without the lock.
import { createQueue, LeaseLostError } from '../src/jobs/queue.ts';
import { openDb } from '../src/storage/db.ts';

const name = process.env.QUEUE_WORKER ?? 'worker';
const offset = Number(process.env.QUEUE_CLOCK_OFFSET_MS ?? 0);
const hold = Number(process.env.QUEUE_HOLD_MS ?? 0);
const db = openDb(process.env.QUEUE_DB!, { check: false });
const queue = createQueue(db, { now: () => Date.now() + offset });
const effect = db.raw.prepare('INSERT INTO effects (job_id, token, worker) VALUES (?, ?, ?)');
const tokenNow = db.raw.prepare<[string], number>('SELECT lease_token FROM jobs WHERE id = ?').pluck();
const claimed: [string, number][] = [];
/** Writes that went through although the job's lease token was no longer this worker's: must be none. */
const unfenced: string[] = [];
/** Inside a write transaction (it holds the write lock, so this read is current): is the lease still ours? */
const probe = (id: string, token: number) => {
  if (tokenNow.get(id) !== token) unfenced.push(id);
};
const lost: [string, 'chunk' | 'complete'][] = [];

process.stdout.write('ready\n');
await new Promise((resolve) => process.stdin.once('data', resolve));
for (;;) {
  const lease = queue.claim('bulk');
  if (!lease) break;
  const { id, token } = lease.job;
  claimed.push([id, token]);
  const pause = () => new Promise((resolve) => setTimeout(resolve, hold));
  const early = claimed.length % 2 === 0;
  if (early) await pause();
  let stage: 'chunk' | 'complete' = 'chunk';
  try {
    db.tx(() => {
      effect.run(id, token, name);
      lease.checkpoint();
      probe(id, token);
    });
    stage = 'complete';
    if (!early) await pause();
    db.tx(() => {
      lease.complete();
      probe(id, token);
    });
  } catch (err) {
    if (!(err instanceof LeaseLostError)) throw err;
    lost.push([id, stage]);
  }
}
db.close();
process.stdout.write(`${JSON.stringify({ claimed, lost, unfenced })}\n`);
