import { isAbsolute, relative, resolve } from 'node:path';

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
