import pkg from '../package.json' with { type: 'json' };

/** The program's version, from package.json (inlined into the executable at build time). */
export const VERSION: string = pkg.version;
