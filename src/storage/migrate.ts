import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { accountEmail, companyKey, emailKey, nameKey } from '../normalize.ts';
import { titleDomain, titleLevel } from '../title-rules.ts';
import type { Db } from './db.ts';
import { ConfigError } from '../config.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** Reads `NNNN_name.sql` files in version order; gaps or duplicates are a packaging error. */
export function loadMigrations(dir: string): Migration[] {
  const list = readdirSync(dir)
    .map((f) => ({ f, m: FILE.exec(f) }))
    .filter((x) => x.m)
    .map(({ f, m }) => ({ version: Number(m![1]), name: f, sql: readFileSync(join(dir, f), 'utf8') }))
    .sort((a, b) => a.version - b.version);
  list.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migrations must be numbered 0001, 0002, … without gaps; found ${m.name}`);
  });
  return list;
}

/** The schema version recorded in the file (0 for a new database). */
export function schemaVersion(db: Db): number {
  return Number(db.raw.pragma('user_version', { simple: true }));
}

/**
 * Migrations that `migrate` would apply; throws when the database is newer than this program — a
 * ConfigError (exit 2, which systemd's unit does not restart: only another executable or a restore
 * helps; until the forty-third session exit 1, restarted for ever after a rollback without restore).
 */
export function pendingMigrations(db: Db, migrations: Migration[]): Migration[] {
  const current = schemaVersion(db);
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new ConfigError(
      `the database ${db.file} has schema version ${current}, written by a newer contact-ledger; this version knows up to ${latest}. ` +
        'Run the newer version, or restore a backup taken before the upgrade.',
    );
  }
  return migrations.filter((m) => m.version > current);
}

/**
 * Applies pending migrations forward-only in ONE transaction: either all of them are applied and
 * recorded (in `schema_migrations` and `user_version`) or none is. Returns the names applied.
 */
export function migrate(db: Db, migrations: Migration[], now: number = Date.now()): string[] {
  const pending = pendingMigrations(db, migrations);
  if (pending.length === 0) return [];
  // What migrations may call besides SQL: the matching keys and the title's level and domain as the
  // server computes them, so that a change of their rules can recompute the stored ones (0019, 0020, 0024, 0028);
  // a text in Unicode's composed form, as a referenceId is stored (0035); a user's e-mail as stored (0046).
  db.raw.function('company_key', { deterministic: true }, (company: unknown) => (typeof company === 'string' ? companyKey(company) : null));
  db.raw.function('name_key', { deterministic: true }, (name: unknown) => (typeof name === 'string' ? nameKey(name) : null));
  db.raw.function('email_key', { deterministic: true }, (email: unknown) => (typeof email === 'string' ? emailKey(email) : null));
  db.raw.function('title_level', { deterministic: true }, (title: unknown) => (typeof title === 'string' ? (titleLevel(title) ?? null) : null));
  db.raw.function('nfc', { deterministic: true }, (text: unknown) => (typeof text === 'string' ? text.normalize('NFC') : null));
  db.raw.function('account_email', { deterministic: true }, (email: unknown) => (typeof email === 'string' ? accountEmail(email) : null));
  db.raw.function('title_domain', { deterministic: true }, (title: unknown) => (typeof title === 'string' ? (titleDomain(title) ?? null) : null));
  db.tx(() => {
    db.raw.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT');
    const mark = db.raw.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of pending) {
      db.raw.exec(m.sql);
      mark.run(m.version, m.name, now);
      db.raw.pragma(`user_version = ${m.version}`);
    }
  });
  return pending.map((m) => m.name);
}
