import { emailKey, nameKey } from '../normalize.ts';

/**
 * The SQL of the contact list (SPEC §4.2), its count and its download: assembled from fixed
 * fragments chosen by which typed filters are present; values are always bound parameters. Which
 * index drives a query is chosen by the repo (src/ledger/contacts-repo.ts `choosePlan`); this
 * module turns that choice into statements, and into the steps of a long walk.
 */

/** The filters of SPEC §4.2 after validation: typed values only, never SQL text. */
export interface ContactFilter {
  lastJobChangedAt?: number;
  lastJobChangedAtBefore?: number;
  lastInfoChangedAt?: number;
  lastInfoChangedAtBefore?: number;
  referenceId?: string;
  linkedin?: string;
  email?: string;
  name?: string;
  company?: string;
  title?: string;
  isVerified?: boolean;
  importId?: string;
  createdAfter?: number;
  createdBefore?: number;
}

export type ContactSort = '+createdAt' | '-createdAt' | '+name' | '-name' | '-lastJobChangedAt' | '-lastInfoChangedAt';

/**
 * A keyset position: the sort value and seq of the last row returned. For the nullable change
 * sorts, `nulls` says the walk has reached the rows without a value (they come last).
 */
export interface ContactPosition {
  value: string | number | null;
  seq: number;
  nulls?: boolean;
}

interface SortPlan {
  column: string;
  desc: boolean;
  index: string;
  nullable: boolean;
  /**
   * Whether a contact's value can change after it was created (the change times, set anew at each
   * change): a walk in such an order can pass a contact that moves behind it meanwhile.
   */
  moves: boolean;
  /**
   * The column's value for a position's value, when they differ: a name sort walks name_key, while
   * its cursor keeps the name (bounded in length, where folding may lengthen it) and folds it again.
   */
  keyOf?: (value: string) => string;
}

export const SORTS: Record<ContactSort, SortPlan> = {
  '+createdAt': { column: 'created_at', desc: false, index: 'contacts_by_created', nullable: false, moves: false },
  '-createdAt': { column: 'created_at', desc: true, index: 'contacts_by_created', nullable: false, moves: false },
  '+name': { column: 'name_key', desc: false, index: 'contacts_by_name', nullable: false, moves: false, keyOf: nameKey },
  '-name': { column: 'name_key', desc: true, index: 'contacts_by_name', nullable: false, moves: false, keyOf: nameKey },
  '-lastJobChangedAt': { column: 'last_job_changed_at', desc: true, index: 'contacts_by_job_change', nullable: true, moves: true },
  '-lastInfoChangedAt': { column: 'last_info_changed_at', desc: true, index: 'contacts_by_info_change', nullable: true, moves: true },
};

/** Change-time range filters whose index is used when they select few rows (see choosePlan). */
export const RANGE_INDEX = { lastJobChangedAt: 'contacts_by_job_change', lastInfoChangedAt: 'contacts_by_info_change' } as const;
/** The same ranges with created_at in the index: a page in creation order sorts index entries only (keys first). */
const RANGE_BY_CREATED: Record<string, string> = { contacts_by_job_change: 'contacts_by_job_change_created', contacts_by_info_change: 'contacts_by_info_change_created' };

/** The filters that are a range of a column, as [from (inclusive), before (exclusive)]. */
const RANGE_FILTERS: Record<string, readonly [keyof ContactFilter, keyof ContactFilter]> = {
  created_at: ['createdAfter', 'createdBefore'],
  last_job_changed_at: ['lastJobChangedAt', 'lastJobChangedAtBefore'],
  last_info_changed_at: ['lastInfoChangedAt', 'lastInfoChangedAtBefore'],
};

/**
 * An address's key as the e-mail indexes hold it (contacts_by_email, people_by_email; migration
 * 0024): the stored key, or lower() of an address whose key that is (src/normalize.ts
 * storedEmailKey). `t` is a table alias with its dot.
 */
export const emailKeySql = (t = ''): string => `coalesce(${t}email_key, lower(${t}email))`;
/** "The address of this row has the key `param`", in the form the partial e-mail indexes serve (`email IS NOT NULL` first). */
export const emailKeyIs = (param: string, t = ''): string => `${t}email IS NOT NULL AND ${emailKeySql(t)} = ${param}`;

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
// SQLite's LIKE folds ASCII case only: it compares an ASCII needle with an ASCII text; a text or a
// needle with other characters goes through a Unicode-aware function.
const isAscii = (s: string) => /^[\x00-\x7f]*$/.test(s);
/**
 * The characters beyond ASCII that foldForContains makes (partly) ASCII: ß ẞ ſ, the Latin
 * ligatures, İ, a dot above (U+0307) after an i, the Kelvin sign, and U+037E / U+1FEF, whose
 * composed forms are ; and `. An ASCII needle is found in a text beyond ASCII as LIKE finds it, or through one of these
 * (test/ledger-contacts.test.ts checks the list against every code point). None is a quote, so
 * each goes into SQL as a literal.
 */
export const FOLDS_TO_ASCII = '\u00df\u0130\u017f\u0307\u037e\u1e9e\u1fef\u212a\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06';
/** Letters Unicode case folding spells as others, beyond lower case (CaseFolding.txt, Latin: ß, ſ and the ligatures). */
const FOLDED_AS: Record<string, string> = { ß: 'ss', ſ: 's', '\ufb00': 'ff', '\ufb01': 'fi', '\ufb02': 'fl', '\ufb03': 'ffi', '\ufb04': 'ffl', '\ufb05': 'st', '\ufb06': 'st' };
/**
 * Lower case in composed form (NFC), folded as Unicode case folding does: a name stored decomposed
 * (e + U+0308, as macOS writes it) is found by ë, and the reverse — and not by e, as the same name
 * typed composed is not. A final sigma is a sigma (lower case makes ΣΊΣΥΦΟΣ σίσυφος, which
 * σίσυφοσ must find), ß is ss (Straße = STRASSE), ſ is s, ﬁ is fi; the Kelvin sign is k by lower
 * case already. Turkish İ is i, as Turkish writes its lower case (Unicode's full folding, i + a dot
 * above, left "istanbul" unable to find "İSTANBUL": a tester's case), and so is an i written with
 * that dot.
 */
export const foldForContains = (s: string) => {
  const lower = s.toLowerCase(); // İ is i + a dot above (U+0307) here
  // the dot above after an i, also behind other marks (canonical order puts a dot below first),
  // then composed again: İ́ is í. Only where there is one: this runs for every row a search reads.
  const composed = lower.includes('\u0307') ? lower.normalize('NFD').replace(/i([\u0300-\u036f]*?)\u0307/g, 'i$1').normalize('NFC') : lower.normalize('NFC');
  return composed.replace(/ς/g, 'σ').replace(/[ßſ\ufb00-\ufb06]/g, (c) => FOLDED_AS[c]!);
};

/**
 * The LIKE pattern on `name_key` that every name the `name` filter finds also matches: the key
 * (src/normalize.ts: apostrophes dropped, accents removed, letters spelt out, lower case, runs of
 * other characters one space) maps each character on its own, so the needle's key lies inside the
 * name's key wherever the needle lies inside the name. Greek sigma matches either form: its lower
 * case depends on what follows, which the key (without apostrophes and accents) may see
 * otherwise. Undefined when the key is empty (every name would match). The key is in the name
 * index, so this condition is checked there, before a row is read (test/ledger-contacts.test.ts
 * checks the promise over names of many scripts).
 */
export function nameKeyPattern(needle: string): string | undefined {
  const key = nameKey(needle);
  return key ? `%${escapeLike(key).replace(/[σς]/g, '_')}%` : undefined;
}

/** Conditions with their parameters, in order. */
interface Conditions {
  where: string[];
  params: unknown[];
}

/** The filter's conditions (ledger first), leaving out the keys in `skip` (those a walk bounds itself). */
function whereOf(ledgerId: string, f: ContactFilter, skip: readonly (keyof ContactFilter)[] = []): Conditions {
  const where = ['ledger_id = ?'];
  const params: unknown[] = [ledgerId];
  const add = (key: keyof ContactFilter, fragment: string, ...values: unknown[]) => {
    if (f[key] === undefined || skip.includes(key)) return;
    where.push(fragment);
    params.push(...values);
  };
  add('lastJobChangedAt', 'last_job_changed_at >= ?', f.lastJobChangedAt);
  add('lastJobChangedAtBefore', 'last_job_changed_at < ?', f.lastJobChangedAtBefore);
  add('lastInfoChangedAt', 'last_info_changed_at >= ?', f.lastInfoChangedAt);
  add('lastInfoChangedAtBefore', 'last_info_changed_at < ?', f.lastInfoChangedAtBefore);
  add('referenceId', 'reference_id = ?', f.referenceId);
  add('linkedin', 'linkedin = ?', f.linkedin);
  add('email', emailKeyIs('?'), f.email === undefined ? undefined : emailKey(f.email));
  const namePattern = f.name === undefined ? undefined : nameKeyPattern(f.name);
  if (namePattern) add('name', `name_key LIKE ? ESCAPE '\\'`, namePattern); // first, and in the name index: the row is read only if it holds
  for (const field of ['name', 'company', 'title'] as const) {
    const needle = f[field];
    if (needle === undefined) continue;
    // An ASCII needle by LIKE (ASCII case), and by folding in a text holding one of the characters
    // that fold to ASCII (Straße, the Kelvin sign, ﬁ), which LIKE cannot read; each instr() is
    // ~0.1 µs, where folding a text costs ~3.5 µs — asked of every text beyond ASCII, it made such
    // a search 9× slower on a ledger of names with accents (a reviewer's measurement).
    if (isAscii(needle)) {
      const holdsFoldable = [...FOLDS_TO_ASCII].map((c) => `instr(${field}, '${c}')`).join(' OR ');
      add(field, `(${field} LIKE ? ESCAPE '\\' OR length(${field}) <> octet_length(${field}) AND (${holdsFoldable}) AND cl_contains_ci(${field}, ?))`, `%${escapeLike(needle)}%`, foldForContains(needle));
    } else add(field, `cl_contains_ci(${field}, ?)`, foldForContains(needle));
  }
  add('isVerified', 'is_verified = ?', f.isVerified ? 1 : 0);
  add('importId', 'import_id = ?', f.importId);
  add('createdAfter', 'created_at >= ?', f.createdAfter);
  add('createdBefore', 'created_at < ?', f.createdBefore);
  return { where, params };
}

/**
 * A walk of an index in the order of the part's key: what SQLite seeks by and stops at. Each side
 * of the walk gets one bound (the position or the filter's own range on the key's column, whichever
 * is tighter): given two, SQLite may seek by the looser one and read every entry between them
 * (a createdAfter filter then made each next page read the ledger from that time again).
 */
interface Walk {
  /** What picks the walk's entries from the index alone: its equality prefix, the NULL test. */
  prefix: Conditions;
  /** The filter's range on the key's first column: `>= from`, `< before`. */
  from?: number;
  before?: number;
  /** Part 1 of a nullable sort: the walk stops before the entries without a value. */
  notNull: boolean;
  /**
   * Whether conditions outside the index's order apply (any filter but the range): then rows the
   * walk reads may not match, and a page of a rare match reads far — the repo reads such a walk in
   * windows of its entries, a step each.
   */
  filtered: boolean;
}

/** One ordered stretch of a list: its rows in `key` order, after `after`. */
export interface ListPart {
  /** The index that drives the query. */
  index: string;
  /** The conditions besides a walk's own (with no walk: all of them, the position's too). */
  rest: Conditions;
  key: readonly string[];
  desc: boolean;
  /** The key's values of the last row before this part (a cursor's position), if any. */
  after?: readonly unknown[];
  /** Keys first through this covering index, then the page's rows (few change-time rows in creation order). */
  covering?: string;
  walk?: Walk;
}

/** A key's values as a condition: `(a, b) > (?, ?)`, or `seq > ?` for one column. */
function tupleCondition(key: readonly string[], op: string, values: readonly unknown[]): Conditions {
  const cols = key.length === 1 ? key[0]! : `(${key.join(', ')})`;
  const marks = key.length === 1 ? '?' : `(${key.map(() => '?').join(', ')})`;
  return { where: [`${cols} ${op} ${marks}`], params: [...values] };
}

const merge = (...parts: Conditions[]): Conditions => ({ where: parts.flatMap((p) => p.where), params: parts.flatMap((p) => p.params) });

/**
 * The bounds of a walk from `after` (exclusive) to `until` (inclusive, a window's last entry): on
 * each side the position or the filter's range, whichever is tighter (see Walk).
 */
function walkBounds(part: ListPart, walk: Walk, after: readonly unknown[] | undefined, until: readonly unknown[] | undefined): Conditions {
  const column = part.key[0]!;
  const scalar = (op: string, value: number): Conditions => ({ where: [`${column} ${op} ?`], params: [value] });
  const bounds: Conditions[] = [];
  const [start, stop] = part.desc ? [walk.before, walk.from] : [walk.from, walk.before];
  // the start: after the position, unless the filter's range begins beyond it
  if (after && (start === undefined || (part.desc ? (after[0] as number) < start : (after[0] as number) >= start))) bounds.push(tupleCondition(part.key, part.desc ? '<' : '>', after));
  else if (start !== undefined) bounds.push(scalar(part.desc ? '<' : '>=', start));
  // the stop: at the window's last entry, unless the filter's range ends before it
  if (until && (stop === undefined || (part.desc ? (until[0] as number) >= stop : (until[0] as number) < stop))) bounds.push(tupleCondition(part.key, part.desc ? '>=' : '<=', until));
  else if (stop !== undefined) bounds.push(scalar(part.desc ? '>=' : '<', stop));
  else if (walk.notNull) bounds.push({ where: [`${column} IS NOT NULL`], params: [] });
  return merge(...bounds);
}

/** All conditions of a part from `after` to `until` (both only for a walk; without one, `after` alone). */
function conditionsOf(part: ListPart, after = part.after, until?: readonly unknown[]): Conditions {
  if (!part.walk) return after ? merge(part.rest, tupleCondition(part.key, part.desc ? '<' : '>', after)) : part.rest;
  return merge(part.walk.prefix, part.rest, walkBounds(part, part.walk, after, until));
}

const orderOf = (part: ListPart) => `ORDER BY ${part.key.map((k) => `${k} ${part.desc ? 'DESC' : 'ASC'}`).join(', ')}`;

/** The rows of a part (from `after` to `until`); the statement's last parameter, the limit, is the caller's. */
export function rowsSql(part: ListPart, columns: string, after = part.after, until?: readonly unknown[]): Conditions & { sql: string } {
  const c = conditionsOf(part, after, until);
  const order = orderOf(part);
  if (part.covering) {
    // keys first: the page's seqs from the index alone (range, sort, limit), then only their rows
    const keys = `SELECT seq FROM contacts INDEXED BY ${part.covering} WHERE ${c.where.join(' AND ')} ${order} LIMIT ?`;
    return { ...c, sql: `SELECT ${columns} FROM contacts WHERE seq IN (${keys}) ${order}` };
  }
  return { ...c, sql: `SELECT ${columns} FROM contacts INDEXED BY ${part.index} WHERE ${c.where.join(' AND ')} ${order} LIMIT ?` };
}

/**
 * The rows among `seqs` (the statement's first parameter, a JSON array) that are the ledger's and
 * still match the filter, each by its primary key (NOT INDEXED: never a walk of the ledger by
 * one of the filter's indexes); in no particular order.
 */
export function rowsOfSeqsSql(ledgerId: string, f: ContactFilter, columns: string): Conditions & { sql: string } {
  const c = whereOf(ledgerId, f);
  return { ...c, sql: `SELECT ${columns} FROM contacts NOT INDEXED WHERE seq IN (SELECT value FROM json_each(?)) AND ${c.where.join(' AND ')}` };
}

/** How many rows of a part lie from `after` to `until`. */
export function countSql(part: ListPart, after = part.after, until?: readonly unknown[]): Conditions & { sql: string } {
  const c = conditionsOf(part, after, until);
  return { ...c, sql: `SELECT count(*) FROM contacts INDEXED BY ${part.index} WHERE ${c.where.join(' AND ')}` };
}

/**
 * The key of a walk's entry a window's length after `after`, read from the index alone (its
 * prefix and bounds, none of the other conditions); the statement's last parameter is the offset
 * (the window's length − 1). No row: fewer entries are left.
 */
export function windowEndSql(part: ListPart, after: readonly unknown[] | undefined): Conditions & { sql: string } {
  if (!part.walk) throw new Error(`the part driven by ${part.index} is not a walk: it has no windows`);
  const c = merge(part.walk.prefix, walkBounds(part, part.walk, after, undefined));
  return { ...c, sql: `SELECT ${part.key.join(', ')} FROM contacts INDEXED BY ${part.index} WHERE ${c.where.join(' AND ')} ${orderOf(part)} LIMIT 1 OFFSET ?` };
}

/** The index of an import's contacts: by import, then creation time. */
const IMPORT_INDEX = 'contacts_by_import';

/**
 * The parts of a list in `sort` order driven by `index`, after `after`. A nullable change-time sort
 * has two: the contacts with a value, newest first, then those without (none when the filter
 * bounds that time, which no contact without one meets).
 */
export function listParts(ledgerId: string, f: ContactFilter, sort: ContactSort, after: ContactPosition | undefined, index: string): ListPart[] {
  const plan = SORTS[sort];
  const range = RANGE_FILTERS[plan.column];
  const inOrder = index === plan.index || (index === IMPORT_INDEX && plan.column === 'created_at');
  /**
   * A part's conditions: as a walk of `index` in the part's order when it is one (its prefix: the
   * ledger or the import, and `IS NULL` for the part without a value; `IS NOT NULL` a stop
   * bound), else every condition as it is.
   */
  const conditionsOfPart = (nullTest?: 'IS NULL' | 'IS NOT NULL'): { rest: Conditions; walk?: Walk } => {
    if (!inOrder) return { rest: merge(whereOf(ledgerId, f), { where: nullTest ? [`${plan.column} ${nullTest}`] : [], params: [] }) };
    const bounded: (keyof ContactFilter)[] = [...(range ?? []), ...(index === IMPORT_INDEX ? (['importId'] as const) : [])];
    const rest = whereOf(ledgerId, f, bounded);
    const prefix: Conditions = index === IMPORT_INDEX ? { where: ['import_id = ?'], params: [f.importId] } : { where: [rest.where.shift()!], params: [rest.params.shift()] }; // ledger_id = ?
    if (nullTest === 'IS NULL') prefix.where.push(`${plan.column} IS NULL`);
    const filtered = Object.keys(f).some((k) => f[k as keyof ContactFilter] !== undefined && !bounded.includes(k as keyof ContactFilter));
    const [from, before] = range ? [f[range[0]] as number | undefined, f[range[1]] as number | undefined] : [];
    return { rest, walk: { prefix, from, before, notNull: nullTest === 'IS NOT NULL', filtered } };
  };

  if (!plan.nullable) {
    const at = after && [plan.keyOf ? plan.keyOf(String(after.value)) : after.value, after.seq];
    const covering = plan.column === 'created_at' ? RANGE_BY_CREATED[index] : undefined;
    return [{ index, key: [plan.column, 'seq'], desc: plan.desc, ...(at ? { after: at } : {}), ...(covering ? { covering } : {}), ...conditionsOfPart() }];
  }
  // Nullable change times, newest first: rows with a value, then the rows without one — none when
  // the filter bounds that time, which no contact without one meets.
  const parts: ListPart[] = [];
  if (!after?.nulls) parts.push({ index, key: [plan.column, 'seq'], desc: true, ...(after ? { after: [after.value, after.seq] } : {}), ...conditionsOfPart('IS NOT NULL') });
  if (!range!.some((k) => f[k] !== undefined)) parts.push({ index, key: ['seq'], desc: true, ...(after?.nulls ? { after: [after.seq] } : {}), ...conditionsOfPart('IS NULL') });
  return parts;
}
