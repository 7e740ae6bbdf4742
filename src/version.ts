import pkg from '../package.json' with { type: 'json' };

/** Set by scripts/build.ts in the executable (esbuild `define`); not defined when run from source. */
declare const __CONTACT_LEDGER_COMMIT__: string | undefined;

/** The program's version, from package.json (inlined into the executable at build time). */
export const VERSION: string = pkg.version;

/**
 * The commit the executable was built from (its 40 hex digits; `-modified` after them when the
 * tree had uncommitted changes to tracked files), so that a site can build the same source and
 * compare (docs/operations.md, Verifying an executable); null when run from source.
 */
export const BUILT_FROM: string | null = typeof __CONTACT_LEDGER_COMMIT__ === 'string' ? __CONTACT_LEDGER_COMMIT__ : null;

/** What `version` prints: the version, and the commit of an executable. */
export const VERSION_LINE: string = BUILT_FROM ? `${VERSION} (commit ${BUILT_FROM})` : VERSION;
