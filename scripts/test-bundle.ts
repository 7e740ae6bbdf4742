// The program as the tests' child processes run it: src/main.ts, the worker-thread entries of
// src/paths.ts WORKERS and the tests' own child programs (HARNESSES) compiled by esbuild, as the
// executable's build compiles them (scripts/build.ts). Such a child starts in a fraction of the
// time Node takes to strip the types of src/'s ~150 TypeScript files (1.7 s of CPU for `version`
// from source), which every command, server and worker thread the tests start used to pay.
// - Split into shared chunks, so that a command loads only its own code and packages, as it does
//   from source (src/cli/commands.ts): a configuration error or `version` takes ~0.15 s of CPU,
//   against ~0.65 s when each entry was one module that imported every package of the server.
// - The packages bundled too, as in the executable, but for better-sqlite3 (its native addon stays
//   in node_modules): a server listens after ~1.0 s of CPU, against ~1.4 s when it resolved and
//   loaded ~300 package files from node_modules (each worker thread again).
//
// Built into .cache/test-bundle/<digest of the sources>/, once for each state of the sources: a
// test file run alone builds it when the sources changed (~1 s), and the files of one `npm test`
// share it. src/paths.ts is compiled with the repository as its root and the bundled workers
// beside main.mjs.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { WORKERS } from '../src/paths.ts';

const root = join(import.meta.dirname, '..');
const bundles = join(root, '.cache', 'test-bundle');
/** Child programs of the tests, bundled beside main.mjs: `<name>.mjs`. */
export const HARNESSES = { importWorker: 'test/import-worker.ts', queueWorker: 'test/queue-worker.ts' } as const;
/** Bundles of older sources are removed once they are this old (a test run may still use one). */
const KEEP_OLD_MS = 60 * 60_000;

/** Every file under `dir`, sorted. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();
}

/** A digest of what a bundle is made of: the sources, this script, and the packages' versions. */
function sourcesDigest(): string {
  const hash = createHash('sha256');
  const harnesses = Object.values(HARNESSES).map((f) => join(root, f));
  for (const file of [...filesUnder(join(root, 'src')), ...harnesses, join(root, 'package-lock.json'), import.meta.filename]) {
    hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * src/paths.ts as compiled into a bundle in `outdir`: its root the repository, its workers the
 * bundled ones beside main.mjs. Checked to have taken effect, so that a change to paths.ts cannot
 * leave the bundle looking for files beside itself.
 */
function bundlePaths(outdir: string): Plugin {
  const swaps: [RegExp, string][] = [
    [/const root = resolve\(import\.meta\.dirname, '\.\.'\);/, `const root = ${JSON.stringify(root)};`],
    [/\[name, join\(root, source\)\]/, `[name, join(${JSON.stringify(outdir)}, name + '.mjs')]`],
  ];
  return {
    name: 'bundle-paths',
    setup(b) {
      b.onLoad({ filter: /[\\/]src[\\/]paths\.ts$/ }, (args) => {
        let contents = readFileSync(args.path, 'utf8');
        for (const [pattern, replacement] of swaps) {
          if (!pattern.test(contents)) throw new Error(`scripts/test-bundle.ts: src/paths.ts no longer has ${pattern}; update the bundle's swaps`);
          contents = contents.replace(pattern, replacement);
        }
        return { contents, loader: 'ts' };
      });
    },
  };
}

/** The folder of the bundle of the sources as they are now (main.mjs, the workers, HARNESSES), built if there is none yet. */
export async function testBundle(): Promise<string> {
  const digest = sourcesDigest();
  const dir = join(bundles, digest);
  const main = join(dir, 'main.mjs');
  if (existsSync(main)) return dir;
  mkdirSync(bundles, { recursive: true });
  // built beside and renamed into place whole: test files starting at once may each build it
  const staging = join(bundles, `.${digest}.${process.pid}.partial`);
  rmSync(staging, { recursive: true, force: true });
  await build({
    absWorkingDir: root,
    entryPoints: { main: 'src/main.ts', ...WORKERS, ...HARNESSES },
    outdir: staging,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    // the packages bundled too, as in the executable, but for better-sqlite3 (its native addon)
    external: ['better-sqlite3'],
    // the packages written in CommonJS require Node's modules: give them Node's require
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    platform: 'node',
    target: 'node22',
    format: 'esm',
    splitting: true,
    plugins: [bundlePaths(dir)],
    logLevel: 'warning',
  });
  try {
    renameSync(staging, dir);
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(main)) throw err; // another process's rename came first: theirs is the same
  }
  removeOldBundles(digest);
  return dir;
}

function removeOldBundles(current: string): void {
  for (const name of readdirSync(bundles)) {
    if (name === current) continue;
    const path = join(bundles, name);
    try {
      if (Date.now() - statSync(path).mtimeMs > KEEP_OLD_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      /* removed by another process meanwhile */
    }
  }
}
