import Database from 'better-sqlite3';
import { Db, StartupError } from './db.ts';
import { migrate, type Migration } from './migrate.ts';

/**
 * Brings a database's tables and indexes to the shape this program's migrations give a new one,
 * when its migrations were applied in another version of their text. A migration is a version
 * number: a database migrated by a build whose migration N said something else (a migration edited
 * after it was committed: nine such states exist among the project's own commits, two of which
 * left the server unable to start or to write, an upgrade tester found) counts as migrated and
 * would never get the difference. So after migrating, the schema is compared with the reference (the same
 * migrations applied to an empty in-memory database) and every difference repaired, in one
 * transaction, with a log line each:
 * - an index missing or defined otherwise is (re)made; one the reference lacks is dropped;
 * - a table missing is made; a table whose columns differ (a column missing, extra, of another type,
 *   nullability or default) is rebuilt in the reference's shape with its rows: a column it lacked
 *   takes its default, or a value FILLS says how to derive; one without either is refused (nothing
 *   changed, the error says which).
 */

interface Column {
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
}
interface Shape {
  tables: Map<string, { sql: string; columns: Column[] }>;
  indexes: Map<string, { table: string; sql: string }>;
}

/**
 * Values for a column a table lacked that is NOT NULL without a default, from the old row's
 * columns: the day a remembered feed record was applied was not kept before 0043's second text (its
 * observation day is the nearest: rows are kept FEED_REPLAY_DAYS after it).
 */
const FILLS: Record<string, Record<string, string>> = {
  feed_records_applied: { applied_day: 'observed_day' },
};

const norm = (sql: string) => sql.replace(/\s+/g, ' ').trim();

function shapeOf(raw: Database.Database): Shape {
  const tables: Shape['tables'] = new Map();
  const indexes: Shape['indexes'] = new Map();
  const rows = raw.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'").all() as { type: string; name: string; tbl_name: string; sql: string | null }[];
  for (const r of rows) {
    if (r.type === 'table') tables.set(r.name, { sql: r.sql!, columns: raw.prepare('SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_xinfo(?)').all(r.name) as Column[] });
    else if (r.sql) indexes.set(r.name, { table: r.tbl_name, sql: norm(r.sql) }); // sql null: a constraint's automatic index
  }
  return { tables, indexes };
}

/** The schema `migrations` give a new database. */
export function referenceShape(migrations: Migration[]): Shape {
  const raw = new Database(':memory:');
  try {
    migrate(new Db(raw, ':memory:'), migrations, 0);
    return shapeOf(raw);
  } finally {
    raw.close();
  }
}

const sameColumns = (a: Column[], b: Column[]) => a.length === b.length && a.every((c, i) => JSON.stringify(c) === JSON.stringify(b[i]));
const q = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** What would bring the schema to the reference's: a line for each difference, and the repair. */
export interface SchemaRepair {
  /** One line a difference, for the log; empty when the schema is as it should be. */
  readonly steps: string[];
  /**
   * Repairs them in one transaction, outside any other: foreign keys are off while tables are
   * rebuilt and checked before the commit.
   */
  apply(): void;
}

/** Compares the database's schema with `migrations`' (see above). */
export function planSchemaRepair(db: Db, migrations: Migration[]): SchemaRepair {
  const want = referenceShape(migrations);
  const have = shapeOf(db.raw);
  const done: string[] = [];
  const plan: (() => void)[] = [];
  const rebuilt = new Set<string>();
  for (const [name, t] of want.tables) {
    const live = have.tables.get(name);
    if (!live) {
      plan.push(() => db.raw.exec(t.sql));
      done.push(`table ${name} was missing: made`);
      rebuilt.add(name);
    } else if (!sameColumns(live.columns, t.columns)) {
      const had = new Set(live.columns.map((c) => c.name));
      const values = t.columns.map((c) => {
        if (had.has(c.name)) return c.notnull && c.dflt_value !== null ? `coalesce(${q(c.name)}, ${c.dflt_value})` : q(c.name);
        if (c.dflt_value !== null) return c.dflt_value;
        const fill = FILLS[name]?.[c.name];
        if (fill !== undefined) return fill;
        if (!c.notnull) return 'NULL';
        throw new StartupError(`the database's table ${name} lacks the column ${c.name}, which this version needs and cannot derive; restore a backup taken before the upgrade and upgrade from a released version`);
      });
      const tmp = `${name}__reshaped`;
      const create = t.sql.replace(/^CREATE TABLE\s+("[^"]+"|\S+)/i, `CREATE TABLE ${q(tmp)}`);
      plan.push(() => {
        db.raw.exec(create);
        db.raw.exec(`INSERT INTO ${q(tmp)} (${t.columns.map((c) => q(c.name)).join(', ')}) SELECT ${values.join(', ')} FROM ${q(name)}`);
        db.raw.exec(`DROP TABLE ${q(name)}`);
        db.raw.exec(`ALTER TABLE ${q(tmp)} RENAME TO ${q(name)}`);
      });
      const was = live.columns.map((c) => c.name).join(', ');
      const now = t.columns.map((c) => c.name).join(', ');
      done.push(`table ${name} was rebuilt in this version's shape (${was === now ? 'the same columns, other types, nullability or defaults' : `columns (${was}) → (${now})`})`);
      rebuilt.add(name); // its indexes went with it
    }
  }
  for (const [name, ix] of want.indexes) {
    const live = have.indexes.get(name);
    if (live && live.sql === ix.sql && !rebuilt.has(ix.table)) continue;
    if (live && !rebuilt.has(ix.table)) plan.push(() => db.raw.exec(`DROP INDEX ${q(name)}`));
    plan.push(() => db.raw.exec(ix.sql));
    if (!rebuilt.has(ix.table)) done.push(live ? `index ${name} was defined otherwise: made again` : `index ${name} was missing: made`);
  }
  for (const [name, ix] of have.indexes) {
    if (want.indexes.has(name) || rebuilt.has(ix.table) || !want.tables.has(ix.table)) continue;
    plan.push(() => db.raw.exec(`DROP INDEX ${q(name)}`));
    done.push(`index ${name} is not this version's: dropped`);
  }
  return {
    steps: done,
    apply() {
      if (!plan.length) return;
      db.raw.pragma('foreign_keys = OFF');
      try {
        db.tx(() => {
          for (const step of plan) step();
          const broken = db.raw.pragma('foreign_key_check') as unknown[];
          if (broken.length) throw new StartupError(`repairing the database's schema would break ${broken.length} foreign key reference(s); nothing was changed`);
        });
      } finally {
        db.raw.pragma('foreign_keys = ON');
      }
    },
  };
}
