// Every command of the program, described (name, usage, flags, help) without loading it: a
// command's modules load only when it runs (Command.load; each command module exports its `run`),
// so `--help`, `version` and a configuration error take a fraction of the server's start-up.
import { existsSync, readFileSync } from 'node:fs';
import { paths } from '../paths.ts';
import { VERSION_LINE } from '../version.ts';
import { EXIT_FAILURE, EXIT_OK, refuseArguments, type Command } from './command.ts';

/** The settings a command that only reads or rewrites the database acts on (its --help lists them alone). */
const MAINTENANCE_SETTINGS = ['data', 'log-level'] as const;

export const USER_USAGE = 'user add --email <e-mail> --password <password | -> [--name <name>] [--superuser] | user passwd --email <e-mail> | --id <userId> --password <password | ->';

const serveCommand: Command = {
  name: 'serve',
  summary: 'Run the server (the default command): the APIs, the web application and the scheduler.',
  usage: 'serve [options]',
  takesConfig: true,
  load: async () => (await import('./serve.ts')).run,
};

const initCommand: Command = {
  name: 'init',
  writesData: true,
  summary: 'Set up a new installation: create the first superuser (and optionally an organization it administers).',
  usage: 'init --email <e-mail> --password <password | -> [--org <name>] [options]',
  flags: {
    email: { type: 'string', help: 'e-mail of the first superuser (or CONTACT_LEDGER_ADMIN_EMAIL)' },
    password: { type: 'string', help: 'its password; "-" reads it from standard input (or CONTACT_LEDGER_ADMIN_PASSWORD[_FILE])' },
    org: { type: 'string', help: 'also create this organization, with the superuser as its admin' },
  },
  settings: ['data', 'admin-email', 'admin-password', 'bcrypt-cost', 'log-level'],
  takesConfig: true,
  load: async () => (await import('./init.ts')).run,
};

const userCommand: Command = {
  name: 'user',
  writesData: true,
  summary: 'Add a user, or set a user\'s password (which also signs them out everywhere). The server must be stopped.',
  usage: `${USER_USAGE} [options]`,
  flags: {
    email: { type: 'string', help: 'the user\'s e-mail' },
    id: { type: 'string', help: 'the user\'s id, in place of --email (passwd: one of two accounts an address names)' },
    password: { type: 'string', help: 'the password; "-" reads it from standard input' },
    name: { type: 'string', help: 'display name (add)' },
    superuser: { type: 'boolean', help: 'make the new user a superuser (add)' },
  },
  settings: ['data', 'bcrypt-cost', 'log-level'],
  takesConfig: true,
  load: async () => (await import('./user.ts')).run,
};

const migrateCommand: Command = {
  name: 'migrate',
  writesData: true,
  summary: 'Apply pending database migrations (after an automatic backup into <data>/backups/). The server must be stopped.',
  usage: 'migrate [options]',
  settings: MAINTENANCE_SETTINGS,
  takesConfig: true,
  load: async () => (await import('./migrate.ts')).run,
};

const compactCommand: Command = {
  name: 'compact',
  writesData: true,
  summary: 'Rewrite the database without its free pages: the file shrinks after large deletions, and no deleted value stays behind in it. The server must be stopped.',
  usage: 'compact [options]',
  settings: MAINTENANCE_SETTINGS,
  takesConfig: true,
  load: async () => (await import('./compact.ts')).run,
};

const backupCommand: Command = {
  name: 'backup',
  summary: 'Write a consistent copy of the database to <file>, also while the server runs (online backup). The file must not exist.',
  usage: 'backup <file> [options]',
  settings: MAINTENANCE_SETTINGS,
  takesConfig: true,
  load: async () => (await import('./backup.ts')).run,
};

const restoreCommand: Command = {
  name: 'restore',
  writesData: true,
  summary: 'Replace the database with a backup file (checked first; the current database is kept in <data>/backups/). The server must be stopped.',
  usage: 'restore <file> [options]',
  settings: MAINTENANCE_SETTINGS,
  takesConfig: true,
  load: async () => (await import('./restore.ts')).run,
};

const importCommand: Command = {
  name: 'import',
  writesData: true,
  summary: 'Import contacts from a CSV file into a ledger, showing progress. The server must be stopped (while it runs, upload through the API).',
  usage: 'import <orgId> <ledgerId> <file.csv> [--mapping <json>] [options]',
  flags: { mapping: { type: 'string', help: 'column mapping as JSON, e.g. {"referenceId":"CRM Id"} (as the API\'s mapping field)' } },
  settings: ['data', 'max-stored-rejections', 'log-level'],
  takesConfig: true,
  load: async () => (await import('./import.ts')).run,
};

const feedCommand: Command = {
  name: 'feed',
  summary: 'Ingest a person-data feed file (.jsonl, .ndjson, .csv or .json, optionally .gz) and report the changes it caused.',
  usage: 'feed <file> [options]',
  settings: ['data', 'max-stored-rejections', 'log-level'],
  takesConfig: true,
  load: async () => (await import('./feed.ts')).run,
};

const keysCommand: Command = {
  name: 'keys',
  writesData: true,
  summary: 'Rotate the access-token signing key: a new key signs from the next start, and every key that signed tokens still alive keeps verifying until they expire. Restart the server afterwards.',
  usage: 'keys rotate [options]',
  settings: MAINTENANCE_SETTINGS,
  takesConfig: true,
  load: async () => (await import('./keys.ts')).run,
};

const versionCommand: Command = {
  name: 'version',
  summary: 'Print the version.',
  usage: 'version',
  takesConfig: false,
  load: async () => async (args, io) => {
    refuseArguments(args);
    io.out(VERSION_LINE);
    return EXIT_OK;
  },
};

const licensesCommand: Command = {
  name: 'licenses',
  summary: 'Print the licenses of the third-party software in the program.',
  usage: 'licenses',
  takesConfig: false,
  load: async () => async (args, io) => {
    refuseArguments(args);
    if (!existsSync(paths.notices)) {
      // a source checkout before its first `npm run build`
      io.err(`contact-ledger licenses: ${paths.notices} is written by \`npm run build\`; in a source checkout each package's license is in node_modules/<package>/`);
      return EXIT_FAILURE;
    }
    io.out(readFileSync(paths.notices, 'utf8').replace(/\n$/, ''));
    return EXIT_OK;
  },
};

/** The command run when none is named. */
export const DEFAULT_COMMAND = serveCommand;

export const COMMANDS: Command[] = [serveCommand, initCommand, userCommand, migrateCommand, compactCommand, backupCommand, restoreCommand, importCommand, feedCommand, keysCommand, versionCommand, licensesCommand];
