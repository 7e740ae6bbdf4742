import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { Db, StartupError } from './db.ts';
import { migrate, type Migration } from './migrate.ts';

/**
 * Brings a database's tables and indexes to the shape this program's migrations give a new one,
 * when its migrations were applied in another version of their text. A migration is a version
 * number: a database migrated by a build whose migration N said something else (a migration edited
 * after it was committed: nine such states exist among the project's own commits, two of which
 * left the server unable to start or to write, an upgrade tester found) counts as migrated and
 * would never get the difference. So after migrating, the schema is compared with the reference (the
 * same migrations applied to an empty in-memory database) and every difference repaired, in one
 * transaction, with a log line each:
 * - an index missing or defined otherwise is (re)made; one the reference lacks is dropped;
 * - a table missing is made; a table that differs (see Table: its columns, STRICT, WITHOUT ROWID,
 *   AUTOINCREMENT, foreign keys, UNIQUE and PRIMARY KEY constraints) is rebuilt in the reference's
 *   shape with its rows — a column it lacked takes its default, or a value FILLS says how to derive;
 *   one without either is refused before anything is done; an AUTOINCREMENT table keeps its
 *   high-water mark;
 * - the repair fails (nothing changed, the start refused with what to do) when a row does not fit
 *   the new shape or it would leave rows referring to rows that are not there (references broken
 *   before it are not its own).
 */

interface Column {
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
  /** 0 a column a row stores; 2 and 3 generated (computed, never copied) */
  hidden: number;
}
/**
 * What a table is, as far as the repair compares it: its columns by name (type, NOT NULL, default
 * — `0` and `(0)` alike —, primary-key position), STRICT and WITHOUT ROWID, AUTOINCREMENT, its
 * foreign keys (with their ON DELETE / ON UPDATE) and its UNIQUE and PRIMARY KEY constraints.
 * Not compared: CHECK constraints and the column order (every copy names its columns).
 */
interface Table {
  sql: string;
  columns: Column[];
  /** A rowid table without an INTEGER PRIMARY KEY: its rowids are copied by name (queue-repo.ts orders jobs by rowid). */
  rowid: boolean;
  /** The comparable form of all of the above. */
  form: string;
}
interface Shape {
  tables: Map<string, Table>;
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
const bare = (dflt: string | null) => {
  let d = dflt?.trim() ?? null;
  while (d !== null && /^\(.*\)$/s.test(d)) d = d.slice(1, -1).trim();
  return d;
};

function tableOf(raw: Database.Database, name: string, sql: string): Table {
  const columns = raw.prepare('SELECT name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo(?)').all(name) as Column[];
  const list = raw.prepare('SELECT strict, wr FROM pragma_table_list WHERE schema = \'main\' AND name = ?').get(name) as { strict: number; wr: number };
  // each foreign key (its columns in order), whatever order the table declares them in
  const byId = new Map<number, string[]>();
  for (const f of raw.prepare('SELECT id, "table", "from", "to", on_update, on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq').all(name) as Record<string, unknown>[]) {
    const id = Number(f.id);
    byId.set(id, [...(byId.get(id) ?? []), `${String(f.from)}->${String(f.table)}.${String(f.to)} ${String(f.on_delete)}/${String(f.on_update)}`]);
  }
  const fks = [...byId.values()].map((cols) => cols.join('+')).sort();
  const unique = (raw.prepare("SELECT name, origin FROM pragma_index_list(?) WHERE origin IN ('u', 'pk')").all(name) as { name: string; origin: string }[])
    .map((ix) => `${ix.origin}(${(raw.prepare('SELECT name FROM pragma_index_info(?) ORDER BY seqno').pluck().all(ix.name) as string[]).join(',')})`)
    .sort();
  const cols = columns.map((c) => `${c.name} ${c.type} ${c.notnull} ${bare(c.dflt_value)} ${c.pk} ${c.hidden}`).sort();
  const form = JSON.stringify([cols, list.strict, list.wr, /\bAUTOINCREMENT\b/i.test(sql), fks, unique]);
  return { sql, columns, form, rowid: list.wr === 0 && !(columns.filter((c) => c.pk > 0).length === 1 && columns.find((c) => c.pk > 0)!.type.toUpperCase() === 'INTEGER') };
}

function shapeOf(raw: Database.Database): Shape {
  const tables: Shape['tables'] = new Map();
  const indexes: Shape['indexes'] = new Map();
  const rows = raw.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'").all() as { type: string; name: string; tbl_name: string; sql: string | null }[];
  for (const r of rows) {
    if (r.type === 'table') tables.set(r.name, tableOf(raw, r.name, r.sql!));
    else if (r.sql) indexes.set(r.name, { table: r.tbl_name, sql: norm(r.sql) }); // sql null: a constraint's automatic index (compared with its table)
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

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** What would bring the schema to the reference's: a line for each difference, and the repair. */
export interface SchemaRepair {
  /** One line a difference, for the log; empty when the schema is as it should be. */
  readonly steps: string[];
  /** Names this repair (a hash of its steps): its backup is taken once, however often a start retries it. */
  readonly id: string;
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
  const hasSequence = () => db.raw.prepare("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").get() !== undefined;
  for (const [name, t] of want.tables) {
    const live = have.tables.get(name);
    if (!live) {
      plan.push(() => db.raw.exec(t.sql));
      done.push(`table ${name} was missing: made`);
      rebuilt.add(name);
    } else if (live.form !== t.form) {
      const had = new Set(live.columns.filter((c) => c.hidden === 0).map((c) => c.name));
      const stored = t.columns.filter((c) => c.hidden === 0); // generated columns are computed again
      const values = stored.map((c) => {
        if (had.has(c.name)) return c.notnull && c.dflt_value !== null ? `coalesce(${q(c.name)}, ${c.dflt_value})` : q(c.name);
        if (c.dflt_value !== null) return c.dflt_value;
        const fill = FILLS[name]?.[c.name];
        if (fill !== undefined) return fill;
        if (!c.notnull) return 'NULL';
        throw new StartupError(`the database's table ${name} lacks the column ${c.name}, which this version needs and cannot derive; restore a backup taken before the upgrade and upgrade from a released version`);
      });
      const tmp = `${name}__reshaped`;
      const create = t.sql.replace(/^CREATE TABLE\s+("(?:[^"]|"")+"|[^\s(]+)/i, `CREATE TABLE ${q(tmp)}`);
      plan.push(() => {
        // an AUTOINCREMENT table's high-water mark goes with its sqlite_sequence row when it is
        // dropped: kept, so that no number it gave (a change's seq, which cursors hold) is given again
        const highest = hasSequence() ? (db.raw.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().get(name) as number | undefined) : undefined;
        db.raw.exec(create);
        const keepRowid = t.rowid && live.rowid;
        db.raw.exec(`INSERT INTO ${q(tmp)} (${[...(keepRowid ? ['rowid'] : []), ...stored.map((c) => q(c.name))].join(', ')}) SELECT ${[...(keepRowid ? ['rowid'] : []), ...values].join(', ')} FROM ${q(name)}`);
        db.raw.exec(`DROP TABLE ${q(name)}`);
        db.raw.exec(`ALTER TABLE ${q(tmp)} RENAME TO ${q(name)}`);
        if (highest !== undefined && /\bAUTOINCREMENT\b/i.test(t.sql)) {
          db.raw.prepare('INSERT INTO sqlite_sequence (name, seq) SELECT ?, 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)').run(name, name);
          db.raw.prepare('UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?').run(highest, name);
        }
      });
      const added = [...t.columns.map((c) => c.name)].filter((c) => !had.has(c));
      const dropped = live.columns.map((c) => c.name).filter((c) => !t.columns.some((w) => w.name === c));
      const what = [added.length ? `added ${added.join(', ')}` : '', dropped.length ? `dropped ${dropped.join(', ')}` : ''].filter(Boolean).join('; ');
      done.push(`table ${name} was rebuilt in this version's shape (${what || 'the same columns; their types, nullability or defaults, or the table\'s constraints, differed'})`);
      rebuilt.add(name); // its indexes went with it
    }
  }
  for (const [name, ix] of want.indexes) {
    const live = have.indexes.get(name);
    // an index goes with its table when that is rebuilt — the table it is on now, which may not be the reference's
    const stays = live !== undefined && !rebuilt.has(live.table);
    if (stays && live.sql === ix.sql && live.table === ix.table && !rebuilt.has(ix.table)) continue;
    if (stays) plan.push(() => db.raw.exec(`DROP INDEX ${q(name)}`));
    plan.push(() => db.raw.exec(ix.sql));
    if (!rebuilt.has(ix.table) || stays) done.push(stays ? `index ${name} was defined otherwise: made again` : `index ${name} was missing: made`);
  }
  for (const [name, ix] of have.indexes) {
    if (want.indexes.has(name) || rebuilt.has(ix.table) || !want.tables.has(ix.table)) continue;
    plan.push(() => db.raw.exec(`DROP INDEX ${q(name)}`));
    done.push(`index ${name} is not this version's: dropped`);
  }
  // the tables whose rows a rebuild may leave without their parent, or whose children it may orphan
  const affected = [...want.tables.keys()].filter(
    (name) => rebuilt.has(name) || (db.raw.prepare('SELECT "table" FROM pragma_foreign_key_list(?)').pluck().all(name) as string[]).some((parent) => rebuilt.has(parent)),
  );
  // a table made by the repair has none before it exists
  const exists = (name: string) => db.raw.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
  const violations = () => new Map(affected.filter(exists).map((name) => [name, (db.raw.pragma(`foreign_key_check(${q(name)})`) as unknown[]).length]));
  return {
    steps: done,
    id: createHash('sha256').update(done.join('\n')).digest('hex').slice(0, 12),
    apply() {
      if (!plan.length) return;
      db.raw.pragma('foreign_keys = OFF');
      try {
        db.tx(() => {
          const before = violations();
          for (const step of plan) step();
          // references already broken before (an orphan row) are not the repair's: only new ones stop it
          const grown = [...violations()].filter(([name, n]) => n > (before.get(name) ?? 0)).map(([name]) => name);
          if (grown.length) throw new StartupError(`it would leave rows of ${grown.join(', ')} referring to rows that are not there`);
        });
      } catch (err) {
        const why = err instanceof StartupError ? err.message : (err as Error).message;
        throw new StartupError(`the database's schema could not be repaired to this version's (${done.join('; ')}): ${why}. Nothing was changed; restore a backup taken before the upgrade, or run the version you upgraded from`);
      } finally {
        db.raw.pragma('foreign_keys = ON');
      }
    },
  };
}
