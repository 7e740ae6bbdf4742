// Runs every test file (test/**/*.test.ts) in its own Node 22 process, two at a time, and prints
// one summary line "N passed, N failed" that .ci/run adds up. `npm test -- <word>` runs only the
// files whose path contains <word>. A file that crashes or hangs counts as one failure.
// With --e2e it runs the browser tests instead (test/e2e/*.e2e.ts, one at a time: each drives Chromium).
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..');
const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 240_000);
// Files that need more than FILE_TIMEOUT_MS (the larger of the two applies), by a word of their path.
// import-crash: its crash harness restarts a worker up to 30 times (~2.5 s each on a busy machine)
// besides two tests that restart the server; alone it takes ~2.5 min, beside another file more.
const LONGER_FILE_TIMEOUT_MS: Record<string, number> = { 'import-crash': 480_000 };
const fileTimeoutMs = (file: string) =>
  Math.max(FILE_TIMEOUT_MS, ...Object.entries(LONGER_FILE_TIMEOUT_MS).map(([w, ms]) => (relative(root, file).includes(w) ? ms : 0)));

function findTests(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'fixtures' ? [] : findTests(p);
    return name.endsWith(e2e ? '.e2e.ts' : '.test.ts') ? [p] : [];
  });
}

const e2e = process.argv.includes('--e2e');
const filters = process.argv.slice(2).filter((a) => a !== '--e2e');
// Longest first, so the workers end together: by the durations of the last run on this machine
// (.cache/test-times.json), else the files known to be slow (child processes, big imports).
const TIMES = join(root, '.cache', e2e ? 'e2e-times.json' : 'test-times.json');
const SLOW = ['import-crash', 'cli-ops', 'cli-interrupt', 'cli-backup', 'cli.test', 'cli-data-folder', 'ledger-csv-import', 'webhooks-crash', 'authz-matrix', 'webhooks.test'];
let lastTimes: Record<string, number> = {};
try {
  lastTimes = JSON.parse(readFileSync(TIMES, 'utf8')) as Record<string, number>;
} catch {
  /* the first run on this machine */
}
const slowRank = (f: string) => SLOW.findIndex((w) => f.includes(w));
const weight = (f: string) => lastTimes[relative(root, f)] ?? (slowRank(f) >= 0 ? 1e9 - slowRank(f) : 0);
const files = findTests(join(root, 'test'))
  .sort()
  .filter((f) => filters.length === 0 || filters.some((w) => relative(root, f).includes(w)))
  .sort((a, b) => weight(b) - weight(a));

interface Result {
  file: string;
  passed: number;
  failed: number;
  ms: number;
  output: string;
  code: number | null;
}

// What a test file's process loads is compiled once, not in each process: the types of the
// repository's .ts files stripped (scripts/strip-types-cache.mjs) and every module's JavaScript
// compiled by V8 (Node's compile cache, which the children that test/child-server.ts starts share).
const STRIP_TYPES_CACHE = pathToFileURL(join(root, 'scripts', 'strip-types-cache.mjs')).href;
const COMPILE_CACHE = process.env.NODE_COMPILE_CACHE || join(root, '.cache', 'node-compile-cache');
// Each state of a file adds an entry to both caches; entries written over a week ago go (one still
// in use is written again at its next load).
const CACHE_KEEP_MS = 7 * 24 * 3600_000;
function removeOldEntries(dir: string): void {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return; // no cache yet
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) removeOldEntries(path);
    else if (Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > CACHE_KEEP_MS) rmSync(path, { force: true });
  }
}
removeOldEntries(join(root, '.cache', 'strip-types'));
if (!process.env.NODE_COMPILE_CACHE) removeOldEntries(COMPILE_CACHE);

const strip = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

/** The files running, each the leader of its process group: a stop of the run (Ctrl-C) stops their groups too. */
const running = new Set<ChildProcess>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of running) {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    process.exit(130);
  });
}

function runFile(file: string): Promise<Result> {
  const started = Date.now();
  const timeoutMs = fileTimeoutMs(file);
  return new Promise((resolve) => {
    // A group of its own, killed whole: a process the file started (a server, a lock holder) and
    // left behind when it was killed at its timeout held the output pipe open, and the run waited
    // for it for ever (a session's npm test, the file's grandchild alive half an hour later).
    const child = spawn(process.execPath, ['--import', STRIP_TYPES_CACHE, file], { cwd: root, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', NODE_COMPILE_CACHE: COMPILE_CACHE }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    running.add(child);
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* the group is gone */
      }
    };
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => {
      output += `\n[run-tests] ${relative(root, file)} did not finish within ${timeoutMs} ms; killed\n`;
      killGroup();
    }, timeoutMs);
    // the file ended, its output still open after a while: what it started and left holds it
    let lingering: NodeJS.Timeout | undefined;
    child.on('exit', () => {
      lingering = setTimeout(() => {
        output += `\n[run-tests] ${relative(root, file)} ended, leaving processes that hold its output; killed\n`;
        killGroup();
      }, 10_000);
    });
    child.on('close', (code) => {
      running.delete(child);
      clearTimeout(timer);
      clearTimeout(lingering);
      const text = strip(output);
      const total = Number(/Total:\s+(\d+)/.exec(text)?.[1] ?? 0);
      const passed = Number(/Passed:\s+(\d+)/.exec(text)?.[1] ?? 0);
      let failed = total - passed;
      if (code !== 0 && failed === 0) failed = 1; // crashed, hung or failed outside a test
      resolve({ file, passed, failed, ms: Date.now() - started, output: text, code });
    });
  });
}

const queue = [...files];
const results: Result[] = [];
const workers = Array.from({ length: Math.min(e2e ? 1 : Number(process.env.TEST_CONCURRENCY ?? availableParallelism()), 4, queue.length) }, async () => {
  for (let f = queue.shift(); f; f = queue.shift()) {
    const r = await runFile(f);
    results.push(r);
    const mark = r.failed ? '✗' : '✓';
    process.stdout.write(`${mark} ${relative(root, r.file)}: ${r.passed} passed, ${r.failed} failed (${(r.ms / 1000).toFixed(1)} s)\n`);
    if (r.failed || process.env.TEST_VERBOSE) process.stdout.write(`${r.output.trim()}\n\n`);
  }
});
await Promise.all(workers);

try {
  mkdirSync(dirname(TIMES), { recursive: true });
  writeFileSync(TIMES, JSON.stringify({ ...lastTimes, ...Object.fromEntries(results.map((r) => [relative(root, r.file), r.ms])) }, null, 1));
} catch {
  /* a read-only checkout: order by the built-in list next time too */
}

const passed = results.reduce((n, r) => n + r.passed, 0);
const failed = results.reduce((n, r) => n + r.failed, 0);
if (files.length === 0) process.stdout.write('no test files matched\n');
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exitCode = failed > 0 || files.length === 0 ? 1 : 0;
