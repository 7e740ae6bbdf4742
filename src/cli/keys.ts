import { loadConfig } from '../config.ts';
import { rotateSigningKeys } from '../identity/signing-keys.ts';
import { dataDirHolder } from '../storage/lock.ts';
import { prepareDataDir } from '../storage/storage.ts';
import { EXIT_OK, UsageError, type Command } from './command.ts';

export const keysCommand: Command = {
  name: 'keys',
  summary: 'Rotate the access-token signing key: a new key signs, the previous one still verifies until its tokens expire. Restart the server afterwards.',
  usage: 'keys rotate [options]',
  takesConfig: true,
  async run(args, io) {
    if (args.positionals[0] !== 'rotate' || args.positionals.length !== 1) throw new UsageError('usage: contact-ledger keys rotate');
    const config = loadConfig(io.env, args.config);
    prepareDataDir(config.dataDir);
    const server = dataDirHolder(config.dataDir);
    const r = rotateSigningKeys(config.dataDir, Date.now(), server && { since: server.since, tokenTtlMs: config.tokenTtlSeconds * 1000 });
    const kept = r.stillSigning ? `; kept ${r.stillSigning}, which the running server (pid ${server!.pid}) still signs with` : '';
    io.out(`new signing key ${r.kid}${r.retired.length ? `; retired ${r.retired.join(', ')}` : ''}${kept}. Restart the server to use it.`);
    return EXIT_OK;
  },
};
