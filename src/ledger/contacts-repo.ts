import type { Statement } from 'better-sqlite3';
import { nextTurn } from '../event-loop.ts';
import { openDb, type Db } from '../storage/db.ts';
import type { Contact } from './model.ts';
import { companyKey, nameKey, storedEmailKey } from '../normalize.ts';
import {
  countSql, foldForContains, listParts, nameKeyPattern, RANGE_INDEX, rowsOfSeqsSql, rowsSql, SORTS, windowEndSql,
  type ContactFilter, type ContactPosition, type ContactSort, type ListPart,
} from './contacts-list-repo.ts';

const SORT_VALUE: Record<ContactSort, (c: Contact) => string | number | null> = {
  '+createdAt': (c) => c.createdAt,
  '-createdAt': (c) => c.createdAt,
  '+name': (c) => c.name,
  '-name': (c) => c.name,
  '-lastJobChangedAt': (c) => c.lastJobChangedAt,
  '-lastInfoChangedAt': (c) => c.lastInfoChangedAt,
};

/** The key of `c` under `sort`, for the next page's cursor. */
export function positionOf(c: Contact, sort: ContactSort): ContactPosition {
  const value = SORT_VALUE[sort](c);
  return value === null ? { value: null, seq: c.seq, nulls: true } : { value, seq: c.seq };
}

const RANGE_PROBE_LIMIT = 5000;
/**
 * The largest ledger whose name index a name search reads whole to learn whether few names match
 * (10 ms at 100,000 contacts); larger ones walk the sort order (docs/decisions.md).
 */
const NAME_PROBE_MAX_CONTACTS = 100_000;

export interface ContactRow {
  seq: number;
  id: string;
  ledger_id: string;
  import_id: string | null;
  reference_id: string | null;
  name: string;
  company: string;
  import_company: string;
  import_title: string | null;
  title: string | null;
  title_level: string | null;
  title_domain: string | null;
  location: string | null;
  email: string | null;
  email_status: string | null;
  linkedin: string | null;
  has_multiple_jobs: number | null;
  is_verified: number;
  job_started_at: number | null;
  last_job_changed_at: number | null;
  last_info_changed_at: number | null;
  created_at: number;
  updated_at: number;
}

const COLUMNS =
  'seq, id, ledger_id, import_id, reference_id, name, company, import_company, import_title, title, title_level, title_domain, location, email, email_status, linkedin, has_multiple_jobs, is_verified, job_started_at, last_job_changed_at, last_info_changed_at, created_at, updated_at';

/**
 * A contact as the CSV download writes it, straight from SQLite as an array (no object per row:
 * a million-row download would make a million of them): seq, then the columns of the download in
 * its order (routes.ts DOWNLOAD_HEADER), times in epoch ms, isVerified as 0/1.
 */
export type DownloadRow = [
  seq: number, id: string, referenceId: string | null, name: string, linkedin: string | null, importCompany: string, importTitle: string | null,
  company: string, title: string | null, titleLevel: string | null, titleDomain: string | null, email: string | null, location: string | null,
  isVerified: number, lastJobChangedAt: number | null, lastInfoChangedAt: number | null, createdAt: number,
];

const DOWNLOAD_COLUMNS =
  'seq, id, reference_id, name, linkedin, import_company, import_title, company, title, title_level, title_domain, email, location, is_verified, last_job_changed_at, last_info_changed_at, created_at';

/** Where each sort's value is in a DownloadRow. */
const DOWNLOAD_SORT_INDEX: Record<ContactSort, number> = {
  '+createdAt': 16,
  '-createdAt': 16,
  '+name': 3,
  '-name': 3,
  '-lastJobChangedAt': 14,
  '-lastInfoChangedAt': 15,
};

/** The key of a download row under `sort`, for the next page. */
export function downloadPosition(r: DownloadRow, sort: ContactSort): ContactPosition {
  const value = r[DOWNLOAD_SORT_INDEX[sort]] as string | number | null;
  return value === null ? { value: null, seq: r[0], nulls: true } : { value, seq: r[0] };
}

export const toContact = (r: ContactRow): Contact => ({
  seq: r.seq,
  id: r.id,
  ledgerId: r.ledger_id,
  importId: r.import_id,
  referenceId: r.reference_id,
  name: r.name,
  company: r.company,
  importCompany: r.import_company,
  importTitle: r.import_title,
  title: r.title,
  titleLevel: r.title_level,
  titleDomain: r.title_domain,
  location: r.location,
  email: r.email,
  emailStatus: r.email_status,
  linkedin: r.linkedin,
  hasMultipleJobs: r.has_multiple_jobs === null ? null : r.has_multiple_jobs === 1,
  isVerified: r.is_verified === 1,
  jobStartedAt: r.job_started_at,
  lastJobChangedAt: r.last_job_changed_at,
  lastInfoChangedAt: r.last_info_changed_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A contact as the import runner stores it. */
export interface NewContactRow {
  id: string;
  ledgerId: string;
  importId: string | null;
  referenceId: string | null;
  name: string;
  company: string;
  title: string | null;
  titleLevel: string | null;
  titleDomain: string | null;
  location: string | null;
  email: string | null;
  linkedin: string | null;
  now: number;
}

export type ContactsRepo = ReturnType<typeof createContactsRepo>;

/**
 * How a walk that may read far beyond the rows it returns is cut into steps (stepThrough): windows
 * of its index entries, the first `firstRows` long, then sized from the last step's cost to take
 * about `targetMs`, with a turn of the event loop between two steps.
 */
export interface ScanSteps {
  firstRows: number;
  minRows: number;
  maxRows: number;
  targetMs: number;
}

export const SCAN_STEPS: ScanSteps = { firstRows: 2000, minRows: 100, maxRows: 500_000, targetMs: 5 };

/** The next window's length: sized to the target from the last step's cost, growing or shrinking at most 4× a step. */
function nextWindow(rows: number, ms: number, s: ScanSteps): number {
  const fit = Math.floor((rows * s.targetMs) / Math.max(ms, 0.01));
  return Math.max(s.minRows, Math.min(s.maxRows, rows * 4, Math.max(Math.floor(rows / 4), fit)));
}


/** The SQL functions the list's conditions call (contacts-list-repo.ts whereOf), on a connection. */
function addListFunctions(conn: Db): void {
  conn.raw.function('cl_contains_ci', { deterministic: true }, (haystack: unknown, needle: unknown) =>
    typeof haystack === 'string' && typeof needle === 'string' && foldForContains(haystack).includes(needle) ? 1 : 0,
  );
}

/** How many keys one step of a download's order reads (downloadOrder): a few ms through the sort's index. */
const ORDER_STEP = 10_000;
/** The page cache of the connection a download's order is read on: it reads index entries once, in order. */
const ORDER_CACHE_KIB = 2048;

/**
 * Contacts: batch inserts for the import runner, lookups, deletes, and the list query of §4.2, its
 * count and its download pages. The driving index is chosen here (choosePlan) and named explicitly,
 * so that every list is an index scan (test/ledger-contacts.test.ts asserts it); the statements are
 * assembled in contacts-list-repo.ts, and a long walk is run in steps (stepThrough).
 */
export function createContactsRepo(db: Db, reader: Db = db, opts: { steps?: ScanSteps; orderStep?: number } = {}) {
  const steps = opts.steps ?? SCAN_STEPS;
  const orderStep = opts.orderStep ?? ORDER_STEP;
  for (const conn of new Set([db, reader])) addListFunctions(conn);
  const q = {
    insert: db.raw.prepare(
      `INSERT INTO contacts (id, ledger_id, import_id, reference_id, name, company, import_company, import_title, title, title_level, title_domain, location, email, linkedin, created_at, updated_at, name_key, company_key, email_key)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    ),
    byId: db.raw.prepare<[string, string], ContactRow>(`SELECT ${COLUMNS} FROM contacts WHERE id = ? AND ledger_id = ?`),
    byReference: db.raw.prepare<[string, string], { id: string; import_id: string | null }>('SELECT id, import_id FROM contacts WHERE ledger_id = ? AND reference_id = ?'),
    delete: db.raw.prepare<[string, string]>('DELETE FROM contacts WHERE id = ? AND ledger_id = ?'),
    purgeChunk: db.raw.prepare<[string, number]>('DELETE FROM contacts WHERE seq IN (SELECT seq FROM contacts WHERE ledger_id = ? LIMIT ?)'),
  };
  /** Statements of assembled SQL, prepared once per connection (the list SQL comes in few shapes). */
  const statementCache = (conn: Db, rawRows: boolean) => {
    const statements = new Map<string, Statement>();
    return (sql: string): Statement => {
      let s = statements.get(sql);
      if (!s) {
        s = conn.raw.prepare(sql);
        if (rawRows) s.raw(true);
        statements.set(sql, s);
      }
      return s;
    };
  };
  const prepared = statementCache(db, false);
  /** Download pages: on the read-only connection, rows as arrays (DownloadRow). */
  const preparedOnReader = statementCache(reader, true);

  /** The key of the walk's entry `rows` entries after `from`, from its index alone; undefined when fewer are left. */
  const windowEnd = (part: ListPart, prep: (sql: string) => Statement, from: readonly unknown[] | undefined, rows: number): unknown[] | undefined => {
    const q = windowEndSql(part, from);
    return prep(q.sql).raw(true).get(...q.params, rows - 1) as unknown[] | undefined;
  };

  /**
   * Runs `step` over a part: at once, whole, unless `stepped`; then over windows of the walk's index
   * entries, one after the other, with a turn of the event loop between two, until `step` says it
   * has what it needs or the walk ends. A filter that few rows meet (a rare company) would
   * otherwise read the whole ledger in one statement: ~1–2 µs a row, a second or more at a million
   * contacts, while every other request waits. The steps are not one snapshot: what is written
   * between two is seen when it lies ahead of the walk, as between two pages of a cursor. An
   * aborted `signal` (the client went away) ends the walk with its reason before the next step.
   */
  async function stepThrough(
    part: ListPart,
    prep: (sql: string) => Statement,
    stepped: boolean,
    signal: AbortSignal | undefined,
    step: (from: readonly unknown[] | undefined, until: readonly unknown[] | undefined) => boolean,
  ): Promise<void> {
    if (!stepped) {
      step(part.after, undefined);
      return;
    }
    let from = part.after;
    let rows = steps.firstRows;
    for (;;) {
      const t0 = performance.now();
      const until = windowEnd(part, prep, from, rows);
      if (step(from, until) || until === undefined) return;
      from = until;
      rows = nextWindow(rows, performance.now() - t0, steps);
      await nextTurn();
      signal?.throwIfAborted();
    }
  }

  /** Up to `limit` rows (`columns`, on the connection of `prep`) of the list after `after`, part by part, walks in steps. */
  async function pageOf<R>(
    prep: (sql: string) => Statement,
    columns: string,
    ledgerId: string,
    f: ContactFilter,
    sort: ContactSort,
    limit: number,
    after: ContactPosition | undefined,
    signal: AbortSignal | undefined,
  ): Promise<R[]> {
    const out: R[] = [];
    for (const part of listParts(ledgerId, f, sort, after, choosePlan(ledgerId, f, sort))) {
      await stepThrough(part, prep, Boolean(part.walk?.filtered), signal, (from, until) => {
        const q = rowsSql(part, columns, from, until);
        for (const r of prep(q.sql).all(...q.params, limit - out.length) as R[]) out.push(r);
        return out.length >= limit;
      });
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Counts up to `cap` rows in a change-time range, through its index. */
  function probeRange(ledgerId: string, key: keyof typeof RANGE_INDEX, from: number, before: number | undefined, cap: number): number {
    const column = key === 'lastJobChangedAt' ? 'last_job_changed_at' : 'last_info_changed_at';
    const upper = before === undefined ? '' : ` AND ${column} < ?`;
    const sql = `SELECT count(*) FROM (SELECT 1 FROM contacts INDEXED BY ${RANGE_INDEX[key]} WHERE ledger_id = ? AND ${column} >= ?${upper} LIMIT ?)`;
    const params = before === undefined ? [ledgerId, from, cap] : [ledgerId, from, before, cap];
    return prepared(sql).pluck().get(...params) as number;
  }

  /**
   * Outcomes of range probes ("are there at most RANGE_PROBE_LIMIT rows?"), kept while the
   * database is unchanged: total_changes() counts this connection's writes, PRAGMA data_version
   * moves when another connection commits (the bulk thread's, src/bulk-thread), so while both
   * stay the same the rows and the answer are the same. A plan only decides speed, never which rows
   * are returned. Clients polling "changed since" with the same time repeat the same probe; this
   * saves it.
   */
  const version = db.raw.prepare<[], string>("SELECT total_changes() || ' ' || (SELECT data_version FROM pragma_data_version)").pluck();
  const probeOutcomes = new Map<string, boolean>();
  let probedAt = '';

  /** Whether at most RANGE_PROBE_LIMIT rows answer `probe` (which counts up to the cap it is given), remembered under `k`. */
  function fewRows(k: string, probe: (cap: number) => number): boolean {
    const now = version.get()!;
    if (now !== probedAt || probeOutcomes.size >= 1000) {
      probeOutcomes.clear();
      probedAt = now;
    }
    let few = probeOutcomes.get(k);
    if (few === undefined) {
      few = probe(RANGE_PROBE_LIMIT + 1) <= RANGE_PROBE_LIMIT;
      probeOutcomes.set(k, few);
    }
    return few;
  }

  const fewInRange = (ledgerId: string, key: keyof typeof RANGE_INDEX, from: number, before: number | undefined): boolean =>
    fewRows(`${ledgerId} ${key} ${from} ${before}`, (cap) => probeRange(ledgerId, key, from, before, cap));

  /**
   * Whether few names of the ledger can hold `pattern` (nameKeyPattern): read from the name index
   * alone, which for a name that few or none have means the whole of the ledger's index (~0.1 µs an
   * entry). Above NAME_PROBE_MAX_CONTACTS that read would cost more than the sort-order walk it
   * may save for a common name, so the answer is no without looking.
   */
  const fewNamed = (ledgerId: string, pattern: string): boolean =>
    (prepared('SELECT contact_count FROM ledgers WHERE id = ?').pluck().get(ledgerId) as number | undefined ?? 0) <= NAME_PROBE_MAX_CONTACTS &&
    fewRows(`${ledgerId} name ${pattern}`, (cap) =>
      prepared("SELECT count(*) FROM (SELECT 1 FROM contacts INDEXED BY contacts_by_name WHERE ledger_id = ? AND name_key LIKE ? ESCAPE '\\' LIMIT ?)").pluck().get(ledgerId, pattern, cap) as number,
    );

  const fewInImport = (importId: string): boolean =>
    fewRows(`import ${importId}`, (cap) => prepared('SELECT count(*) FROM (SELECT 1 FROM contacts INDEXED BY contacts_by_import WHERE import_id = ? LIMIT ?)').pluck().get(importId, cap) as number);

  /**
   * The index that drives the query: an equality lookup when there is one; otherwise the sort's
   * index, unless a change-time range selects so few rows that reading them through its own index
   * and sorting them is cheaper than walking the sort order (the daily "changed since" poll). An
   * import's contacts come from its own index in creation order, and in any other order when they
   * are few (RANGE_PROBE_LIMIT: sorted in ~15 ms, one short turn). A bigger import in another order
   * walks the sort's index like any other filter, in steps: sorting it whole would hold the event
   * loop for every page (~2 µs a contact: 0.4 s a page of a 200,000-row import by change time, and
   * each page of its download again). A name search that few names can answer (by the name index
   * alone) reads those and sorts them.
   */
  function choosePlan(ledgerId: string, f: ContactFilter, sort: ContactSort): string {
    if (f.referenceId !== undefined) return 'contacts_by_reference';
    if (f.linkedin !== undefined) return 'contacts_by_linkedin';
    if (f.email !== undefined) return 'contacts_by_email';
    const plan = SORTS[sort];
    if (f.importId !== undefined && (plan.column === 'created_at' || fewInImport(f.importId))) return 'contacts_by_import';
    for (const key of ['lastJobChangedAt', 'lastInfoChangedAt'] as const) {
      const from = f[key];
      if (from === undefined || plan.index === RANGE_INDEX[key]) continue;
      if (fewInRange(ledgerId, key, from, f[`${key}Before`])) return RANGE_INDEX[key];
    }
    // a name search that few names can answer: those names from the name index, then sorted,
    // instead of reading the ledger's rows in sort order until a page is full (the whole ledger
    // for a name that is rare or absent: ~1 µs a row, on the event loop)
    if (f.name !== undefined && plan.index !== 'contacts_by_name') {
      const pattern = nameKeyPattern(f.name);
      if (pattern && fewNamed(ledgerId, pattern)) return 'contacts_by_name';
    }
    return plan.index;
  }

  return {
    /** Inserts one contact and returns it; undefined when its referenceId (or id) is already taken in the ledger. */
    insertContact: (c: NewContactRow): Contact | undefined => {
      const r = q.insert.run(c.id, c.ledgerId, c.importId, c.referenceId, c.name, c.company, c.company, c.title, c.title, c.titleLevel, c.titleDomain, c.location, c.email, c.linkedin, c.now, c.now, nameKey(c.name), companyKey(c.company), storedEmailKey(c.email));
      if (r.changes !== 1) return undefined;
      return {
        seq: Number(r.lastInsertRowid), id: c.id, ledgerId: c.ledgerId, importId: c.importId, referenceId: c.referenceId, name: c.name, company: c.company,
        importCompany: c.company, importTitle: c.title, title: c.title, titleLevel: c.titleLevel, titleDomain: c.titleDomain, location: c.location,
        email: c.email, emailStatus: null, linkedin: c.linkedin, hasMultipleJobs: null, isVerified: false, jobStartedAt: null,
        lastJobChangedAt: null, lastInfoChangedAt: null, createdAt: c.now, updatedAt: c.now,
      };
    },
    findContact: (ledgerId: string, id: string): Contact | undefined => {
      const r = q.byId.get(id, ledgerId);
      return r && toContact(r);
    },
    /** The contact holding a referenceId in the ledger. */
    findByReference: (ledgerId: string, referenceId: string): { id: string; importId: string | null } | undefined => {
      const r = q.byReference.get(ledgerId, referenceId);
      return r && { id: r.id, importId: r.import_id };
    },
    /** Deletes one contact of the ledger; false when there is none. */
    deleteContact: (ledgerId: string, id: string): boolean => q.delete.run(id, ledgerId).changes === 1,
    /** Deletes up to `n` contacts of a ledger being purged; returns how many went. */
    purgeContacts: (ledgerId: string, n: number): number => q.purgeChunk.run(ledgerId, n).changes,

    /**
     * Up to `limit` contacts matching the filter after `after`, in `sort` order. Callers ask for
     * `limit + 1` to learn whether there is a next page. A walk that reads rows it may not return
     * (a rare company, say) goes in steps (stepThrough).
     */
    async listContacts(ledgerId: string, f: ContactFilter, sort: ContactSort, limit: number, after?: ContactPosition, signal?: AbortSignal): Promise<Contact[]> {
      return (await pageOf<ContactRow>(prepared, COLUMNS, ledgerId, f, sort, limit, after, signal)).map(toContact);
    },

    /**
     * listContacts for the CSV download: the same query, plan and order, only the download's
     * columns as arrays, read through the `reader` connection (its own small page cache, so a
     * download streaming a whole ledger does not fill the writer's; each page is one short read
     * transaction, so the writer and checkpoints never wait for a download).
     */
    listDownloadRows: (ledgerId: string, f: ContactFilter, sort: ContactSort, limit: number, after?: ContactPosition, signal?: AbortSignal): Promise<DownloadRow[]> =>
      pageOf<DownloadRow>(preparedOnReader, DOWNLOAD_COLUMNS, ledgerId, f, sort, limit, after, signal),

    /**
     * The seqs of every matching contact in `sort` order as of one moment, for a download in an
     * order contacts move in (SORTS `moves`: a change time, set anew by each change). Walked page by
     * page, such an order loses each contact that a change moves behind the walk before the walk
     * reaches it (a tester's feed during a download by -lastJobChangedAt: 5 % of the rows). The
     * keys are read in steps inside one read transaction on a read-only connection of its own (a
     * snapshot no other read joins): ~0.2 µs and 8 bytes a contact through the sort's index (held
     * until the download has sent that step: 8 MB at a million contacts), so
     * the transaction — which checkpoints cannot pass — lasts as long as this read, ~0.2 s a
     * million contacts, not as long as the client takes to read the file.
     */
    async downloadOrder(ledgerId: string, f: ContactFilter, sort: ContactSort, signal?: AbortSignal, start?: ContactPosition, limit = Infinity): Promise<Float64Array[]> {
      const snapshot = openDb(reader.file, { readonly: true, check: false, cacheKiB: ORDER_CACHE_KIB });
      try {
        addListFunctions(snapshot);
        const prep = statementCache(snapshot, true);
        snapshot.raw.exec('BEGIN');
        // in steps of orderStep seqs, 8 bytes each, which the download lets go step by step
        const steps: Float64Array[] = [];
        let after = start;
        // a download's `limit`: the order up to it (the rows of contacts deleted or changed out of the filter since are left out, as without one)
        for (let left = limit; ; ) {
          const rows = await pageOf<[number, number | null]>(prep, `seq, ${SORTS[sort].column}`, ledgerId, f, sort, Math.min(orderStep, left), after, signal);
          if (rows.length) steps.push(Float64Array.from(rows, (r) => r[0]));
          left -= rows.length;
          if (rows.length < orderStep || left <= 0) return steps;
          const [seq, value] = rows[rows.length - 1]!;
          after = value === null ? { value: null, seq, nulls: true } : { value, seq };
          await nextTurn();
          signal?.throwIfAborted();
        }
      } finally {
        snapshot.raw.close(); // and with it the read transaction
      }
    },

    /**
     * The download's rows of `seqs`, in that order, each by its primary key on the `reader`
     * connection: those still in the ledger and still matching the filter (a contact deleted, or
     * changed out of the filter, since downloadOrder read the order is left out).
     */
    downloadRowsOf(ledgerId: string, f: ContactFilter, seqs: ArrayLike<number> & Iterable<number>): DownloadRow[] {
      const q = rowsOfSeqsSql(ledgerId, f, DOWNLOAD_COLUMNS);
      const found = new Map<number, DownloadRow>();
      for (const r of preparedOnReader(q.sql).all(JSON.stringify(Array.from(seqs)), ...q.params) as DownloadRow[]) found.set(r[0], r);
      const rows: DownloadRow[] = [];
      for (const seq of seqs) {
        const r = found.get(seq);
        if (r) rows.push(r);
      }
      return rows;
    },

    /** The query plan of downloadRowsOf (tests: a primary-key look-up per seq, whatever the filter). */
    explainRowsOf: (ledgerId: string, f: ContactFilter): string[] => {
      const q = rowsOfSeqsSql(ledgerId, f, DOWNLOAD_COLUMNS);
      return db.queryPlan(q.sql, '[1,2,3]', ...q.params);
    },

    /** How many contacts match: a walk of the ledger (or of an import) is counted in steps, however few rows it reads. */
    async countContacts(ledgerId: string, f: ContactFilter, signal?: AbortSignal): Promise<number> {
      const [part] = listParts(ledgerId, f, '+createdAt', undefined, choosePlan(ledgerId, f, '+createdAt'));
      let total = 0;
      await stepThrough(part!, prepared, Boolean(part!.walk), signal, (from, until) => {
        const q = countSql(part!, from, until);
        total += prepared(q.sql).pluck().get(...q.params) as number;
        return false;
      });
      return total;
    },

    /** EXPLAIN QUERY PLAN of the list query's parts, as their first step runs them (for the plan tests and docs). */
    explainList(ledgerId: string, f: ContactFilter, sort: ContactSort, after?: ContactPosition): string[][] {
      return listParts(ledgerId, f, sort, after, choosePlan(ledgerId, f, sort)).map((part) => {
        const until = part.walk?.filtered ? windowEnd(part, prepared, part.after, steps.firstRows) : undefined;
        const q = rowsSql(part, COLUMNS, part.after, until);
        return db.queryPlan(q.sql, ...q.params, 101);
      });
    },
  };
}
