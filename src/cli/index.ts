import { ConfigError, loadConfig } from '../config.ts';
import { StartupError } from '../errors.ts';
import { VERSION, VERSION_LINE } from '../version.ts';
import { commandHelp, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, parseCommandArgs, UsageError, type Io } from './command.ts';
import { COMMANDS, DEFAULT_COMMAND } from './commands.ts';
import { refuseRootOnForeignFolder } from './data-owner.ts';

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
    io.out(VERSION_LINE);
    return EXIT_OK;
  }
  const named = first !== undefined && !first.startsWith('-');
  const cmd = named ? COMMANDS.find((c) => c.name === first) : DEFAULT_COMMAND;
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
    if (!cmd.takesConfig) return await (await cmd.load())(args, io);
    // the configuration is checked before the command's modules load: a mistake in it is told at once
    const config = loadConfig(io.env, args.config, { serving: cmd.name === 'serve' });
    if (cmd.writesData) refuseRootOnForeignFolder(config.dataDir, cmd.name);
    return await (await cmd.load())(args, io, config);
  } catch (err) {
    if (err instanceof UsageError) {
      // a command named after an option serve does not take (`contact-ledger --inspect=… version`)
      // is that command's line in the wrong order: said so, not "serve: unknown option" (executable
      // tester). Only when serve refused the line: `--data backup` may name a folder.
      // (not right after an option without `=`: that may be its value, `--data import`)
      const later = named ? undefined : argv.find((a, i) => COMMANDS.some((c) => c.name === a) && !(i > 0 && argv[i - 1]!.startsWith('-') && !argv[i - 1]!.includes('=')));
      if (later !== undefined) {
        io.err(`contact-ledger: the command comes first: contact-ledger ${later} [options] (found "${later}" after ${argv[0]})`);
        return EXIT_USAGE;
      }
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
