// The import thread (RELIABILITY.md L2 "use a worker thread with short transactions"): import jobs
// run here, on a connection of their own, so that their chunk transactions — ~30 ms each, back to
// back for the whole import — never hold the main thread's event loop. Reads on the main thread go
// on meanwhile (WAL readers never wait for the writer); a main-thread write waits for at most the
// rest of one chunk, through the process's write lock (storage/write-lock.ts).
//
// The main thread's scheduler claims the jobs and hands each one over (client.ts); the runner here
// is the same import runner, with what runs inside an import's transactions: the import-time
// matcher of change tracking and the webhook outbox. Fencing is in SQL, on the lease's token, so a
// lease rebuilt here from the claimed job is as safe as the main thread's.
import { MessageChannel, parentPort, workerData } from 'node:worker_threads';
import { csvLinkOver, type StartCsvWorker } from '../csv/csv-worker-client.ts';
import { clockOf } from '../clock.ts';
import { LeaseLostError, createQueue } from '../jobs/queue.ts';
import type { RunControl } from '../jobs/scheduler.ts';
import { createImportRunner } from '../ledger/import-runner.ts';
import { ledgerReposOn } from '../ledger/index.ts';
import { openDb } from '../storage/db.ts';
import { WriteLock } from '../storage/write-lock.ts';
import { trackerOn } from '../tracking/index.ts';
import { createOutbox } from '../webhooks/outbox.ts';
import { createWebhooksRepo } from '../webhooks/webhooks-repo.ts';
import { runKey, type FromThread, type ThreadData, type ToThread } from './protocol.ts';

const data = workerData as ThreadData;
const port = parentPort!;
const post = (m: FromThread) => port.postMessage(m);

const clock = clockOf(data.time);
const db = openDb(data.file, { check: false });
// Checkpoints are the checkpointer's (storage/checkpointer.ts), asked for between chunks.
db.setAutoCheckpoint(0);
db.shareWriteLock(new WriteLock(data.lock), 'thread');
db.onWrite = (bulk, failure) => post({ type: 'wrote', bulk, failure });
let nextRelief = 1;
const relieving = new Map<number, () => void>();
db.setRelief(
  () =>
    new Promise<void>((resolve) => {
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

const outbox = createOutbox({ repo: createWebhooksRepo(db), clock, baseUrl: data.baseUrl, kick: () => post({ type: 'kick-webhooks' }) });
const { tracker } = trackerOn(db, clock, [(change, contact) => outbox.changed(change, contact)]);
const runner = createImportRunner({
  db,
  clock,
  ...ledgerReposOn(db, data.dataDir),
  onChunk: (counts, importId) => post({ type: 'chunk', importId, counts }),
  startCsvWorker,
  // Webhooks are changed on the main thread: whether any is enabled is read again in each
  // transaction that may write to the outbox (one small query per chunk), never remembered.
  listeners: [
    (imp) => {
      outbox.refresh();
      outbox.importFinished(imp);
    },
  ],
  matcher: {
    current: (contacts) => {
      outbox.refresh();
      return tracker.matchImported(contacts);
    },
  },
});
const queue = createQueue(db, clock);

const shutdown = new AbortController();
const ctl: RunControl = {
  get stopping() {
    return shutdown.signal.aborted;
  },
};

async function run(job: Parameters<typeof queue.adopt>[0]): Promise<void> {
  const key = runKey(job);
  try {
    const outcome = await runner.run(queue.adopt(job), ctl);
    post({ type: 'ended', key, outcome });
  } catch (err) {
    const e = err as Error & { code?: unknown };
    post({
      type: 'failed',
      key,
      error: { message: e.message || String(err), stack: e.stack, code: typeof e.code === 'string' ? e.code : undefined, leaseLost: err instanceof LeaseLostError },
    });
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
