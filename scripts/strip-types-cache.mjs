// Loads the repository's TypeScript with its types stripped once per state of a file, not at every
// start: scripts/run-tests.ts starts each test file with `--import` of this module. Node strips the
// types of every .ts file it loads with a WebAssembly build of swc (amaro), about 1 s of CPU for
// the ~150 files of src/ and test/ that a test file loads, in each of the suite's ~40 processes.
// Here the stripped text is kept in .cache/strip-types/<sha-256 of the source>.js and read back,
// so amaro is not even loaded once the cache is warm. The text is what Node would run: the same
// function (module.stripTypeScriptTypes, mode "strip", which keeps every line and column in place,
// so stack traces point where they did). Plain JavaScript on purpose: a .ts file would be stripped
// by amaro itself.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { registerHooks, stripTypeScriptTypes } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';

const root = join(import.meta.dirname, '..');
const cache = join(root, '.cache', 'strip-types');
const ours = (url) => url.startsWith('file:') && url.endsWith('.ts') && !url.includes('/node_modules/');

// Worker threads inherit `--import`; the tests start theirs compiled (scripts/test-bundle.ts), so
// there the hook would only cost each thread's start (~10 ms).
if (isMainThread) registerHooks({
  load(url, context, nextLoad) {
    if (!ours(url)) return nextLoad(url, context);
    const text = readFileSync(fileURLToPath(url), 'utf8');
    const file = join(cache, `${createHash('sha256').update(text).digest('hex')}.js`);
    let source;
    try {
      source = readFileSync(file, 'utf8');
    } catch {
      source = stripTypeScriptTypes(text, { mode: 'strip' });
      // written beside and renamed into place: test files starting at once may write one entry
      mkdirSync(cache, { recursive: true });
      const partial = `${file}.${process.pid}.partial`;
      writeFileSync(partial, source);
      renameSync(partial, file);
    }
    return { format: 'module', source, shortCircuit: true };
  },
});
