import { join } from 'node:path';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { createIdentity, type Identity } from './identity/index.ts';
import { loadSigningKeys } from './identity/signing-keys.ts';
import { createLogger, type Logger } from './log.ts';
import type { ReadinessChecks } from './ops/health.ts';
import { createQueue, registerQueueMetrics, type Queue } from './jobs/queue.ts';
import { createScheduler, type Scheduler } from './jobs/scheduler.ts';
import { createLedgerModule, uploadsDir, uploadTmpDir, type LedgerModule } from './ledger/index.ts';
import type { LedgerDataOwner, LedgerReferrer, OrgDataOwner } from './ledger/model.ts';
import { startCheckpointer } from './storage/checkpointer.ts';
import { openDb, type Db } from './storage/db.ts';
import { FileSpace } from './storage/free-space.ts';
import { backupsDir, DB_FILE, openStorage, type Migrated } from './storage/storage.ts';
import { feedsDir } from './tracking/feed-files.ts';
import { createTrackingModule, type TrackingModule } from './tracking/index.ts';
import { readdirSync, rmSync } from 'node:fs';
import { schemaVersion } from './storage/migrate.ts';
import { createWebhooksModule, type WebhooksModule } from './webhooks/index.ts';
import { createBulkThread, type BulkThread } from './bulk-thread/client.ts';
import { createJsonParserThread, type JsonParserThread } from './http/json-parser-thread.ts';
import { LoadShedder } from './http/load-shedding.ts';
import { createCursors } from './cursor.ts';
import { createSettingsRepo } from './storage/settings-repo.ts';
import { createMetrics, registerDatabaseMetrics, type Metrics } from './ops/metrics.ts';
import { createScheduledBackups } from './ops/scheduled-backups.ts';

// The storage layer's entry points, where the commands and tests have always found them.
export { backupsDir, DB_FILE, openStorage, prepareDataDir, type Storage } from './storage/storage.ts';

/** Page cache of the downloads' read-only connection. */
const READER_CACHE_KIB = 4096;

/** Everything the process runs on, built once by the composition root (P1). */
export interface Runtime {
  config: Readonly<Config>;
  clock: Clock;
  log: Logger;
  db: Db;
  identity: Identity;
  ledger: LedgerModule;
  tracking: TrackingModule;
  webhooks: WebhooksModule;
  /** Where import and feed jobs run (src/bulk-thread). */
  bulkThread: BulkThread;
  /** Where large JSON request bodies are parsed (src/http/json-parser-thread.ts). */
  jsonParser: JsonParserThread;
  /** Tells when the event loop is overloaded, so that new bulk work is refused (src/http/load-shedding.ts). */
  loadShedder: LoadShedder;
  queue: Queue;
  scheduler: Scheduler;
  readiness: ReadinessChecks;
  /** Checks that make /readyz say "degraded" without making it unready. */
  degraded: ReadinessChecks;
  /** Whether the last CSV upload was refused for lack of space (a degraded check). */
  uploadSpace: FileSpace;
  metrics: Metrics;
  /** Set when this start created the first superuser. */
  bootstrap?: { email: string; generatedPassword?: string };
  /** Set by the HTTP server during shutdown so /readyz answers 503. */
  state: { shuttingDown: boolean };
  close(): Promise<void>;
}

/**
 * Creates the first superuser of a new installation (from CONTACT_LEDGER_ADMIN_EMAIL / _PASSWORD,
 * or with a generated password) and notes it in `rt.bootstrap`; nothing when users exist.
 */
export async function bootstrapSuperuser(rt: Runtime, config: Readonly<Config>): Promise<void> {
  const boot = await rt.identity.users.bootstrapSuperuser({ email: config.adminEmail, password: config.adminPassword });
  if (boot) rt.bootstrap = { email: boot.user.email, ...(boot.generatedPassword ? { generatedPassword: boot.generatedPassword } : {}) };
}

/**
 * Opens the storage and wires the services; creates the first superuser on a fresh installation
 * (unless `bootstrap` is false).
 */
export async function openRuntime(config: Readonly<Config>, opts: { clock?: Clock; log?: Logger; bootstrap?: boolean; feedChunkDeadlineMs?: number; onMigrated?: (m: Migrated) => void } = {}): Promise<Runtime> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config.logLevel);
  const storage = await openStorage(config, log, clock, opts.onMigrated);
  const { db, latest } = storage;
  // nothing is lost and the -wal stays bounded, but requests are slower while imports run, until a restart
  const checkpointer = startCheckpointer(db, {
    onFailure: (err) =>
      log.error({ err }, 'WAL checkpoints fall back to the writer connection: no data is lost, requests may be slower while imports run; restart the server (after freeing disk space, if it was full) to bring the checkpoint thread back'),
  });
  let reader: Db | undefined;
  let bulkThread: BulkThread | undefined;
  try {
    // Downloads read through their own read-only connection with a small page cache: streaming a
    // whole ledger then neither fills the writer's 64 MiB cache nor holds the writer (WAL readers
    // do not block it). Opened after the migrations, so it sees the current schema.
    reader = openDb(join(config.dataDir, DB_FILE), { readonly: true, check: false, cacheKiB: READER_CACHE_KIB });
    // this process holds the data folder: its tokens are signed with the newest key (the file says so, for `keys rotate`)
    const signingKeys = loadSigningKeys(config.dataDir, clock.now(), { tokenTtlSeconds: config.tokenTtlSeconds });
    const cursors = createCursors(createSettingsRepo(db).secret('cursor_secret'));
    const metrics = createMetrics();
    const queue = createQueue(db, clock);
    let jobKinds: readonly string[] = [];
    registerQueueMetrics(metrics, queue, clock, () => jobKinds);
    registerDatabaseMetrics(metrics, join(config.dataDir, DB_FILE));
    let scheduler: Scheduler | undefined;
    const kick = () => scheduler?.kick();
    let ledger: LedgerModule | undefined;
    let webhooks: WebhooksModule | undefined;
    let tracking: TrackingModule | undefined;
    // Import and feed jobs run on a thread of their own (src/bulk-thread): their chunks never hold the event loop.
    const bulk = createBulkThread({
      db,
      clock,
      dataDir: config.dataDir,
      baseUrl: config.baseUrl,
      maxStoredRejections: config.maxStoredRejections,
      feedChunkDeadlineMs: opts.feedChunkDeadlineMs,
      log,
      onImportChunk: (counts) => ledger?.countImportRows(counts),
      onFeedChunk: (progress) => tracking?.feeds.countChunk(progress),
      onDeliveries: () => webhooks?.kick(),
    });
    bulkThread = bulk;
    const identity = createIdentity({ db, clock, config, signingKeys, cursors, onOrgDeleted: (orgId) => ledger!.ledgers.scheduleOrgPurge(orgId) });
    const owners: LedgerDataOwner[] = [];
    const orgOwners: OrgDataOwner[] = [identity.orgData];
    const referrers: LedgerReferrer[] = [];
    ledger = createLedgerModule({ db, reader, clock, log, config, cursors, queue, audit: identity.audit, orgs: identity.repos.orgs, kick, owners, orgOwners, referrers, metrics, runImport: bulk.run });
    tracking = createTrackingModule({ db, clock, log, config, cursors, queue, ledger, kick, metrics, audit: identity.audit, runFeed: bulk.run });
    owners.push(tracking.ledgerData);
    webhooks = createWebhooksModule({ db, clock, log, config, cursors, audit: identity.audit, ledgers: ledger.repos.ledgers, contacts: ledger.repos.contacts, metrics, queue, kick });
    orgOwners.push(webhooks.orgData);
    referrers.push(webhooks.service);
    ledger.onImportFinished((imp) => webhooks.outbox.importFinished(imp));
    const runners = { ...ledger.runners, ...tracking.runners, ...webhooks.runners };
    jobKinds = Object.keys(runners).sort();
    scheduler = createScheduler({ db, queue, log, runners, dataDir: config.dataDir, onBusy: (where) => metrics.countBusy(where) });
    ledger.schedule(scheduler);
    tracking.schedule(scheduler);
    webhooks.schedule(scheduler);
    // Expired sessions, used refresh tokens and ended throttling windows, every night.
    scheduler.every('40 3 * * *', 'identity-prune', async (ctl) => {
      const removed = await identity.prune(ctl);
      if (removed) log.info({ removed }, 'expired sessions and sign-in counters removed');
    });
    const backups = createScheduledBackups({ db, log, clock, metrics, dir: backupsDir(config.dataDir), keep: config.backupKeep, pauseOtherWriters: (fn) => bulk.pausedWhile(() => checkpointer.whileBackingUp(fn)) });
    if (config.backupCron) scheduler.every(config.backupCron, 'backup', () => backups.run());
    removeStrayUploads(config.dataDir, ledger.repos.imports.listReferencedFiles());
    removeStrayFiles(feedsDir(config.dataDir), tracking.repos.feeds.listReferencedFiles());
    tracking.feeds.recoverInbox();
    tracking.dailySets.removeOrphans();
    const state = { shuttingDown: false };
    const jsonParser = createJsonParserThread();
    const loadShedder = new LoadShedder(config.overloadDelayMs).registerMetrics(metrics).start();
    const uploadSpace = new FileSpace();
    const rt: Runtime = {
      config,
      clock,
      log,
      db,
      identity,
      ledger,
      tracking,
      webhooks,
      bulkThread: bulk,
      jsonParser,
      loadShedder,
      queue,
      scheduler,
      metrics,
      state,
      readiness: {
        database: () => db.ping(),
        migrations: () => schemaVersion(db) === latest,
        scheduler: () => scheduler.isRunning(),
      },
      degraded: {
        // Reads keep working while writes lack disk space: the last write of this process failed
        // for it (507) and none committed since, a job waits for it (postponed, none of its chunks
        // committed since), or the last upload found no room for its file. Each ends by its own
        // sign: a small commit (a sign-in, the postponement itself) says nothing of room for an
        // import's chunks or an upload's file (a tester's /readyz said "ready" throughout).
        diskSpace: () => db.writeFailure === null && !queue.hasJobWaitingForDisk() && !uploadSpace.short,
      },
      uploadSpace,
      async close() {
        loadShedder.stop();
        await scheduler.stop();
        await bulk.close();
        await identity.hasher.close();
        await jsonParser.close();
        reader!.raw.close(); // first, so that the writer's closing checkpoint can truncate the WAL
        await checkpointer.close();
        storage.close();
      },
    };
    if (opts.bootstrap !== false) await bootstrapSuperuser(rt, config);
    const exposed = identity.users.exposedAccounts();
    if (exposed.length) {
      log.warn(
        { accounts: exposed.slice(0, 100), count: exposed.length },
        "accounts whose password an organization's admin may have chosen (passwordFrom; 'unknown': an organization since deleted) are superusers or members of other organizations, made so before this version checked it (docs/security.md): whoever chose it may sign in there as them; a superuser sets each one's password (PATCH /api/identity/v1/users/:userId; a superuser's own by another superuser, or contact-ledger user passwd) and gives it to its owner, or removes them",
      );
    }
    const unfound = identity.users.accountsNotFoundBySignIn();
    if (unfound.length) {
      const superusers = unfound.filter((u) => u.superuser).map((u) => u.id);
      log.warn({ users: unfound.map((u) => u.id), superusers }, 'accounts stored in an older form of an address another account has cannot sign in (docs/decisions.md): disable them (PATCH /api/identity/v1/users/:userId); a superuser among them who is needed: make a new one with contact-ledger user add --superuser');
      if (superusers.length && identity.repos.users.countActiveSuperusers() === superusers.length) log.error({ superusers }, 'no superuser can sign in: every one is stored in an older form of an address another account has; make one with contact-ledger user add --email <e-mail> --password - --superuser (server stopped)');
    }
    return rt;
  } catch (err) {
    await bulkThread?.close();
    reader?.raw.close();
    await checkpointer.close();
    storage.close();
    throw err;
  }
}

/**
 * Uploads no job refers to are deleted at start: a crash between receiving and registering one, or
 * between a job's last commit (which lets go of its file) and the file's removal.
 */
export function removeStrayUploads(dataDir: string, referenced: string[]): void {
  rmSync(uploadTmpDir(dataDir), { recursive: true, force: true });
  removeStrayFiles(uploadsDir(dataDir), referenced);
}

/** Deletes the entries of `dir` that are not in `referenced`. */
function removeStrayFiles(dir: string, referenced: string[]): void {
  const keep = new Set(referenced);
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const file = join(dir, name);
    if (!keep.has(file)) rmSync(file, { recursive: true, force: true });
  }
}
