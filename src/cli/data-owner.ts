import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '../config.ts';
import { shellWord } from './shell-word.ts';

/** The database's file name (src/storage/storage.ts DB_FILE; not imported: this module loads before any command's, with none of the storage). */
const DB_FILE = 'contact-ledger.db';

/**
 * Refuses (exit 2) a command run as root on a data folder another user owns (the service user):
 * what it writes there would be root's, and the server may not read it — a restored database,
 * signing keys, a feed's copy, the `backups/` and `feeds/` folders it makes (an operator's
 * `restore`, `keys rotate` and `feed` run as root left them so: the next start refused the
 * database, then the keys, and every scheduled backup failed after it said "ready"; forty-third
 * session). Root's own files are no concern (rootOnForeignFolder says whose they are).
 */
export function refuseRootOnForeignFolder(dataDir: string, command: string): void {
  const uid = rootOnForeignFolder(dataDir)?.uid;
  if (uid === undefined) return;
  throw new ConfigError(
    `the data folder ${dataDir} is uid ${uid}'s, and ${command} runs as root: what it writes there would be root's, which the server, running as uid ${uid}, may not read. ` +
      `Run it as that user: sudo -u '#${uid}' env CONTACT_LEDGER_DATA=${shellWord(resolve(dataDir))} ${shellWord(programPath())} ${command} … (sudo clears the environment and may not search /usr/local/bin; in a container: docker exec -u ${uid} …)`,
  );
}

/**
 * How to name this program in a command to copy: the executable's full path (sudo may not find it
 * on its own PATH), or `contact-ledger` when run from source (process.execPath is then node's).
 */
function programPath(): string {
  const exe = process.execPath;
  return /(?:^|\/)node(?:\.exe)?$/.test(exe) ? 'contact-ledger' : exe;
}

/**
 * Whose the data folder's files are, when this process runs as root and they are another user's:
 * the database's owner when there is one (a container's root server owns its own, in a folder the
 * host's user owns), else the folder's, else — not made yet — its nearest folder that exists (the
 * systemd layout's /var/lib/contact-ledger, the service user's, before the first start: a reviewer's
 * `sudo contact-ledger init`). Undefined otherwise.
 */
export function rootOnForeignFolder(dataDir: string): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const dir = resolve(dataDir);
  for (let path = join(dir, DB_FILE); ; ) {
    try {
      const { uid, gid } = statSync(path);
      return uid === 0 ? undefined : { uid, gid };
    } catch {
      const up = path === join(dir, DB_FILE) ? dir : dirname(path);
      if (up === path) return undefined;
      path = up;
    }
  }
}
