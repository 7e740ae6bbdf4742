import { join } from 'node:path';
import { DAY_MS, type Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Cursors } from '../cursor.ts';
import type { Audit } from '../identity/audit.ts';
import type { OrgsRepo } from '../identity/orgs-repo.ts';
import type { Queue } from '../jobs/queue.ts';
import { deleteInChunks } from '../jobs/chunk-pacing.ts';
import { rejectionsPruner } from '../jobs/rejections-retention.ts';
import type { Runner, Scheduler } from '../jobs/scheduler.ts';
import type { Logger } from '../log.ts';
import { everySeries, type MetricsRegistry } from '../ops/metrics.ts';
import { dataFiles } from '../storage/data-files.ts';
import type { Db } from '../storage/db.ts';
import { createContactService } from './contact-service.ts';
import { createContactsRepo } from './contacts-repo.ts';
import { createImportRunner, IMPORT_JOB, type ChunkCounts, type ImportListener } from './import-runner.ts';
import { createImportService } from './import-service.ts';
import { createImportsRepo } from './imports-repo.ts';
import { createLedgerService } from './ledger-service.ts';
import { createLedgersRepo } from './ledgers-repo.ts';
import type { LedgerDataOwner, LedgerReferrer, OrgDataOwner } from './model.ts';

export type LedgerModule = ReturnType<typeof createLedgerModule>;

/** Where uploads live: `<data>/uploads/<importId>.csv` while their job runs, `tmp/` while they arrive. */
export const uploadsDir = (dataDir: string) => join(dataDir, 'uploads');
export const uploadTmpDir = (dataDir: string) => join(dataDir, 'uploads', 'tmp');

/** The ledger's stores on a connection: this module's, and the bulk thread's own (`reader`: downloads' connection, default `db`). */
export function ledgerReposOn(db: Db, dataDir: string, reader: Db = db) {
  return { ledgers: createLedgersRepo(db), contacts: createContactsRepo(db, reader), imports: createImportsRepo(db, dataFiles(dataDir)) };
}

/** Wires the ledger service: repos → services and the job runners it contributes to the scheduler. */
export function createLedgerModule(d: {
  db: Db;
  /** A read-only connection for downloads (default: db). */
  reader?: Db;
  clock: Clock;
  log: Logger;
  config: Config;
  cursors: Cursors;
  queue: Queue;
  audit: Audit;
  orgs: OrgsRepo;
  kick: () => void;
  /** What other modules keep per ledger and per contact, removed with them. */
  owners?: LedgerDataOwner[];
  /** What other modules keep per organization, purged with it. */
  orgOwners?: OrgDataOwner[];
  /** What other modules keep that names a ledger, told when it is deleted. */
  referrers?: LedgerReferrer[];
  metrics: MetricsRegistry;
  /** Where import jobs run: the bulk thread's `run` (src/bulk-thread). */
  runImport: Runner['run'];
}) {
  const repos = ledgerReposOn(d.db, d.config.dataDir, d.reader);
  const ledgers = createLedgerService({ ...d, ...repos });
  const contacts = createContactService({ ...d, ...repos });
  const importListeners: ImportListener[] = [];
  const imports = createImportService({
    ...d,
    ...repos,
    uploadsDir: uploadsDir(d.config.dataDir),
    maxApiContacts: d.config.maxApiContacts,
    maxJsonBytes: d.config.maxJsonBytes,
    onEndedAtOnce: (job) => importListeners.forEach((l) => l(job)),
  });
  const rowsCounter = everySeries(
    d.metrics.counter({ name: 'contact_ledger_import_rows_total', help: 'Import rows processed, by outcome (imported, duplicate, invalid).', labelNames: ['outcome'] }),
    'outcome',
    ['imported', 'duplicate', 'invalid'],
  );
  const countImportRows = (c: ChunkCounts) => {
    rowsCounter.inc({ outcome: 'imported' }, c.imported);
    rowsCounter.inc({ outcome: 'duplicate' }, c.duplicates);
    rowsCounter.inc({ outcome: 'invalid' }, c.invalid);
  };
  // Imports run on the bulk thread (with the import-time matcher); this runner's own `failed`
  // records a final failure, on this thread.
  const importRunner = createImportRunner({ db: d.db, clock: d.clock, ...repos, listeners: importListeners });
  const runners: Record<string, Runner> = {
    ...ledgers.runners,
    [IMPORT_JOB]: { ...importRunner, run: d.runImport },
  };
  return {
    repos,
    ledgers,
    contacts,
    imports,
    runners,
    /** Rows of an import chunk that committed on the bulk thread, for the import-rows metric. */
    countImportRows,
    /** Other modules hear about every import that ends, inside the transaction that ends it (the webhook outbox). */
    onImportFinished: (l: ImportListener) => void importListeners.push(l),
    /** Periodic work: the rejected rows of old imports go (REJECTIONS_KEEP_DAYS). */
    schedule(s: Scheduler): void {
      // with the other retention work (feed-retention 03:45, jobs-prune 03:50)
      s.every('45 3 * * *', 'import-retention', async (ctl) => {
        if (d.config.rejectionsKeepDays === 0) return;
        const prune = rejectionsPruner(repos.imports, d.clock.now() - d.config.rejectionsKeepDays * DAY_MS);
        await deleteInChunks(d.db, [prune.step], { stopping: () => ctl.stopping });
        if (prune.deleted()) d.log.info({ removed: prune.deleted(), imports: prune.jobs(), keepDays: d.config.rejectionsKeepDays }, 'rejected rows of old imports deleted');
      });
    },
  };
}
