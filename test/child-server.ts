// The server as a child process, for tests where crashes, signals or the environment matter.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { HARNESSES, testBundle } from '../scripts/test-bundle.ts';
import { WORKERS } from '../src/paths.ts';

const bundle = await testBundle();
/** The bundled file of each entry named in `entries`, by that name. */
const bundled = <K extends string>(entries: Record<K, string>) => Object.fromEntries(Object.keys(entries).map((name) => [name, join(bundle, `${name}.mjs`)])) as Record<K, string>;
/**
 * The program as the tests start it: src/main.ts compiled as the executable's build compiles it
 * (scripts/test-bundle.ts), which starts in a fraction of the time its TypeScript takes.
 */
export const MAIN = join(bundle, 'main.mjs');
/** The program from its TypeScript source, as `npm start` runs it. */
export const SOURCE_MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
/** The worker threads of src/paths.ts WORKERS, compiled alike, by the name `paths` gives them. */
export const WORKER_FILES = bundled(WORKERS);
/** The tests' own child programs (test/import-worker.ts, test/queue-worker.ts), compiled alike. */
export const HARNESS = bundled(HARNESSES);
// WEBHOOK_ALLOW_LOCAL: the tests' webhook receivers listen on 127.0.0.1
// NODE_COMPILE_CACHE: the V8 compile cache that scripts/run-tests.ts gives the test files, shared
export const baseEnv = {
  PATH: process.env.PATH ?? '',
  BCRYPT_COST: '4',
  CONTACT_LEDGER_TEST_WEAK_HASHING: '1',
  HOME: process.env.HOME ?? '/tmp',
  WEBHOOK_ALLOW_LOCAL: 'true',
  CONTACT_LEDGER_CHECK_ANSWERS: 'true',
  ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
};

export interface Running {
  child: ChildProcess;
  port: number;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

/** Starts `contact-ledger serve` (from `main`, as another user with `as`: root only) and resolves once it logs that it listens. */
export function serve(env: Record<string, string>, args: string[] = [], main = MAIN, as?: { uid: number; gid: number }): Promise<Running> {
  const child = spawn(process.execPath, [main, ...args], { env: { ...baseEnv, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...as });
  let out = '';
  let err = '';
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"port":(\d+),.*"msg":"listening"/.exec(out);
      if (m) resolve({ child, port: Number(m[1]), stdout: () => out, stderr: () => err, exit });
    });
    void exit.then((code) => reject(new Error(`exited with ${code} before listening: ${err} ${out}`)));
  });
}

