import type { Db } from './db.ts';

/** Installation settings (key/value) kept in the database so backups carry them. */
export function createSettingsRepo(db: Db) {
  const get = db.raw.prepare<[string], string>('SELECT value FROM settings WHERE key = ?').pluck();
  const insert = db.raw.prepare<[string, string]>('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING');
  return {
    /** Returns the value, or undefined if the key was never set. */
    findSetting: (key: string): string | undefined => get.get(key),
    /** Returns the stored value, creating it with `make()` first when absent. */
    getOrCreateSetting(key: string, make: () => string): string {
      const existing = get.get(key);
      if (existing !== undefined) return existing;
      return db.tx(() => {
        insert.run(key, make());
        return get.get(key)!;
      });
    },
  };
}
