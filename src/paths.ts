import { join, resolve } from 'node:path';

/**
 * Where the files that ship with the program live. In development that is the repository; the
 * executable's build replaces this module with one that points into its snapshot.
 */
const root = resolve(import.meta.dirname, '..');

export const paths = {
  root,
  migrations: join(root, 'sql', 'migrations'),
  web: join(root, 'web', 'dist'),
  bcryptWorker: join(root, 'src', 'identity', 'bcrypt-worker.ts'),
  csvWorker: join(root, 'src', 'csv', 'csv-worker.ts'),
  checkpointWorker: join(root, 'src', 'storage', 'checkpoint-worker.ts'),
};
