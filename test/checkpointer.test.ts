// WAL checkpoints on their own thread (src/storage/checkpointer.ts) and bulk chunks
// (Db.bulkTx): the writer never checkpoints in COMMIT while the checkpointer
// runs, the -wal is checkpointed after writes, a bulk writer over the limit waits for a
// checkpoint, and SQLite's own checkpoints come back when the thread is gone.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { copyProgress } from '../src/storage/backup.ts';
import type { CheckpointResult } from '../src/storage/checkpoint-worker.ts';
import { startCheckpointer } from '../src/storage/checkpointer.ts';
import { openDb, type Db } from '../src/storage/db.ts';
import { tempDir, until } from './helpers.ts';

const C = suite('checkpointer');

function freshDb(): Db {
  const db = openDb(join(tempDir(), 'x.db'));
  db.raw.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
  return db;
}

const insertRows = (db: Db, n: number, bulk = false) => {
  const ins = db.raw.prepare('INSERT INTO t (v) VALUES (?)');
  const fn = () => {
    for (let i = 0; i < n; i++) ins.run('x'.repeat(500));
  };
  if (bulk) db.bulkTx(fn);
  else db.tx(fn);
};

C('the writer stops checkpointing in COMMIT; writes are checkpointed by the thread soon after', async () => {
  const db = freshDb();
  const cp = startCheckpointer(db, { pollMs: 20 });
  assert.is(db.raw.pragma('wal_autocheckpoint', { simple: true }), 0);
  insertRows(db, 200);
  await until('a complete checkpoint', () => cp.stats.checkpoints > 0 && cp.stats.last!.log > 0 && cp.stats.last!.log === cp.stats.last!.checkpointed, Boolean, 5_000);
  // the main file alone (no -wal) already holds the rows
  const copy = new Database(db.file, { readonly: true });
  assert.is(copy.prepare('SELECT count(*) FROM t').pluck().get(), 200);
  copy.close();
  await cp.close();
  assert.is(db.raw.pragma('wal_autocheckpoint', { simple: true }), 1000, 'SQLite checkpoints again once the thread is gone');
  db.close();
});

C('a big -wal is cut to zero by the thread once checkpointed, not by the writer\'s next COMMIT', async () => {
  const walSize = (db: Db) => statSync(`${db.file}-wal`).size;
  const db = freshDb();
  const cp = startCheckpointer(db, { pollMs: 60_000, truncateAboveBytes: 256 * 1024 });
  insertRows(db, 2000, true); // ~1 MiB of -wal
  assert.ok(walSize(db) > 256 * 1024);
  await cp.checkpoint();
  assert.is(walSize(db), 0, 'truncated by the thread');
  insertRows(db, 10); // the writer goes on in a fresh -wal
  assert.is(db.raw.prepare('SELECT count(*) FROM t').pluck().get(), 2010);
  await cp.close();
  db.close();
  // below the size, the -wal is left to SQLite's own reset by the writer, as before
  const small = freshDb();
  const cp2 = startCheckpointer(small, { pollMs: 60_000 });
  insertRows(small, 200, true);
  const before = walSize(small);
  await cp2.checkpoint();
  assert.is(walSize(small), before, 'a small -wal is not truncated by the thread');
  await cp2.close();
  small.close();
});

C('the thread cuts the -wal only under the process\'s write lock: not while a writer holds it, at the next checkpoint after', async () => {
  const walSize = (db: Db) => statSync(`${db.file}-wal`).size;
  const db = freshDb();
  const cp = startCheckpointer(db, { pollMs: 60_000, truncateAboveBytes: 256 * 1024 });
  insertRows(db, 2000, true);
  const big = walSize(db);
  const lock = db.processWriteLock();
  lock.acquire('main', 1000); // as a main-thread transaction holds it
  try {
    const r = await cp.checkpoint();
    assert.equal([r.checkpointed, r.truncated], [r.log, false], 'every frame copied, the -wal not cut while the lock is held');
    assert.is(walSize(db), big);
  } finally {
    lock.release('main');
  }
  const r = await cp.checkpoint();
  assert.is(r.truncated, true);
  assert.is(walSize(db), 0);
  insertRows(db, 10); // the main connection's transactions take the lock the thread shares
  assert.is(db.raw.prepare('SELECT count(*) FROM t').pluck().get(), 2010);
  await cp.close();
  db.close();
});

C('during an online backup from the writer connection a checkpoint copies but does not cut the -wal, which would start the backup over; after it, it does', async () => {
  const walSize = (db: Db) => statSync(`${db.file}-wal`).size;
  const db = freshDb();
  const cp = startCheckpointer(db, { pollMs: 60_000, truncateAboveBytes: 256 * 1024 });
  insertRows(db, 8000, true); // ~4 MiB: dozens of 100-page steps
  const big = walSize(db);
  /** A backup in 100-page steps with a checkpoint after its second step, the copy waiting until it ended. */
  const backupWithCheckpoint = async () => {
    const progress = copyProgress();
    let mid: CheckpointResult | undefined;
    let steps = 0;
    await db.raw.backup(join(tempDir(), 'copy.db'), {
      progress: ({ totalPages, remainingPages }) => {
        progress.step(totalPages, remainingPages);
        if (++steps === 2) void cp.checkpoint().then((r) => (mid = r));
        return steps >= 2 && !mid ? 0 : 100;
      },
    });
    return { restarts: progress.restarts, mid: mid! };
  };
  const held = await cp.whileBackingUp(backupWithCheckpoint);
  assert.equal([held.mid.checkpointed, held.mid.truncated, held.restarts], [held.mid.log, false, 0], 'every frame copied, the -wal left as it was, the backup never started over');
  assert.ok(big > 256 * 1024);
  // right after the backup the thread cuts it, unasked (not the writer's next COMMIT, on the event loop)
  await until('the -wal cut after the backup', () => walSize(db), (n) => n === 0, 5_000);
  // what the hold prevents: the same backup without it starts over
  insertRows(db, 8000, true);
  const bare = await backupWithCheckpoint();
  assert.equal([bare.mid.truncated, bare.restarts], [true, 1]);
  await cp.close();
  db.close();
});

C('bulkTx commits durably (synchronous=FULL) and rolls back whole when it throws', () => {
  const db = freshDb();
  let inside: unknown;
  db.bulkTx(() => {
    inside = db.raw.pragma('synchronous', { simple: true });
  });
  assert.is(inside, 2);
  assert.throws(() =>
    db.bulkTx(() => {
      insertRows(db, 1);
      throw new Error('boom');
    }),
  );
  assert.is(db.raw.pragma('synchronous', { simple: true }), 2);
  assert.is(db.raw.prepare('SELECT count(*) FROM t').pluck().get(), 0, 'rolled back');
  db.close();
});

C('a bulk writer past the limit waits for a checkpoint; the next commit starts the -wal over', async () => {
  const db = freshDb();
  const cp = startCheckpointer(db, { bulkLimitBytes: 256 * 1024, pollMs: 60_000 });
  insertRows(db, 10, true);
  const before = cp.stats.checkpoints;
  await db.relieve();
  assert.is(cp.stats.checkpoints, before, 'a small -wal: no wait, no checkpoint');
  for (let i = 0; i < 20; i++) insertRows(db, 100, true); // ~1 MiB of pages
  assert.ok(cp.walBytes() > 256 * 1024);
  await db.relieve();
  assert.is(cp.stats.checkpoints, before + 1);
  assert.is(cp.stats.last!.checkpointed, cp.stats.last!.log, 'every frame copied');
  const size = cp.walBytes();
  insertRows(db, 1, true);
  assert.ok(cp.walBytes() <= size, 'the -wal was reused from its start, not appended to');
  await cp.close();
  db.close();
});

C('without its thread the writer checkpoints by itself again, relieve() does not wait, and a write lock it held is free', async () => {
  const db = freshDb();
  const failures: Error[] = [];
  const crashing = join(tempDir(), 'crash.mjs');
  // a thread that dies at once, holding the process's write lock as in the middle of a TRUNCATE
  writeFileSync(crashing, "import { workerData } from 'node:worker_threads';\nAtomics.store(workerData.lock, 0, 3);\nprocess.exit(3);\n");
  const cp = startCheckpointer(db, { bulkLimitBytes: 1024, pollMs: 60_000, onFailure: (e) => failures.push(e), workerFile: crashing });
  await until('the failure to be noticed', () => failures.length > 0, Boolean, 5_000);
  assert.is(db.raw.pragma('wal_autocheckpoint', { simple: true }), 1000);
  insertRows(db, 100, true); // LockTimeoutError if the lock stayed taken
  await db.relieve();
  assert.match(failures[0]!.message, /exited with code 3/);
  assert.is(db.raw.prepare('SELECT count(*) FROM t').pluck().get(), 100);
  await cp.close();
  db.close();
});

C.run();
