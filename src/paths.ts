import { join, resolve } from 'node:path';

/**
 * Where the files that ship with the program live. In development that is the repository; the
 * executable's build (scripts/build.ts) replaces this module with one that points into its
 * snapshot, and bundles every entry of WORKERS as a worker script of its own.
 */
const root = resolve(import.meta.dirname, '..');

/** Worker-thread entry points, by the name `paths` gives them: their sources in the repository. */
export const WORKERS = {
  bcryptWorker: 'src/identity/bcrypt-worker.ts',
  csvWorker: 'src/csv/csv-worker.ts',
  checkpointWorker: 'src/storage/checkpoint-worker.ts',
  bulkThread: 'src/bulk-thread/worker.ts',
  jsonParserWorker: 'src/http/json-parser-worker.ts',
} as const;

/** The licenses of the third-party software in the executable, written by its build (scripts/build.ts). */
export const NOTICES_FILE = 'THIRD-PARTY-NOTICES.txt';

export const paths = {
  root,
  migrations: join(root, 'sql', 'migrations'),
  web: join(root, 'web', 'dist'),
  /** In a source checkout: the copy the last `npm run build` wrote. */
  notices: join(root, 'dist', 'bundle', NOTICES_FILE),
  /**
   * The SQLite library inside the executable, which src/storage/sqlite-addon.ts places in the data
   * folder and loads; from source none: better-sqlite3 loads its own from node_modules.
   */
  sqliteAddon: undefined as string | undefined,
  ...(Object.fromEntries(Object.entries(WORKERS).map(([name, source]) => [name, join(root, source)])) as Record<keyof typeof WORKERS, string>),
};
