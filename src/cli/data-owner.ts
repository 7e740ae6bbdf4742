import { statSync } from 'node:fs';
import { ConfigError } from '../config.ts';

/**
 * Refuses (exit 2) a command run as root on a data folder another user owns (the service user):
 * what it writes there would be root's, and the server may not read it — a restored database,
 * signing keys, a feed's copy, the `backups/` and `feeds/` folders it makes (an operator's
 * `restore`, `keys rotate` and `feed` run as root left them so: the next start refused the
 * database, then the keys, and every scheduled backup failed after it said "ready"; forty-third
 * session). Root's own folder, or a folder not made yet, is no concern.
 */
export function refuseRootOnForeignFolder(dataDir: string, command: string): void {
  const uid = rootOnForeignFolder(dataDir);
  if (uid === undefined) return;
  throw new ConfigError(
    `the data folder ${dataDir} belongs to uid ${uid}, and ${command} runs as root: what it writes there would be root's, which the server, running as uid ${uid}, may not read. ` +
      `Run it as that user: sudo -u '#${uid}' contact-ledger ${command} …`,
  );
}

/** The owner of the data folder when this process runs as root and the folder is another user's; else undefined. */
export function rootOnForeignFolder(dataDir: string): number | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const { uid } = statSync(dataDir);
    return uid === 0 ? undefined : uid;
  } catch {
    return undefined;
  }
}
