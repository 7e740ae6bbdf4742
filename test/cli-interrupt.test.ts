// The commands that run a job in the data folder (`import`, `feed`, with no server running) stopped
// by SIGINT or SIGTERM: the job is handed back with its progress, the lock released, the -wal
// checkpointed, and the next server finishes the job.
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { tempDir, until } from './helpers.ts';
import { baseEnv, MAIN } from './child-server.ts';
import { csv, operatorSuite, serverWithLedger, start, stop } from './operator-helpers.ts';

const C = operatorSuite('commands interrupted');

/**
 * Runs the command, sends it `sig` once `started` matches its stderr, and checks what it leaves: exit
 * 1 with `said` (its groups: the job id, the progress it reports), no lock, an empty -wal, the job
 * pending with no lease, its progress (`progressSql` of its id) between none and `total` and as
 * reported. Returns the job id.
 */
async function interrupt(data: string, env: Record<string, string>, args: string[], sig: 'SIGINT' | 'SIGTERM' | 'SIGHUP', started: RegExp, said: RegExp, progressSql: string, total: number): Promise<string> {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d));
  const exit = once(child, 'exit');
  try {
    await until('work under way', () => started.test(err) || child.exitCode !== null, undefined, 90_000);
  } finally {
    child.kill(sig);
  }
  const [code] = await exit;
  assert.is(code, 1, `${sig}: ${err}`);
  const m = said.exec(err);
  assert.ok(m, `${sig}: ${err}`);
  assert.not.ok(existsSync(join(data, 'contact-ledger.lock')), `${sig}: the lock is released`);
  const wal = join(data, 'contact-ledger.db-wal');
  assert.ok(!existsSync(wal) || statSync(wal).size === 0, `${sig}: the -wal is checkpointed`);
  const id = m![1]!;
  const db = new Database(join(data, 'contact-ledger.db'), { readonly: true });
  try {
    const job = db.prepare('SELECT status, lease_owner FROM jobs WHERE id = ?').get(id);
    assert.equal(job, { status: 'pending', lease_owner: null }, `${sig}: handed back`);
    const kept = db.prepare(progressSql).pluck().get(id) as number;
    assert.ok(kept > 0 && kept < total, `${sig}: kept its progress (${kept})`);
    assert.is(Number(m![2]), kept, `${sig}: the progress it reports is what the job kept`);
  } finally {
    db.close();
  }
  return id;
}

/** Starts a server on the folder and waits until it has finished the jobs `ids`; returns the rows of `sql` (given the ids as JSON), one a job. */
async function finished(data: string, ids: string[], sql: string): Promise<unknown[]> {
  const s = await start({ CONTACT_LEDGER_DATA: data });
  try {
    const db = new Database(join(data, 'contact-ledger.db'), { readonly: true });
    try {
      const read = () => db.prepare(sql).all(JSON.stringify(ids)) as { status: string }[];
      return await until('the server finishes them', read, (rows) => rows.every((r) => r.status === 'completed' || r.status === 'failed'), 120_000);
    } finally {
      db.close();
    }
  } finally {
    await stop(s);
  }
}

C('import <file> with no server running: SIGINT, SIGTERM or SIGHUP (a closed terminal) hands the job back with its progress and releases the folder; the server finishes it, every row once', async () => {
  const { data, env, s, orgId, ledgerId } = await serverWithLedger();
  await stop(s);
  // enough rows that the signal, sent at the first progress line, lands well before the end
  const ROWS = 20_000;
  const ids: string[] = [];
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const sig of signals) {
    const file = join(tempDir(), `${sig}.csv`);
    writeFileSync(file, csv(ROWS).replaceAll(',ref-', `,${sig}-`)); // reference ids of its own: none a duplicate of the other file's
    const said = new RegExp(`(imp_[0-9a-z]+): interrupted after (\\d+) of ${ROWS} rows; the job keeps its progress and the server finishes it when it starts`);
    ids.push(await interrupt(data, env, ['import', orgId, ledgerId, file], sig, new RegExp(`imp_[0-9a-z]+: [1-9]\\d*/${ROWS}`), said, 'SELECT imported FROM import_jobs WHERE id = ?', ROWS));
  }
  const done = await finished(data, ids, 'SELECT j.status, i.imported, i.duplicates, i.invalid FROM json_each(?) e JOIN jobs j ON j.id = e.value JOIN import_jobs i ON i.id = j.id ORDER BY e.key');
  assert.equal(done, ids.map(() => ({ status: 'completed', imported: ROWS, duplicates: 0, invalid: 0 })));
  const db = new Database(join(data, 'contact-ledger.db'), { readonly: true });
  try {
    assert.is(db.prepare('SELECT count(*) FROM contacts WHERE ledger_id = ?').pluck().get(ledgerId), signals.length * ROWS, 'every row once');
  } finally {
    db.close();
  }
});

C('feed <file> with no server running: SIGINT or SIGTERM hands the job back with its progress (as import does) and releases the folder; the server finishes it', async () => {
  // A tester's case: the feed exited at once (130/143), leaving the lock, the -wal not checkpointed
  // and its job processing under its lease.
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: 'ops@example.com', CONTACT_LEDGER_ADMIN_PASSWORD: 'a long passphrase 42' };
  const RECORDS = 20_000;
  const file = join(data, '..', 'many.jsonl');
  const lines: string[] = [];
  for (let i = 0; i < RECORDS; i++) lines.push(JSON.stringify({ email: `p${i}@x.test`, name: `Person ${i}`, company: `Co ${i % 50}`, title: 'Engineer' }));
  writeFileSync(file, `${lines.join('\n')}\n`);
  // an installation to feed (the command makes none)
  const init = spawn(process.execPath, [MAIN, 'init'], { env: { ...baseEnv, ...env }, stdio: 'ignore' });
  assert.equal(await once(init, 'exit'), [0, null]);
  const ids: string[] = [];
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    const said = /(feed_[0-9a-z]+): interrupted after (\d+) records; the job keeps its progress and the server finishes it when it starts/;
    ids.push(await interrupt(data, env, ['feed', file], sig, /many\.jsonl: \d+ records/, said, 'SELECT received FROM feed_jobs WHERE id = ?', RECORDS));
  }
  const done = await finished(data, ids, 'SELECT j.status, f.received FROM json_each(?) e JOIN jobs j ON j.id = e.value JOIN feed_jobs f ON f.id = j.id ORDER BY e.key');
  assert.equal(done, ids.map(() => ({ status: 'completed', received: RECORDS })));
});

C.run();
