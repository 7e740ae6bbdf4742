// Builds the executable of one commit twice, as two different sites would, and compares the bytes
// (docs/operations.md, Verifying an executable). Not part of `npm test`: each build takes 30–60 s
// of both cores.
//
//   npm run check:reproducible -- [--ref <commit>] [--against <executable>] [--keep]
//   (the project's Node 22: node_modules/.bin/node scripts/check-reproducible.ts …)
//
// Each build is a fresh clone of the commit (default HEAD: uncommitted changes are not in it), in
// folders of different names and depths, with `npm run build`:
//   A  <tmp>/a/contact-ledger, node_modules a link to this project's node_modules (as a developer
//      here has it), TZ=UTC, LC_ALL=C, umask 022;
//   B  <tmp>/second/build-b, node_modules a copy of it (as `npm ci` leaves it: a real folder),
//      TZ=Pacific/Chatham, LC_ALL=C.UTF-8, umask 027, its own TMPDIR.
// --against <file>: builds B alone and compares with that executable (e.g. CI's dist/contact-ledger
// of the same commit, or one a site received). Prints the sha256 of each; when they differ, the
// number of bytes that differ, and which part of the embedded payload (scripts/sea-blob.ts): the
// blob's main-script path, pkg's bootstrap, its manifest, or a packed file by name. Exit 0 when
// identical, 1 when not (the clones are then kept for a look), 2 on a usage error.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { differences } from './sea-blob.ts';

const root = join(import.meta.dirname, '..');

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: npm run check:reproducible -- [--ref <commit>] [--against <executable>] [--keep]\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
let ref = 'HEAD';
let against: string | undefined;
let keep = false;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--ref') ref = args[++i] ?? usage('--ref needs a commit');
  else if (a === '--against') against = resolve(args[++i] ?? usage('--against needs a file'));
  else if (a === '--keep') keep = true;
  else if (a === '--help' || a === '-h') {
    process.stdout.write('usage: npm run check:reproducible -- [--ref <commit>] [--against <executable>] [--keep]\n  (or node_modules/.bin/node scripts/check-reproducible.ts …)\n');
    process.exit(0);
  } else usage(`unknown argument ${a}`);
}
if (against && !existsSync(against)) usage(`${against} does not exist`);

function run(cmd: string, argv: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; inherit?: boolean } = {}): string {
  const r = spawnSync(cmd, argv, { cwd: opts.cwd ?? root, env: opts.env ?? process.env, encoding: 'utf8', stdio: ['ignore', opts.inherit ? 'inherit' : 'pipe', opts.inherit ? 'inherit' : 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed (${r.status ?? r.signal})${opts.inherit ? '' : `:\n${r.stdout}${r.stderr}`}`);
  return r.stdout ?? '';
}

const commit = run('git', ['rev-parse', '--verify', `${ref}^{commit}`]).trim();
const nodeModules = realpathSync(join(root, 'node_modules'));
const base = mkdtempSync(join(tmpdir(), 'contact-ledger-repro-'));
const say = (text: string) => process.stdout.write(`check-reproducible: ${text}\n`);

interface Variant {
  name: string;
  dir: string;
  copyNodeModules: boolean;
  env: NodeJS.ProcessEnv;
  umask: number;
}

function build(v: Variant): string {
  say(`build ${v.name}: ${commit.slice(0, 12)} in ${v.dir}`);
  mkdirSync(join(v.dir, '..'), { recursive: true });
  run('git', ['clone', '--quiet', '--no-checkout', root, v.dir]);
  run('git', ['checkout', '--quiet', '--detach', commit], { cwd: v.dir });
  if (v.copyNodeModules) run('cp', ['-a', nodeModules, join(v.dir, 'node_modules')]);
  else symlinkSync(nodeModules, join(v.dir, 'node_modules'));
  const started = Date.now();
  const previous = process.umask(v.umask);
  try {
    run('npm', ['run', '--silent', 'build'], { cwd: v.dir, env: { ...process.env, ...v.env }, inherit: true });
  } finally {
    process.umask(previous);
  }
  say(`build ${v.name}: ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return join(v.dir, 'dist', 'contact-ledger');
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const variants: Variant[] = [
  { name: 'A', dir: join(base, 'a', 'contact-ledger'), copyNodeModules: false, env: { TZ: 'UTC', LC_ALL: 'C' }, umask: 0o022 },
  { name: 'B', dir: join(base, 'second', 'build-b'), copyNodeModules: true, env: { TZ: 'Pacific/Chatham', LC_ALL: 'C.UTF-8', TMPDIR: join(base, 'tmp-b') }, umask: 0o027 },
];
mkdirSync(join(base, 'tmp-b'), { recursive: true });
const started = Date.now();
let same = false;
try {
  const outputs = against ? [against, build(variants[1]!)] : variants.map(build);
  const [a, b] = outputs.map((f) => readFileSync(f));
  say(`${sha256(a!)}  ${outputs[0]}`);
  say(`${sha256(b!)}  ${outputs[1]}`);
  same = a!.equals(b!);
  if (same) {
    say(`identical (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  } else {
    say('the executables DIFFER:');
    for (const line of differences(a!, b!)) say(`  ${line}`);
  }
} finally {
  if (same && !keep) rmSync(base, { recursive: true, force: true });
  else say(`the clones are kept in ${base}`);
}
process.exit(same ? 0 : 1);
