// Rules about the code itself that keep the architecture honest (STYLE.md, RELIABILITY.md).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const walk = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.ts') ? [p] : [];
  });
const files = walk(join(root, 'src')).map((f) => ({ path: relative(root, f), text: readFileSync(f, 'utf8') }));
const isStorage = (p: string) => p.startsWith('src/storage/') || p.endsWith('-repo.ts');

const R = suite('code rules');

R('SQL lives only in the storage layer (src/storage/, *-repo.ts)', () => {
  const sql = /\.prepare\s*[<(]|\.exec\s*\(\s*['"`]|\b(SELECT|INSERT INTO|DELETE FROM)\b[^'"`]*\b(FROM|VALUES|WHERE)\b|\bUPDATE \w+ SET\b/;
  const offenders = files.filter((f) => !isStorage(f.path) && sql.test(f.text)).map((f) => f.path);
  assert.equal(offenders, []);
});

R('a committed migration is never edited (sql/migrations.sha256): a database it migrated would never get the change', () => {
  // A migration is a version number: a database at version N counts as migrated whatever migration N
  // said when it ran. Change the schema with a new migration; schema-reconcile.ts repairs what edits
  // of the past left behind. A new migration adds its line: (cd sql/migrations && sha256sum NNNN_name.sql) >> ../migrations.sha256
  const dir = join(root, 'sql', 'migrations');
  const recorded = new Map(readFileSync(join(root, 'sql', 'migrations.sha256'), 'utf8').trim().split('\n').map((l) => [l.slice(66), l.slice(0, 64)] as const));
  const now = readdirSync(dir).filter((n) => n.endsWith('.sql'));
  const edited = now.filter((n) => recorded.has(n) && recorded.get(n) !== createHash('sha256').update(readFileSync(join(dir, n))).digest('hex'));
  assert.equal(edited, [], 'edited after they were committed: write a new migration instead');
  assert.equal(now.filter((n) => !recorded.has(n)), [], 'migrations without their line in sql/migrations.sha256');
  assert.equal([...recorded.keys()].filter((n) => !now.includes(n)), [], 'lines of migrations that are gone');
});

R('no async callback in a transaction (a better-sqlite3 transaction cannot span an await)', () => {
  const offenders = files.filter((f) => /\.tx\(\s*async|\.transaction\(\s*async/.test(f.text)).map((f) => f.path);
  assert.equal(offenders, []);
});

R('secrets, tokens and hashes are never compared with === (constant-time helpers instead)', () => {
  const cmp = /\b\w*(secret|token|hash|password)\w*\s*[!=]==|[!=]==\s*\w*(secret|token|hash|password)\w*\b/i;
  // presence checks (=== undefined / null) and typeof checks compare no secret material
  const harmless = (l: string) => l.replace(/[!=]==\s*(undefined|null)\b|\b(undefined|null)\s*[!=]==|typeof \w+(\.\w+)*\s*[!=]==\s*'\w+'/g, '');
  const offenders = files.filter((f) => f.path.startsWith('src/identity/') && f.text.split('\n').some((l) => cmp.test(harmless(l)))).map((f) => f.path);
  assert.equal(offenders, []);
});

R('no test is left focused (a `.only` runs that test alone and the rest of its file passes unseen)', () => {
  const tests = [...walk(join(root, 'test')), ...walk(join(root, 'web'))].filter((f) => /\.test\.ts$|\.e2e\.ts$/.test(f));
  const focused = tests.filter((f) => /^\s*[A-Za-z]\w*\.only\(/m.test(readFileSync(f, 'utf8'))).map((f) => relative(root, f));
  assert.ok(tests.length > 20, `test files found (${tests.length})`);
  assert.equal(focused, []);
});

R('only one jwtVerify call site', () => {
  const sites = files.filter((f) => /jwtVerify\(/.test(f.text)).map((f) => f.path);
  assert.equal(sites, ['src/identity/access-tokens.ts']);
});

R('route handlers and HTTP code do not touch the database', () => {
  const offenders = files.filter((f) => (f.path.startsWith('src/http/') || f.path.endsWith('routes.ts')) && /\.raw\.|better-sqlite3/.test(f.text)).map((f) => f.path);
  assert.equal(offenders, []);
});

R('storage never imports a service or the HTTP layer (dependency direction)', () => {
  const offenders = files
    .filter((f) => f.path.startsWith('src/storage/') && /from '\.\.\/(http|identity|ledger|tracking|webhooks|jobs|cli)\//.test(f.text))
    .map((f) => f.path);
  assert.equal(offenders, []);
});

R('nothing but the HTTP listener and configured webhooks opens network connections', () => {
  const offenders = files.filter((f) => /\bfetch\(|http\.request\(|https\.request\(|net\.connect\(/.test(f.text) && !f.path.startsWith('src/webhooks/')).map((f) => f.path);
  assert.equal(offenders, []);
});

R.run();
