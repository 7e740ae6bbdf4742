// The executable's SQLite library placed in the data folder (src/storage/sqlite-addon.ts): whole
// or not at all, never rewritten where a running process may have it loaded, by any number of
// processes starting at the same moment. (The executable itself loads it in scripts/smoke.ts.)
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../src/config.ts';
import { NATIVE_DIR, placeLibrary } from '../src/storage/sqlite-addon.ts';
import { childrenAtOnce, tempDir } from './helpers.ts';

const A = suite('the SQLite library in the data folder');

/** A stand-in for the library: random bytes, large enough for a write to take a while. */
function library(bytes = 4 * 1024 * 1024): string {
  const file = join(tempDir(), 'lib.node');
  writeFileSync(file, randomBytes(bytes));
  return file;
}

A('placed once under a name holding its digest, in a folder of its own, and used as it is after that', () => {
  const source = library(64 * 1024);
  const data = tempDir();
  const placed = placeLibrary(source, data, 'better-sqlite3');
  assert.match(placed, new RegExp(`/${NATIVE_DIR}/better-sqlite3-[0-9a-f]{16}\\.node$`));
  assert.ok(readFileSync(placed).equals(readFileSync(source)));
  assert.is((statSync(join(data, NATIVE_DIR)).mode & 0o777).toString(8), '700');
  const inode = statSync(placed).ino;
  assert.is(placeLibrary(source, data, 'better-sqlite3'), placed);
  assert.is(statSync(placed).ino, inode, 'not written again');
  assert.equal(readdirSync(join(data, NATIVE_DIR)), [placed.split('/').at(-1)], 'nothing else left there');
});

A('a damaged file in its place (a killed process\'s) is replaced by a rename: a process that has it open keeps what it had', () => {
  const source = library(64 * 1024);
  const data = tempDir();
  const placed = placeLibrary(source, data, 'lib');
  writeFileSync(placed, readFileSync(source).subarray(0, 1000)); // half of it, as pkg's loader could leave it
  const damaged = statSync(placed).ino;
  const held = openSync(placed, 'r'); // a process that loaded it
  try {
    assert.is(placeLibrary(source, data, 'lib'), placed);
    assert.ok(readFileSync(placed).equals(readFileSync(source)), 'whole again');
    assert.is.not(statSync(placed).ino, damaged, 'a new file, not the old one rewritten');
    const buf = Buffer.alloc(2000);
    assert.is(readSync(held, buf, 0, 2000, 0), 1000, 'the open one is as it was');
  } finally {
    closeSync(held);
  }
});

A('processes placing it at the same moment all get the whole file, and leave nothing half-written', async () => {
  const source = library();
  const data = tempDir();
  const module = pathToFileURL(join(import.meta.dirname, '..', 'src', 'storage', 'sqlite-addon.ts')).href;
  const script = `const { placeLibrary } = await import(${JSON.stringify(module)});
    const { readFileSync } = await import('node:fs');
    process.stdin.once('data', () => {
      const placed = placeLibrary(${JSON.stringify(source)}, ${JSON.stringify(data)}, 'lib');
      // what a loader reads right after: the whole library
      process.stdout.write(readFileSync(placed).equals(readFileSync(${JSON.stringify(source)})) ? 'whole' : 'damaged');
    });
    console.error('ready');`;
  for (let round = 0; round < 3; round++) {
    const said = (await childrenAtOnce(script, 6)).map((c) => `${c.code} ${c.stdout}`);
    assert.equal(said, Array(6).fill('0 whole'), `round ${round}`);
    assert.is(readdirSync(join(data, NATIVE_DIR)).length, 1, 'one file, no partial ones');
  }
});

A('temporary files that killed processes left there are removed after ten minutes, not those of a write going on', () => {
  const source = library(1024);
  const data = tempDir();
  const placed = placeLibrary(source, data, 'lib');
  const dir = join(data, NATIVE_DIR);
  const old = join(dir, '.lib-0123456789abcdef.4242-0.partial');
  const fresh = join(dir, '.lib-0123456789abcdef.4343-0.partial');
  writeFileSync(old, 'half');
  writeFileSync(fresh, 'half');
  const hourAgo = new Date(Date.now() - 3_600_000);
  utimesSync(old, hourAgo, hourAgo);
  placeLibrary(source, data, 'lib');
  assert.equal(readdirSync(dir).sort(), [fresh.split('/').at(-1), placed.split('/').at(-1)].sort());
});

A('a data folder where it cannot be placed is a configuration error (exit 2) naming the folder', () => {
  const data = tempDir();
  writeFileSync(join(data, NATIVE_DIR), 'a file in the way');
  try {
    placeLibrary(library(1024), data, 'lib');
    assert.unreachable('placed');
  } catch (err) {
    assert.instance(err, ConfigError);
    assert.match((err as Error).message, new RegExp(`cannot be placed in ${join(data, NATIVE_DIR)} \\(EEXIST\\); the data folder must be writable`));
  }
});

A.run();
