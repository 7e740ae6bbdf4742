// The pieces of a reproducible build that can be checked in a second (docs/operations.md, Verifying
// an executable): the packing step's fixed folder for the SEA blob (scripts/pkg-fixed-sea-dir.cjs)
// and the reader that says where two executables differ (scripts/sea-blob.ts), over blobs that the
// Node.js binary the build embeds makes. Two whole builds compared are scripts/check-reproducible.ts
// (~2 min: not in npm test).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { differences, readPkgPayload, readSeaBlob } from '../scripts/sea-blob.ts';
import { tempDir } from './helpers.ts';

const R = suite('reproducible build');
const root = join(import.meta.dirname, '..');
const nodeBin = join(root, 'node_modules', 'node', 'bin', 'node');

R("pkg's SEA folder is the fixed one the build claimed, not a random one; other temporary folders stay random", () => {
  const fixed = join(tempDir(), 'sea');
  const r = spawnSync(
    process.execPath,
    [
      '--require',
      join(root, 'scripts', 'pkg-fixed-sea-dir.cjs'),
      '-e',
      // as pkg calls it (lib-es5/sea.js withSeaTmpDir)
      `const fsp = require('fs/promises'); const { join } = require('path'); const os = require('os');
       (async () => { const a = await fsp.mkdtemp(join(os.tmpdir(), 'pkg-sea-')); const b = await require('fs').promises.mkdtemp(join(os.tmpdir(), 'other-'));
       require('fs').rmdirSync(b); console.log(JSON.stringify([a, b])); })();`,
    ],
    { encoding: 'utf8', env: { ...process.env, CONTACT_LEDGER_SEA_DIR: fixed } },
  );
  assert.is(r.status, 0, r.stderr);
  const [sea, other] = JSON.parse(r.stdout) as [string, string];
  assert.is(sea, fixed);
  assert.match(other, new RegExp(`^${tmpdir()}/other-[A-Za-z0-9]{6}$`));
});

/** A blob as pkg has Node make it, in an "executable": some bytes, the ELF note's name, the blob. */
function executable(dir: string, files: Record<string, string>, mainName = 'sea-main.js'): Buffer {
  const main = join(dir, mainName);
  writeFileSync(main, 'console.log("bootstrap")');
  const names = Object.keys(files).sort();
  let archive = '';
  const offsets: Record<string, [number, number]> = {};
  for (const name of names) {
    offsets[name] = [Buffer.byteLength(archive), Buffer.byteLength(files[name]!)];
    archive += files[name];
  }
  writeFileSync(join(dir, '__pkg_archive__'), archive);
  writeFileSync(join(dir, '__pkg_manifest__.json'), JSON.stringify({ entrypoint: `/snapshot${names[0]}`, directories: {}, stats: {}, offsets }));
  const blob = join(dir, 'sea-prep.blob');
  writeFileSync(
    join(dir, 'sea-config.json'),
    JSON.stringify({ main, output: blob, disableExperimentalSEAWarning: true, useCodeCache: false, useSnapshot: false, assets: { __pkg_manifest__: join(dir, '__pkg_manifest__.json'), __pkg_archive__: join(dir, '__pkg_archive__') } }),
  );
  const r = spawnSync(nodeBin, ['--experimental-sea-config', join(dir, 'sea-config.json')], { cwd: dir, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  return Buffer.concat([Buffer.from('\x7fELF the Node.js binary '), Buffer.from('NODE_SEA_BLOB\0\0\0'), readFileSync(blob), Buffer.from(' its last bytes')]);
}

R("the reader finds the blob's main-script path and pkg's files in what Node 22 writes", () => {
  const dir = tempDir();
  const exe = executable(dir, { '/app/dist/main.cjs': 'main();', '/app/sql/0001.sql': 'CREATE TABLE t(x);' });
  const blob = readSeaBlob(exe);
  assert.ok(blob, 'a blob');
  assert.is(blob.codePath, join(dir, 'sea-main.js'));
  assert.is(blob.main.toString(), 'console.log("bootstrap")');
  const payload = readPkgPayload(blob);
  assert.ok(payload, "pkg's payload");
  assert.equal([...payload.files.keys()], ['/app/dist/main.cjs', '/app/sql/0001.sql']);
  assert.is(payload.files.get('/app/sql/0001.sql')!.toString(), 'CREATE TABLE t(x);');
  assert.is(readSeaBlob(Buffer.from('no blob here')), undefined);
});

R('two executables: nothing said to differ when they are the same; else the main-script path, the manifest and the files that differ', () => {
  const [one, two, three] = [tempDir(), tempDir(), tempDir()];
  const files = { '/app/dist/main.cjs': 'main();', '/app/web/index.html': '<p>' };
  const a = executable(one, files);
  assert.equal(differences(a, executable(one, files)), [`${a.length} and ${a.length} bytes; 0 bytes differ`]);
  const b = executable(two, { '/app/dist/main.cjs': 'main(1);', '/app/web/index.html': '<p>' });
  const said = differences(a, b).join('\n');
  assert.match(said, `the blob's main-script path: ${join(one, 'sea-main.js')} / ${join(two, 'sea-main.js')}`);
  assert.match(said, '/dist/main.cjs: ');
  assert.not.match(said, '/web/index.html');
  // the same files under a snapshot folder of another name: compared file by file
  const c = executable(three, { '/other/dist/main.cjs': 'main();', '/other/web/index.html': '<x>' });
  const renamed = differences(a, c).join('\n');
  assert.match(renamed, 'entry points /snapshot/app/dist/main.cjs / /snapshot/other/dist/main.cjs');
  assert.match(renamed, '/web/index.html: 1 bytes differ');
  assert.not.match(renamed, '/dist/main.cjs:');
});

R.run();
