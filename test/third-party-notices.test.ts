// The third-party notices the build packs into the executable (scripts/third-party-notices.ts),
// over real installed packages; the executable's own `licenses` command is checked by the smoke
// test (scripts/smoke.ts) after the build.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageDirOf, thirdPartyNotices } from '../scripts/third-party-notices.ts';
import { tempDir } from './helpers.ts';

const N = suite('third-party notices');
const root = join(import.meta.dirname, '..');
const product = { name: 'contact-ledger', version: '9.9.9', nodeVersion: 'v22.0.0' };

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

N.run();
