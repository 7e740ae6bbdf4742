// The third-party notices shipped with the executable (scripts/build.ts): every package esbuild
// put into the server bundle or the web application, with its version, its license and the text
// of its license files, as their licenses (MIT, ISC, BSD, Apache-2.0) ask of copies that are
// passed on. `contact-ledger licenses` prints them.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';

/** The folder of the package a bundled file belongs to (the innermost node_modules/<name> or node_modules/@scope/<name>), or undefined for our own files. */
export function packageDirOf(file: string): string | undefined {
  const parts = file.split(/[\\/]/);
  const at = parts.lastIndexOf('node_modules');
  if (at < 0 || at + 1 >= parts.length) return undefined;
  const width = parts[at + 1]!.startsWith('@') ? 2 : 1;
  return parts.slice(0, at + 1 + width).join(sep);
}

const LICENSE_FILE = /^(licen[cs]e|copying|notice)(\.|-|$)/i;

/** What the runtime and the native code carry besides npm packages. */
const builtIn = (nodeVersion: string) => `Node.js ${nodeVersion} — the runtime the executable is built on (MIT license, with the licenses of its own
dependencies: https://github.com/nodejs/node/blob/${nodeVersion}/LICENSE).

SQLite — the database engine, compiled into better-sqlite3's addon: in the public domain
(https://sqlite.org/copyright.html).`;

/**
 * The notices for the packages in `packageDirs` (absolute or relative to `root`): one section per
 * package, sorted by name, each with the name, version, the license its package.json declares and
 * its license files. Throws when a package has neither a declared license nor a license file.
 */
export function thirdPartyNotices(root: string, packageDirs: Iterable<string>, product: { name: string; version: string; nodeVersion: string }): string {
  const sections = new Map<string, string>();
  for (const dir of new Set(packageDirs)) {
    const abs = isAbsolute(dir) ? dir : join(root, dir);
    const pkg = JSON.parse(readFileSync(join(abs, 'package.json'), 'utf8')) as { name: string; version: string; license?: string | { type?: string } };
    const declared = typeof pkg.license === 'string' ? pkg.license : pkg.license?.type;
    const files = readdirSync(abs).filter((f) => LICENSE_FILE.test(f) && existsSync(join(abs, f))).sort();
    if (!declared && files.length === 0) throw new Error(`${pkg.name} (${relative(root, abs)}) declares no license and has no license file`);
    const texts = files.map((f) => readFileSync(join(abs, f), 'utf8').trim());
    const head = `${pkg.name} ${pkg.version} — ${declared ?? 'see below'}`;
    sections.set(`${pkg.name}@${pkg.version}`, [head, '-'.repeat(Math.min(head.length, 100)), ...(texts.length ? texts : [`(no license file in the package; its package.json declares ${declared})`])].join('\n\n'));
  }
  const body = [...sections.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, text]) => text);
  return [
    `${product.name} ${product.version} includes the following third-party software.`,
    builtIn(product.nodeVersion),
    `The npm packages in the executable (${body.length}), each with its license:`,
    ...body,
  ].join('\n\n\n') + '\n';
}
