// Helpers of the operator-command tests (test/cli-ops.test.ts, test/cli-backup.test.ts): the
// commands in this process or as child processes, servers as children, and files as a killed
// server leaves them.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli } from '../src/cli/index.ts';
import { ID, LEDGER, request, tempDir } from './helpers.ts';
import { baseEnv, MAIN, serve, type Running } from './child-server.ts';

export const EMAIL = 'ops@example.com';
export const PASSWORD = 'operator passphrase 1';
export const COMMANDS = ['serve', 'init', 'user', 'migrate', 'compact', 'backup', 'restore', 'import', 'feed', 'keys', 'version', 'licenses'];

/** The command in this process (runCli is what main.ts runs): for checks where no signal or crash matters. */
export async function cli(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const status = await runCli(args, { out: (l) => out.push(l), err: (l) => err.push(l), write: (t) => err.push(t), env: { ...baseEnv, ...env }, isTTY: false });
  return { status, stdout: out.map((l) => `${l}\n`).join(''), stderr: err.map((l) => `${l}\n`).join('') };
}

/** The command as a child process, as operators run it. */
export function run(args: string[], env: Record<string, string> = {}, input?: string) {
  return spawnSync(process.execPath, [MAIN, ...args], { env: { ...baseEnv, ...env }, encoding: 'utf8', timeout: 60_000, ...(input !== undefined ? { input } : {}) });
}

/** The same without blocking this process, for while a server child is talked to (keep-alive sockets stay serviced). */
export function runAsync(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [MAIN, ...args], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout!.on('data', (d: Buffer) => (stdout += d));
    c.stderr!.on('data', (d: Buffer) => (stderr += d));
    c.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

/**
 * Runs `sql` on the database `live` in WAL mode (as the server opens it) with checkpoints off, and
 * copies the file and its -wal to a new folder before closing it — what a server killed before a
 * checkpoint leaves: committed writes only in the -wal. Returns the copy's path (its -wal beside it).
 */
export function copyWithWritesInWal(live: string, sql: string): string {
  const db = new Database(live);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec(sql);
  const copy = join(tempDir(), 'copy.db');
  copyFileSync(live, copy);
  copyFileSync(`${live}-wal`, `${copy}-wal`);
  db.close();
  return copy;
}

export const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

export function csv(rows: number): string {
  const lines = ['name,company,referenceId'];
  for (let i = 1; i <= rows; i++) lines.push(`Person ${i},Company ${i % 50},ref-${i}`);
  return `${lines.join('\n')}\n`;
}

/** Signs in to a running child server and returns a caller bound to it. */
export async function client(s: Running, email = EMAIL, password = PASSWORD) {
  const base = `http://127.0.0.1:${s.port}`;
  const r = await request(base, 'POST', `${ID}/session`, { body: { grantType: 'password', email, password } });
  assert.is(r.status, 200, r.text);
  const token = r.body.accessToken as string;
  return async (method: string, path: string, opts: Parameters<typeof request>[3] = {}) => {
    // as a client should: a large body shed while the server is overloaded (503 + Retry-After, as a
    // busy CI machine makes it) is sent again when the server says
    for (let tries = 1; ; tries++) {
      const res = await request(base, method, path, { token, ...opts });
      const after = Number(res.headers.get('retry-after'));
      if (res.status !== 503 || !after || tries === 10) return res;
      await new Promise((resolve) => setTimeout(resolve, after * 1000));
    }
  };
}

const running = new Set<Running>();

/** A suite of operator-command tests: the servers a test started and left running are killed after it. */
export function operatorSuite(name: string) {
  const s = suite(name);
  s.after.each(() => {
    for (const r of running) r.child.kill('SIGKILL');
    running.clear();
  });
  return s;
}
export async function start(env: Record<string, string>, args: string[] = []): Promise<Running> {
  const s = await serve(env, args);
  running.add(s);
  return s;
}
/** A server that ended by itself (the test waited for its exit): nothing to kill after the test. */
export function ended(s: Running): void {
  running.delete(s);
}

export async function stop(s: Running): Promise<void> {
  s.child.kill('SIGTERM');
  assert.is(await s.exit, 0, s.stderr().slice(-2000));
  running.delete(s);
}

/** Polls an import job (every 50 ms: a tight loop would slow the import it waits for) until it ends. */
export async function jobEnd(call: Awaited<ReturnType<typeof client>>, path: string): Promise<any> {
  for (;;) {
    const job = (await call('GET', path)).body;
    if (job.status === 'completed' || job.status === 'failed') return job;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A fresh data folder served by a child, with an organization and a ledger in it. */
export async function serverWithLedger(more: Record<string, string> = {}) {
  const data = tempDir();
  const env = { CONTACT_LEDGER_DATA: data, CONTACT_LEDGER_ADMIN_EMAIL: EMAIL, CONTACT_LEDGER_ADMIN_PASSWORD: PASSWORD, ...more };
  const s = await start(env);
  const call = await client(s);
  const orgId = (await call('POST', `${ID}/orgs`, { body: { name: 'Ops' } })).body.id as string;
  const ledgerId = (await call('POST', `${LEDGER}/orgs/${orgId}/ledgers`, { body: { name: 'ops' } })).body.id as string;
  return { data, env, s, call, orgId, ledgerId, base: `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}` };
}
