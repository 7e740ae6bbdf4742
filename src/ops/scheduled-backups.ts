import { accessSync, constants, mkdirSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { backupTo, fileStamp, pruneBackups } from '../storage/backup.ts';
import type { Db } from '../storage/db.ts';
import { everySeries, type MetricsRegistry } from './metrics.ts';

export type ScheduledBackups = ReturnType<typeof createScheduledBackups>;

/** Scheduled backups: the only files BACKUP_KEEP prunes (pre-migrate-*, pre-restore-* and yours stay). */
export const SCHEDULED_BACKUP = /^scheduled-\d{8}T\d{9}Z\.db$/;

/**
 * BACKUP_CRON's task: an online backup on the server's own connection (SQLite carries this
 * connection's writes into it; it copies in small steps, so requests keep being served; imports and feeds,
 * which write on a connection of their own, wait between their chunks meanwhile) into
 * `<data>/backups/scheduled-<time>.db`, then keeps the newest `keep` scheduled backups.
 */
export function createScheduledBackups(d: {
  db: Db;
  log: Logger;
  clock: Clock;
  metrics: MetricsRegistry;
  dir: string;
  keep: number;
  /**
   * Runs the copy while other connections' writers wait (the bulk thread: src/bulk-thread) and the
   * checkpointer does not cut the -wal (storage/checkpointer.ts whileBackingUp): either would
   * start it over.
   */
  pauseOtherWriters: <T>(fn: () => Promise<T>) => Promise<T>;
}) {
  const outcomes = everySeries(d.metrics.counter({ name: 'contact_ledger_backups_total', help: 'Scheduled backups by outcome (ok, failed).', labelNames: ['outcome'] }), 'outcome', ['ok', 'failed']);
  const lastOk = d.metrics.gauge({ name: 'contact_ledger_backup_last_success_timestamp_seconds', help: 'When the last scheduled backup completed (Unix time).' });
  // from the newest scheduled backup on disk: 0 after every restart made an alert on its age fire
  // until the next backup, up to a day later (a tester's case)
  const newest = lastScheduledBackupAt(d.dir, d.clock.now());
  if (newest !== undefined) lastOk.set(newest / 1000);
  return {
    /** Takes one backup now; logs and counts a failure instead of throwing. Returns the file. */
    async run(): Promise<string | undefined> {
      const started = d.clock.now();
      const file = join(d.dir, `scheduled-${fileStamp(started)}.db`);
      try {
        mkdirSync(d.dir, { recursive: true, mode: 0o700 });
        const copy = () => backupTo(d.db.raw, file);
        const { bytes, restarts } = await d.pauseOtherWriters(copy);
        const pruned = pruneBackups(d.dir, SCHEDULED_BACKUP, d.keep, basename(file));
        outcomes.inc({ outcome: 'ok' });
        lastOk.set(d.clock.now() / 1000);
        d.log.info({ file, bytes, restarts, ms: d.clock.now() - started, pruned }, 'scheduled backup written');
        return file;
      } catch (err) {
        outcomes.inc({ outcome: 'failed' });
        d.log.error({ err, file }, 'scheduled backup failed');
        return undefined;
      }
    },
  };
}

/**
 * When the newest scheduled backup in `dir` was completed (its file's last write, epoch ms), if
 * there is one. A file dated after `now` (written while the clock was ahead) is not counted: its
 * time says nothing of how old it is, and it made an alert on the backups' age impossible.
 */
function lastScheduledBackupAt(dir: string, now: number): number | undefined {
  let newest: number | undefined;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined; // no backup yet
  }
  for (const name of names) {
    if (!SCHEDULED_BACKUP.test(name)) continue;
    const at = statSync(join(dir, name), { throwIfNoEntry: false })?.mtimeMs;
    if (at !== undefined && at <= now && (newest === undefined || at > newest)) newest = at;
  }
  return newest;
}

/**
 * Why scheduled backups into `dir` would fail for this process, or undefined: the folder (or, not
 * made yet, the data folder it is made in) may not be written by this user — one made by root's
 * `restore` or by hand (an operator tester's case: nothing said so until the first scheduled
 * backup failed, hours after a start that said "ready").
 */
export function backupsUnwritable(dir: string): string | undefined {
  const st = statSync(dir, { throwIfNoEntry: false });
  const target = st ? dir : dirname(dir);
  try {
    accessSync(target, constants.W_OK | constants.X_OK);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'an error';
    const owner = statSync(target, { throwIfNoEntry: false });
    const whose = owner ? `; it is uid ${owner.uid}'s, mode ${(owner.mode & 0o777).toString(8)}` : '';
    return `scheduled backups (BACKUP_CRON) will fail: this user (uid ${process.getuid?.() ?? '?'}) may not ${st ? 'write in' : 'make'} ${st ? dir : `${dir} in ${target}`} (${code}${whose}); give it to the service user (chown) or remove it`;
  }
}
