// The bulk thread (RELIABILITY.md L2 "use a worker thread with short transactions"): import and
// feed jobs run here, on a connection of their own, so that their chunk transactions — ~30 ms
// each, back to back for the whole job — never hold the main thread's event loop. Reads on the
// main thread go on meanwhile (WAL readers never wait for the writer); a main-thread write waits
// for at most the rest of one chunk, through the process's write lock (storage/write-lock.ts).
//
// The main thread's scheduler claims the jobs and hands each one over (client.ts); the runners here
// are the same import and feed runners, with what runs inside their transactions: the tracker
// (import-time matching, change detection) and the webhook outbox. Fencing is in SQL, on the
// lease's token, so a lease rebuilt here from the claimed job is as safe as the main thread's.
import { dirname } from 'node:path';
import { MessageChannel, parentPort, workerData } from 'node:worker_threads';
import { csvLinkOver, type StartCsvWorker } from '../csv/csv-worker-client.ts';
import { clockOf } from '../clock.ts';
import { LeaseLostError, createQueue, type ClaimedJob } from '../jobs/queue.ts';
import type { RunControl, Runner } from '../jobs/scheduler.ts';
import { createImportRunner, IMPORT_JOB } from '../ledger/import-runner.ts';
import { ledgerReposOn } from '../ledger/index.ts';
import { openDb, walSize } from '../storage/db.ts';
import { loadSqliteLibrary } from '../storage/sqlite-addon.ts';
import { WriteLock } from '../storage/write-lock.ts';
import type { FeedLog } from '../tracking/feed-files.ts';
import { createFeedRunner, FEED_JOB } from '../tracking/feed-runner.ts';
import { trackerOn } from '../tracking/index.ts';
import { createOutbox } from '../webhooks/outbox.ts';
import { createWebhooksRepo } from '../webhooks/webhooks-repo.ts';
import { PAUSED, runKey, sendable, type FromThread, type ThreadData, type ToThread } from './protocol.ts';

const data = workerData as ThreadData;
const port = parentPort!;
const post = (m: FromThread) => port.postMessage(m);

const clock = clockOf(data.time);
loadSqliteLibrary(dirname(data.file)); // the executable's, as the main thread placed it
const db = openDb(data.file, { check: false });
// Checkpoints are the checkpointer's (storage/checkpointer.ts), asked for between chunks.
db.setAutoCheckpoint(0);
db.shareWriteLock(new WriteLock(data.lock), 'thread');
db.onWrite = (bulk, failure) => post({ type: 'wrote', bulk, failure });
let nextRelief = 1;
const relieving = new Map<number, () => void>();
// Between two chunks the thread asks the main thread only when there is something to wait for: a
// backup that its writes would restart (client.ts pausedWhile), or a -wal past the bulk limit that
// the checkpointer must copy first. Asking every time would cost each chunk a wait for a turn of
// the main thread's event loop, which is busy with requests exactly when it matters.
db.setRelief(() =>
  Atomics.load(data.control, PAUSED) === 0 && walSize(data.file) < data.walLimitBytes
    ? Promise.resolve()
    : new Promise<void>((resolve) => {
        const id = nextRelief++;
        relieving.set(id, resolve);
        post({ type: 'relieve', id });
      }),
);

/** The CSV reader of an upload, started by the main thread and wired to this one by a channel. */
const startCsvWorker: StartCsvWorker = (task) => {
  const { port1, port2 } = new MessageChannel();
  port.postMessage({ type: 'read-csv', task, port: port2 } satisfies FromThread, [port2]);
  return csvLinkOver(port1);
};

// Webhooks are changed on the main thread: the outbox reads whether any is enabled again in each
// transaction that writes an event (currentTx).
const outbox = createOutbox({ repo: createWebhooksRepo(db), clock, baseUrl: data.baseUrl, kick: () => post({ type: 'kick-webhooks' }), currentTx: () => db.writes });
const { tracker, repos } = trackerOn(db, clock, data.dataDir, [(change, contact) => outbox.changed(change, contact)]);
const importRunner = createImportRunner({
  db,
  clock,
  ...ledgerReposOn(db, data.dataDir),
  onChunk: (counts, importId) => post({ type: 'import-chunk', importId, counts }),
  startCsvWorker,
  listeners: [(imp) => outbox.importFinished(imp)],
  matcher: (contacts) => tracker.matchImported(contacts),
  maxStoredRejections: data.maxStoredRejections,
});
/** Log lines go to the main thread's logger, an error as much of it as can be sent. */
const logAt =
  (level: 'warn' | 'error') =>
  (fields: object, msg: string): void => {
    const { err, ...rest } = fields as { err?: unknown };
    try {
      post({ type: 'log', level, msg, fields: rest, ...(err === undefined ? {} : { err: sendable(err) }) });
    } catch {
      post({ type: 'log', level, msg, fields: {}, ...(err === undefined ? {} : { err: sendable(err) }) }); // a field that cannot be sent
    }
  };
const log: FeedLog = { warn: logAt('warn'), error: logAt('error') };
const feedRunner = createFeedRunner({
  db,
  clock,
  log,
  feeds: repos.feeds,
  tracker,
  dataDir: data.dataDir,
  maxStoredRejections: data.maxStoredRejections,
  chunkDeadlineMs: data.feedChunkDeadlineMs,
  onChunk: (progress) => post({ type: 'feed-chunk', progress }),
});
/** The runners of the jobs the scheduler hands to this thread, by job kind. */
const runners: Record<string, Runner> = { [IMPORT_JOB]: importRunner, [FEED_JOB]: feedRunner };
const queue = createQueue(db, clock);

const shutdown = new AbortController();
const ctl: RunControl = {
  get stopping() {
    return shutdown.signal.aborted;
  },
};

async function run(job: ClaimedJob): Promise<void> {
  const key = runKey(job);
  try {
    const runner = runners[job.kind];
    if (!runner) throw new Error(`no runner for ${job.kind} jobs on the bulk thread`);
    const outcome = await runner.run(queue.adopt(job), ctl);
    post({ type: 'ended', key, outcome });
  } catch (err) {
    post({ type: 'failed', key, error: { ...sendable(err), leaseLost: err instanceof LeaseLostError } });
  }
}

port.on('message', (m: ToThread) => {
  switch (m.type) {
    case 'run':
      void run(m.job);
      break;
    case 'stop':
      shutdown.abort();
      break;
    case 'relieved':
      if (m.selfCheckpoint) db.setAutoCheckpoint(1000);
      relieving.get(m.id)?.();
      relieving.delete(m.id);
      break;
    case 'max-page-count':
      db.setMaxPageCount(m.pages);
      break;
    case 'close':
      db.raw.close();
      port.close();
      break;
  }
});
// its connection open and its modules loaded: a job handed to it from now on starts at once (client.ts warm())
post({ type: 'ready' });
