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
  if (process.getuid?.() !== 0) return;
  let uid: number;
  try {
    uid = statSync(dataDir).uid;
  } catch {
    return;
  }
  if (uid === 0) return;
  throw new ConfigError(
    `the data folder ${dataDir} belongs to uid ${uid}, and ${command} runs as root: what it writes there would be root's, which the server, running as uid ${uid}, may not read. ` +
      `Run it as that user: sudo -u '#${uid}' contact-ledger ${command} …`,
  );
}
