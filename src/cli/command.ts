import { parseArgs } from 'node:util';
import { CONFIG_FLAGS, configHelp, type Config } from '../config.ts';

/** Exit codes of every command (SPEC §8 via issue 5): 0 ok, 1 failure, 2 usage error. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export class UsageError extends Error {
  override name = 'UsageError';
}

export interface Io {
  out(line: string): void;
  err(line: string): void;
  /** Raw text on stderr (progress bars). */
  write(text: string): void;
  env: NodeJS.ProcessEnv;
  isTTY: boolean;
}

export interface ParsedArgs {
  positionals: string[];
  /** Command-specific flags. */
  flags: Record<string, string | boolean | undefined>;
  /** Configuration flags (--data, --port, …), for loadConfig. */
  config: Record<string, string | undefined>;
}

/** What a command does with its arguments, and the configuration when it takes one (loaded before its code). */
export type CommandRun = (args: ParsedArgs, io: Io, config: Config) => Promise<number>;

interface CommandInfo {
  name: string;
  summary: string;
  usage: string;
  /** Command-specific flags with their help. */
  flags?: Record<string, { type: 'string' | 'boolean'; help: string }>;
  /** Writes into the data folder as the user who runs it: refused to root on a folder another user owns (data-owner.ts). */
  writesData?: true;
  /**
   * The settings (their flags) the command acts on, which its --help lists; the server's others
   * are read and checked too but change nothing it does (every command's help listed all 40).
   * Left out: all of them (serve).
   */
  settings?: readonly string[];
}

/**
 * A command as the program lists it. Its code is loaded when it runs (`load`): `--help`,
 * `version` and a configuration error load none of the server's modules (a second of CPU from
 * source, half of one in the executable). `takesConfig`: whether the configuration flags apply;
 * such a command is given the configuration, checked before its code loads.
 */
export type Command = CommandInfo &
  ({ takesConfig: true; load(): Promise<CommandRun> } | { takesConfig: false; load(): Promise<(args: ParsedArgs, io: Io) => Promise<number>> });

/** Parses argv for one command; unknown flags and missing values are usage errors. */
export function parseCommandArgs(cmd: Command, argv: string[]): ParsedArgs & { help: boolean } {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  if (cmd.takesConfig) for (const f of CONFIG_FLAGS) options[f] = { type: 'string' };
  for (const [name, f] of Object.entries(cmd.flags ?? {})) options[name] = { type: f.type };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    const e = err as Error & { code?: string };
    // Node's own words for an unknown option run on about placing it after `--`, with a quote left open
    const unknown = e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /Unknown option '([^']*)'/.exec(e.message)?.[1] : undefined;
    throw new UsageError(unknown !== undefined ? `unknown option ${unknown}` : e.message.replace(/^TypeError \[[A-Z_]+\]: /, ''));
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const config: Record<string, string | undefined> = {};
  const flags: Record<string, string | boolean | undefined> = {};
  for (const [k, v] of Object.entries(values)) {
    if (k === 'help') continue;
    if (cmd.takesConfig && CONFIG_FLAGS.includes(k)) config[k] = v as string;
    else flags[k] = v;
  }
  return { positionals: parsed.positionals, flags, config, help: values.help === true };
}

/** Refuses the positional arguments of a command that takes none ("serve extra" started the server). */
export function refuseArguments(args: ParsedArgs): void {
  if (args.positionals.length) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
}

/** `--help` text of one command. */
export function commandHelp(cmd: Command): string {
  const lines = [`Usage: contact-ledger ${cmd.usage}`, '', cmd.summary];
  const own = Object.entries(cmd.flags ?? {});
  if (own.length) {
    lines.push('', 'Options:');
    for (const [name, f] of own) lines.push(`  --${(name + (f.type === 'string' ? ' <value>' : '')).padEnd(34)} ${f.help}`);
  }
  if (cmd.takesConfig) {
    lines.push('', 'Configuration (flag, environment variable; flags win; secrets also read VAR_FILE):', configHelp(cmd.settings));
    if (cmd.settings) lines.push("  (the server's other settings, in contact-ledger serve --help, are checked too; they change nothing here)");
  }
  lines.push('  --help                             show this help');
  return lines.join('\n');
}
