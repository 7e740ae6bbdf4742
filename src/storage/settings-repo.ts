import { randomBytes } from 'node:crypto';
import type { Db } from './db.ts';

/** Installation settings (key/value) kept in the database so backups carry them. */
export function createSettingsRepo(db: Db) {
  const get = db.raw.prepare<[string], string>('SELECT value FROM settings WHERE key = ?').pluck();
  const insert = db.raw.prepare<[string, string]>('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING');
  /** Returns the stored value, creating it with `make()` first when absent. */
  function getOrCreate(key: string, make: () => string): string {
    const existing = get.get(key);
    if (existing !== undefined) return existing;
    return db.tx(() => {
      insert.run(key, make());
      return get.get(key)!;
    });
  }
  return {
    /**
     * A 256-bit secret of the installation, made at its first use. Kept in the database, so a
     * restored backup keeps what it protects valid (passwords, list cursors).
     */
    secret: (key: string): Buffer => Buffer.from(getOrCreate(key, () => randomBytes(32).toString('base64url')), 'base64url'),
  };
}
