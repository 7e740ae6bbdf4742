import { basename, isAbsolute, relative, resolve, sep } from 'node:path';
import { regExpLiteral } from '../regexp-literal.ts';

/**
 * Paths of files inside the data folder (uploads, feed files) as the database stores them:
 * relative to the folder, so a database restored into, or moved with, another folder finds the
 * files of that folder and never touches the old one. Paths stored absolute by older versions are
 * read as they are.
 */
export interface DataFiles {
  /** What to store for an absolute path (relative when it is inside the data folder). */
  toStored(path: string): string;
  /** The absolute path of a stored one. */
  fromStored(stored: string): string;
}

export function dataFiles(dataDir: string): DataFiles {
  const root = resolve(dataDir);
  return {
    toStored(path) {
      const rel = relative(root, resolve(path));
      return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? resolve(path) : rel;
    },
    fromStored: (stored) => resolve(root, stored),
  };
}

/**
 * How a message that an organization's users read (a job's) names a file: relative to the data
 * folder when it is inside it ("uploads/imp_….csv"), else by its name alone (a path an older
 * version stored absolute, in the folder a database was restored from). Where the server keeps its
 * files is its operator's business, not the organization's.
 */
export function nameInDataFolder(dataDir: string, path: string): string {
  const rel = relative(resolve(dataDir), resolve(path));
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? basename(path) : rel;
}

/**
 * An error's message as users may read it: the data folder's absolute path, which system errors
 * carry ("EACCES: permission denied, open '/var/lib/…/uploads/imp_….csv'"), written `<data>`, as
 * the documentation names it. The server's log keeps the whole error.
 */
export function withoutDataFolderPath(dataDir: string, message: string): string {
  const root = resolve(dataDir);
  if (root === sep) return message;
  // the folder itself or a path in it, not a sibling whose name begins alike (/srv/cl, /srv/cl-old)
  return message.replace(new RegExp(`${regExpLiteral(root)}(?=[\\\\/'"\\s,;:)]|$)`, 'g'), '<data>');
}
