import { ConfigError } from '../config.ts';

/** What an operation on a file says when this user may not (EROFS: a read-only file system, also for root). */
const NOT_PERMITTED = new Set(['EACCES', 'EPERM', 'EROFS']);

/** The errno code of `err` when it is a refusal of access to a file, else undefined. */
export function notPermittedCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && NOT_PERMITTED.has(code) ? code : undefined;
}

/**
 * A file of the data folder this user may not use (put there by root, a read-only mount): a
 * configuration error (exit 2, which the systemd unit does not restart — exit 1 restarted it for
 * ever: an operator tester's cases), naming the file and what to do. `what`: "cannot create",
 * "cannot read"…; `detail`: more after the code (whose the file is).
 */
export function notPermitted(what: string, path: string, code: string, detail = ''): ConfigError {
  const why = code === 'EROFS' ? 'EROFS: a read-only file system' : `${code}${detail}`;
  return new ConfigError(`${what} ${path} (${why}): run contact-ledger as the user that owns the data folder (e.g. sudo -u contact-ledger), or give it to that user (chown)`);
}
