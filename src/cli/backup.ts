import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../config.ts';
import { DB_FILE } from '../storage/storage.ts';
import { backupTo, openBackupSource } from '../storage/backup.ts';
import { EXIT_FAILURE, EXIT_OK, UsageError, type Command } from './command.ts';
import { NICE, setThreadNice } from '../thread-priority.ts';

/**
 * `contact-ledger backup <file>`: an online, consistent copy of the database, whether or not a
 * server is running (RELIABILITY.md D5; decided in docs/operations.md).
 *
 * The command never takes the data folder's lock: it opens its own connection to the database
 * and copies it with SQLite's backup API in ONE step, i.e. inside one read transaction. In WAL mode
 * that snapshot does not block the server's writes, and because nothing happens between steps the
 * server's writes cannot restart the copy. The copy is then checked (integrity_check) and gets its
 * final name only when complete.
 */
export const backupCommand: Command = {
  name: 'backup',
  summary: 'Write a consistent copy of the database to <file>, also while the server runs (online backup). The file must not exist.',
  usage: 'backup <file> [options]',
  takesConfig: true,
  async run(args, io) {
    if (args.positionals.length !== 1) throw new UsageError('usage: contact-ledger backup <file>');
    const dest = resolve(args.positionals[0]!);
    const config = loadConfig(io.env, args.config);
    const file = join(config.dataDir, DB_FILE);
    if (!existsSync(file)) {
      io.err(`contact-ledger backup: there is no database in ${config.dataDir} (set CONTACT_LEDGER_DATA or --data)`);
      return EXIT_FAILURE;
    }
    let source;
    try {
      source = openBackupSource(file);
    } catch (err) {
      io.err(`contact-ledger backup: ${(err as Error).message}`);
      return EXIT_FAILURE;
    }
    const started = Date.now();
    // beside a running server, the copy and its check take the CPU its requests leave over
    setThreadNice(NICE.backupCommand);
    try {
      const { bytes } = await backupTo(source, dest, { oneStep: true, verify: true });
      io.out(`backed up ${file} to ${dest} (${(bytes / 1024 ** 2).toFixed(1)} MiB, integrity ok) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return EXIT_OK;
    } finally {
      source.close();
    }
  },
};
