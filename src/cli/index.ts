import { existsSync, readFileSync } from 'node:fs';
import { ConfigError } from '../config.ts';
import { paths } from '../paths.ts';
import { StartupError } from '../storage/db.ts';
import { VERSION } from '../version.ts';
import { commandHelp, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, parseCommandArgs, refuseArguments, UsageError, type Command, type Io } from './command.ts';
import { backupCommand } from './backup.ts';
import { feedCommand } from './feed.ts';
import { importCommand } from './import.ts';
import { initCommand } from './init.ts';
import { keysCommand } from './keys.ts';
import { migrateCommand } from './migrate.ts';
import { restoreCommand } from './restore.ts';
import { serveCommand } from './serve.ts';
import { userCommand } from './user.ts';

const versionCommand: Command = {
  name: 'version',
  summary: 'Print the version.',
  usage: 'version',
  takesConfig: false,
  async run(args, io) {
    refuseArguments(args);
    io.out(VERSION);
    return EXIT_OK;
  },
};

const licensesCommand: Command = {
  name: 'licenses',
  summary: 'Print the licenses of the third-party software in the program.',
  usage: 'licenses',
  takesConfig: false,
  async run(args, io) {
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

export const COMMANDS: Command[] = [serveCommand, initCommand, userCommand, migrateCommand, backupCommand, restoreCommand, importCommand, feedCommand, keysCommand, versionCommand, licensesCommand];

function overview(): string {
  return [
    `contact-ledger ${VERSION}: self-hosted contact tracking in one executable.`,
    '',
    'Usage: contact-ledger [command] [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(10)} ${c.summary.split('. ')[0]!.replace(/\.$/, '')}`),
    '',
    'Run "contact-ledger <command> --help" for the options of a command.',
  ].join('\n');
}

/** Runs one command line and returns the process exit code; never throws. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  const first = argv[0];
  if (first === '--help' || first === '-h' || first === 'help') {
    io.out(overview());
    return EXIT_OK;
  }
  if (first === '--version' || first === '-v') {
    io.out(VERSION);
    return EXIT_OK;
  }
  const named = first !== undefined && !first.startsWith('-');
  const cmd = named ? COMMANDS.find((c) => c.name === first) : serveCommand;
  if (!cmd) {
    io.err(`contact-ledger: unknown command "${first}". Commands: ${COMMANDS.map((c) => c.name).join(', ')}.`);
    return EXIT_USAGE;
  }
  try {
    const args = parseCommandArgs(cmd, named ? argv.slice(1) : argv);
    if (args.help) {
      io.out(commandHelp(cmd));
      return EXIT_OK;
    }
    return await cmd.run(args, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`contact-ledger ${cmd.name}: ${err.message} (see contact-ledger ${cmd.name} --help)`);
      return EXIT_USAGE;
    }
    if (err instanceof ConfigError) {
      io.err(`contact-ledger: configuration error: ${err.message}`);
      return EXIT_USAGE;
    }
    if (err instanceof StartupError) {
      io.err(`contact-ledger: ${err.message}`);
      return EXIT_FAILURE;
    }
    io.err(`contact-ledger ${cmd.name}: ${(err as Error).message ?? String(err)}`);
    return EXIT_FAILURE;
  }
}
