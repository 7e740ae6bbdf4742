// The crash harness's child process (RELIABILITY.md D4 a, test/import-crash.test.ts): the part of
// the server that imports run on, and nothing else. It opens the data folder as `serve` does
// (openStorage: the folder's lock, the checked connection, migrations; the WAL checkpointer; the
// queue's recovery sweep when the scheduler starts) and runs imports on the real bulk thread, the real
// queue and scheduler until no import job is left, then shuts down as the server does and exits 0.
// Without the HTTP stack, identity and the other services it starts in a fraction of the server's
// time, so the parent can SIGKILL it dozens of times in one test.
//
// Environment: CONTACT_LEDGER_DATA (the data folder), WAL_LIMIT_BYTES (the checkpointer's bulk
// limit: small, so that kills also land while the -wal is being checkpointed), WAIT_FOR_GO.
import { systemClock } from '../src/clock.ts';
import { loadConfig } from '../src/config.ts';
import { createQueue } from '../src/jobs/queue.ts';
import { createScheduler, type Runner } from '../src/jobs/scheduler.ts';
import { createImportRunner, IMPORT_JOB } from '../src/ledger/import-runner.ts';
import { ledgerReposOn } from '../src/ledger/index.ts';
import { createLogger } from '../src/log.ts';
import { createBulkThread } from '../src/bulk-thread/client.ts';
import { startCheckpointer } from '../src/storage/checkpointer.ts';
import { removeStrayUploads } from '../src/runtime.ts';
import { openStorage } from '../src/storage/storage.ts';

// Started ahead of time by the parent, it has loaded its modules by now and waits for a line on
// stdin before it touches the data folder: a restart then costs only what the server's would
// after loading (WAIT_FOR_GO=1).
if (process.env.WAIT_FOR_GO) await new Promise((resolve) => process.stdin.once('data', resolve));
const config = loadConfig(process.env);
const clock = systemClock;
const log = createLogger('warn');
const storage = await openStorage(config, log, clock);
const { db } = storage;
const checkpointer = startCheckpointer(db, {
  bulkLimitBytes: Number(process.env.WAL_LIMIT_BYTES ?? 1024 * 1024),
  onFailure: (err) => log.error({ err }, 'checkpointer failed'),
});
const queue = createQueue(db, clock);
// The one thing added for the parent: a line on stdout when a job committed its first chunk in
// this process (the thread reports each chunk after it committed), and one when a job's run ended.
const say = (msg: string, job: string) => process.stdout.write(`${JSON.stringify({ msg, job })}\n`);
const announced = new Set<string>();
// Imports run on the bulk thread, as in the server (src/bulk-thread).
const thread = createBulkThread({
  db,
  clock,
  dataDir: config.dataDir,
  baseUrl: config.baseUrl,
  log,
  onImportChunk: (_counts, id) => {
    if (announced.has(id)) return;
    announced.add(id);
    say('progress', id);
  },
  onFeedChunk: () => undefined,
  onDeliveries: () => undefined,
});
const repos = ledgerReposOn(db, config.dataDir);
// as the server does at start: a kill between a job's last commit and its file's removal leaves the file
removeStrayUploads(config.dataDir, repos.imports.listReferencedFiles());
const runner = createImportRunner({
  db,
  clock,
  ...repos,
});
const observed: Runner = {
  ...runner,
  async run(lease, ctl) {
    try {
      return await thread.run(lease, ctl);
    } finally {
      setImmediate(() => say('ran', lease.job.id));
    }
  },
};
const scheduler = createScheduler({ db, queue, log, runners: { [IMPORT_JOB]: observed } });
scheduler.start();

// Done when no job waits or runs (a job in its retry backoff still counts as waiting).
await new Promise<void>((resolve) => {
  const timer = setInterval(() => {
    if (queue.depth().length === 0) {
      clearInterval(timer);
      resolve();
    }
  }, 5);
});
await scheduler.stop();
await thread.close();
await checkpointer.close();
storage.close();
process.stdout.write('{"msg":"imports done"}\n');
