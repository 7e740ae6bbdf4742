import { loadConfig } from '../config.ts';
import { rotateSigningKeys } from '../identity/signing-keys.ts';
import { dataDirHolder } from '../storage/lock.ts';
import { prepareDataDir } from '../storage/storage.ts';
import { EXIT_OK, UsageError, type Command } from './command.ts';

export const keysCommand: Command = {
  name: 'keys',
  summary: 'Rotate the access-token signing key: a new key signs from the next start, and every key that signed tokens still alive keeps verifying until they expire. Restart the server afterwards.',
  usage: 'keys rotate [options]',
  takesConfig: true,
  async run(args, io) {
    if (args.positionals[0] !== 'rotate' || args.positionals.length !== 1) throw new UsageError('usage: contact-ledger keys rotate');
    const config = loadConfig(io.env, args.config);
    prepareDataDir(config.dataDir);
    const server = dataDirHolder(config.dataDir);
    const r = rotateSigningKeys(config.dataDir, Date.now());
    const kept = r.signing ? `; kept ${r.signing}, which the ${server ? `running server (pid ${server.pid}) still signs with` : 'server signed with when it last ran'}` : '';
    io.out(`new signing key ${r.kid}${r.retired.length ? `; removed ${r.retired.join(', ')} (every token they signed has expired)` : ''}${kept}. Restart the server to use it.`);
    return EXIT_OK;
  },
};
