import type { Config } from '../config.ts';
import { rotateSigningKeys } from '../identity/signing-keys.ts';
import { dataDirHolder } from '../storage/lock.ts';
import { prepareDataDir } from '../storage/storage.ts';
import { EXIT_OK, UsageError, type Io, type ParsedArgs } from './command.ts';
import { requireInstallation } from './common.ts';

export async function run(args: ParsedArgs, io: Io, config: Config): Promise<number> {
  if (args.positionals[0] !== 'rotate' || args.positionals.length !== 1) throw new UsageError('usage: contact-ledger keys rotate');
  requireInstallation(config);
  prepareDataDir(config.dataDir);
  const server = dataDirHolder(config.dataDir);
  const r = rotateSigningKeys(config.dataDir, Date.now());
  const kept = r.signing ? `; kept ${r.signing}, which the ${server ? `running server (${server.holder}) still signs with` : 'server signed with when it last ran'}` : '';
  io.out(`new signing key ${r.kid}${r.retired.length ? `; removed ${r.retired.join(', ')} (every token they signed has expired)` : ''}${kept}. Restart the server to use it.`);
  return EXIT_OK;
}
