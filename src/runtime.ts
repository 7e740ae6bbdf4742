import { accessSync, constants, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { createIdentity, type Identity } from './identity/index.ts';
import { loadSigningKeys } from './identity/signing-keys.ts';
import { createLogger, type Logger } from './log.ts';
import type { ReadinessChecks } from './ops/health.ts';
import { paths } from './paths.ts';
import { createQueue, type Queue } from './jobs/queue.ts';
import { createScheduler, type Scheduler } from './jobs/scheduler.ts';
import { createLedgerModule, uploadsDir, uploadTmpDir, type LedgerModule } from './ledger/index.ts';
import { openDb, StartupError, type Db } from './storage/db.ts';
import { lockDataDir } from './storage/lock.ts';
import { feedsDir } from './tracking/feed-service.ts';
import { createTrackingModule, type TrackingModule } from './tracking/index.ts';
import { readdirSync, rmSync } from 'node:fs';
import { loadMigrations, migrate, pendingMigrations, schemaVersion } from './storage/migrate.ts';
import { createWebhooksModule, type WebhooksModule } from './webhooks/index.ts';

export const DB_FILE = 'contact-ledger.db';
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
  queue: Queue;
  scheduler: Scheduler;
  readiness: ReadinessChecks;
  /** Set when this start created the first superuser. */
  bootstrap?: { email: string; generatedPassword?: string };
  /** Set by the HTTP server during shutdown so /readyz answers 503. */
  state: { shuttingDown: boolean };
  close(): Promise<void>;
}

/** Creates the data folder (0700) and proves it is writable, with a clear message otherwise. */
export function prepareDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    accessSync(dataDir, constants.W_OK | constants.R_OK);
  } catch (err) {
    throw new StartupError(`data folder ${dataDir} is not usable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); set CONTACT_LEDGER_DATA to a writable folder`);
  }
}

/**
 * Opens the database, backs it up and migrates it when the schema is behind, loads the signing
 * keys, wires the services and creates the first superuser on a fresh installation.
 */
export async function openRuntime(config: Readonly<Config>, opts: { clock?: Clock; log?: Logger } = {}): Promise<Runtime> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config.logLevel);
  prepareDataDir(config.dataDir);
  const lock = lockDataDir(config.dataDir);
  let db: Db;
  let reader: Db | undefined;
  try {
    db = openDb(join(config.dataDir, DB_FILE));
  } catch (err) {
    lock.release();
    throw err;
  }
  try {
    const migrations = loadMigrations(paths.migrations);
    const pending = pendingMigrations(db, migrations);
    const from = schemaVersion(db);
    if (pending.length && from > 0) {
      // Forward-only upgrades: keep the way back (SPEC §8).
      mkdirSync(join(config.dataDir, 'backups'), { recursive: true, mode: 0o700 });
      const file = join(config.dataDir, 'backups', `pre-migrate-v${from}-${new Date(clock.now()).toISOString().replace(/[:.]/g, '')}.db`);
      await db.raw.backup(file);
      log.info({ file, from, to: migrations.at(-1)!.version }, 'backed up the database before migrating');
    }
    const applied = migrate(db, migrations, clock.now());
    if (applied.length) log.info({ applied }, 'migrations applied');

    // Downloads read through their own read-only connection with a small page cache: streaming a
    // whole ledger then neither fills the writer's 64 MiB cache nor holds the writer (WAL readers
    // do not block it). Opened after the migrations, so it sees the current schema.
    reader = openDb(join(config.dataDir, DB_FILE), { readonly: true, check: false, cacheKiB: READER_CACHE_KIB });
    const signingKeys = loadSigningKeys(config.dataDir, clock.now());
    const queue = createQueue(db, clock);
    let scheduler: Scheduler | undefined;
    const kick = () => scheduler?.kick();
    let ledger: LedgerModule | undefined;
    const identity = createIdentity({ db, clock, config, signingKeys, onOrgDeleted: (orgId) => ledger!.ledgers.scheduleOrgPurge(orgId) });
    const purgers: ((ledgerId: string, n: number) => number)[] = [];
    ledger = createLedgerModule({ db, reader, clock, log, config, queue, audit: identity.audit, orgs: identity.repos.orgs, kick, purgers });
    const tracking = createTrackingModule({ db, clock, log, config, queue, ledger, kick });
    purgers.push(tracking.purgeChanges);
    const webhooks = createWebhooksModule({ db, clock, log, config, audit: identity.audit, ledgers: ledger.repos.ledgers });
    tracking.onChange((change, contact) => webhooks.outbox.changed(change, contact));
    ledger.onImportFinished((imp) => webhooks.outbox.importFinished(imp));
    scheduler = createScheduler({ db, queue, log, runners: { ...ledger.runners, ...tracking.runners } });
    tracking.schedule(scheduler);
    webhooks.schedule(scheduler);
    removeStrayUploads(config.dataDir, ledger.repos.imports.listReferencedFiles());
    removeStrayFiles(feedsDir(config.dataDir), tracking.repos.feeds.listReferencedFiles());
    const latest = migrations.at(-1)!.version;
    const state = { shuttingDown: false };
    const rt: Runtime = {
      config,
      clock,
      log,
      db,
      identity,
      ledger,
      tracking,
      webhooks,
      queue,
      scheduler,
      state,
      readiness: {
        database: () => db.ping(),
        migrations: () => schemaVersion(db) === latest,
        scheduler: () => scheduler.isRunning(),
      },
      async close() {
        await scheduler.stop();
        await identity.hasher.close();
        reader!.raw.close(); // first, so that the writer's closing checkpoint can truncate the WAL
        db.close();
        lock.release();
      },
    };
    const boot = await identity.users.bootstrapSuperuser({ email: config.adminEmail, password: config.adminPassword });
    if (boot) rt.bootstrap = { email: boot.user.email, ...(boot.generatedPassword ? { generatedPassword: boot.generatedPassword } : {}) };
    return rt;
  } catch (err) {
    reader?.raw.close();
    db.close();
    lock.release();
    throw err;
  }
}

/** Uploads no job refers to (a crash between receiving and registering one) are deleted at start. */
function removeStrayUploads(dataDir: string, referenced: string[]): void {
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
