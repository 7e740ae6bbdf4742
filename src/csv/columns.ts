import { CONTACT_FIELDS, type ContactField } from '../ledger/model.ts';
import { INVISIBLE_ALL } from '../normalize.ts';

/**
 * Header recognition for CSV uploads (SPEC §4.3): columns are matched case- and space-insensitively
 * against the names people use, or taken from an explicit mapping.
 */

/**
 * A header name as compared: case, spaces, `_ - .`, characters that show nothing (a zero-width
 * space pasted along) and the Unicode form (`é` composed or as `e` + accent, as macOS writes names) ignored.
 */
export const headerKey = (header: string) => header.normalize('NFC').trim().toLowerCase().replace(/[\s_\-.]+/g, '').replace(INVISIBLE_ALL, '');

/** A column's text as a mapping names it exactly: trimmed, in composed Unicode form. */
const exactText = (column: string) => column.normalize('NFC').trim();

/**
 * Names address books' exports give (Google Contacts numbers its columns, `Organization 1 - Name`;
 * Outlook says `Business City`): a contact upload knows them after a field's own names, a feed not
 * at all — it refuses two columns for one field, and a feed with `location` and `Business City`
 * worked before these names were known, and still does (feed-reader.ts).
 */
const ADDRESS_BOOK: Partial<Record<ContactField, string[]>> = {
  company: ['organizationname', 'organization1name'],
  title: ['organizationtitle', 'organization1title'],
  location: ['businesscity', 'workcity'],
  email: ['email1value', 'emailaddress1'],
};
export const ADDRESS_BOOK_ALIASES: ReadonlySet<string> = new Set(Object.values(ADDRESS_BOOK).flat());

/**
 * The header names each contact field is recognised by (as headerKey gives them), the first that a
 * file has winning: a job's title before a bare `Title`, which address books use for the salutation
 * (an Outlook export has both: its contacts were imported with the title "Dr.", a tester's case);
 * a city before a region.
 */
export const ALIASES: Record<ContactField | 'firstName' | 'lastName', string[]> = {
  name: ['name', 'fullname', 'contactname', 'contact'],
  company: ['company', 'companyname', 'organization', 'organisation', 'employer', 'account', 'accountname', 'currentcompany', 'importcompany', ...ADDRESS_BOOK.company!],
  title: ['jobtitle', 'title', 'position', 'role', 'importtitle', ...ADDRESS_BOOK.title!],
  location: ['location', 'city', 'region', ...ADDRESS_BOOK.location!],
  email: ['email', 'emailaddress', 'workemail', 'mail', ...ADDRESS_BOOK.email!],
  linkedin: ['linkedin', 'linkedinurl', 'linkedinprofile', 'linkedinprofileurl', 'linkedinurl', 'profileurl'],
  referenceId: ['referenceid', 'reference', 'crmid', 'externalid', 'ref'],
  firstName: ['firstname', 'givenname', 'first'],
  lastName: ['lastname', 'surname', 'familyname', 'last'],
};

export interface ColumnMapping {
  /** Contact field → column index. */
  fields: Partial<Record<ContactField, number>>;
  /** When the name comes from "first name" + "last name": the last-name column (`fields.name` is the first). */
  lastNameColumn?: number;
  /** Columns an explicit mapping named by their exact text (trimmed): chosen among those alike but for case, spaces and `_ - .`. */
  namedExactly?: number[];
}

export class MappingError extends Error {
  override name = 'MappingError';
  readonly path: string;
  constructor(message: string, path = 'mapping') {
    super(message);
    this.path = path;
  }
}

/** A field the mapping reads from a column that another column could be as well (findAmbiguities). */
export interface Ambiguity {
  field: ContactField;
  /** The columns that could be the field, by their place (from 0), in the header's order. */
  columns: number[];
  /** Why, and what a mapping does about it (the import's 422 says this). */
  message: string;
}

/**
 * The columns the mapping reads whose (normalized) name another column has too, so that which of
 * them was meant cannot be told: the same text twice (a mapping names columns by name), or names
 * alike but for case, spaces and `_ - .` (`Email`, `E-mail`) that no explicit mapping chose between
 * by its exact text. Columns nobody imports may share a name: CRM exports repeat some (`Phone`,
 * `phone`, two `Notes`). In the mapping's order, a field once (its first column found so).
 */
export function findAmbiguities(columns: string[], mapping: ColumnMapping): Ambiguity[] {
  const out: Ambiguity[] = [];
  for (const [field, i] of mappedFields(mapping)) {
    if (out.some((a) => a.field === field)) continue;
    const key = headerKey(columns[i]!);
    const text = exactText(columns[i]!);
    const same = columns.findIndex((c, j) => j !== i && exactText(c) === text);
    const exactly = mapping.namedExactly?.includes(i) === true;
    // every column that competes: the same text, and (unless the mapping named this one by its exact text) names alike
    const rivals = columns.flatMap((c, j) => (j !== i && (exactText(c) === text || (!exactly && headerKey(c) === key)) ? [j] : []));
    if (!rivals.length) continue;
    const competing = [i, ...rivals].sort((a, b) => a - b);
    const f = field as ContactField;
    if (same >= 0) {
      const [a, b] = [Math.min(i, same), Math.max(i, same)];
      out.push({ field: f, columns: competing, message: `the header names column "${text}" twice (columns ${a + 1} and ${b + 1}), and it is imported; rename one of them, or map its field to another column or to null` });
      continue;
    }
    const alike = rivals[0]!;
    const [a, b] = [Math.min(i, alike), Math.max(i, alike)];
    const alikeText = `columns "${columns[a]!.trim()}" and "${columns[b]!.trim()}" (${a + 1} and ${b + 1}) could both be the`;
    // a half of a first + last name pair: the mapping names the pair (one of the columns named alone
    // would be the whole name, its first name only; that was what the message said to send)
    const last = f === 'name' ? mapping.lastNameColumn : undefined;
    if (last !== undefined) {
      const half = i === last ? 'last' : 'first';
      const pair = (half === 'first' ? [b, last] : [mapping.fields.name!, b]).map((j) => `"${columns[j]!.trim()}"`).join(', ');
      out.push({ field: f, columns: competing, message: `${alikeText} ${half} name; name the pair to import in the mapping (e.g. {"name": [${pair}]}), or map the name to null` });
      continue;
    }
    out.push({
      field: f,
      columns: competing,
      message: `${alikeText} ${field}; name the one to import in the mapping (e.g. {"${field}": "${columns[b]!.trim()}"}), or map the ${field} to null`,
    });
  }
  return out;
}

/** Throws MappingError for the first column the mapping reads that cannot be told from another (findAmbiguities). */
export function checkMappedColumns(columns: string[], mapping: ColumnMapping): void {
  const [first] = findAmbiguities(columns, mapping);
  if (first) throw new MappingError(first.message, 'file');
}

/** The mapping without these fields (a field's last-name column too): what is left of it when they cannot be read. */
export function withoutFields(mapping: ColumnMapping, fields: readonly ContactField[]): ColumnMapping {
  const out: ColumnMapping = { ...mapping, fields: { ...mapping.fields } };
  for (const f of fields) {
    delete out.fields[f];
    if (f === 'name') delete out.lastNameColumn;
  }
  return out;
}

/**
 * The columns whose header names a first name, and those naming a last name (ALIASES), each in the
 * header's order: what a `name` pair can be made of. The suggestion takes the first of each; a
 * client offers the others (a file with `First Name` and `Given name`: the wizard could not pair the latter).
 */
export function nameParts(columns: string[]): { first: number[]; last: number[] } {
  const keys = columns.map(headerKey);
  const of = (aliases: string[]) => keys.flatMap((k, i) => (aliases.includes(k) ? [i] : []));
  return { first: of(ALIASES.firstName), last: of(ALIASES.lastName) };
}

/** The mapping the header suggests; fields without a recognizable column are absent. */
export function suggestMapping(columns: string[]): ColumnMapping {
  const keys = columns.map(headerKey);
  const find = (aliases: string[]) => {
    for (const a of aliases) {
      const i = keys.indexOf(a);
      if (i >= 0) return i;
    }
    return undefined;
  };
  const fields: Partial<Record<ContactField, number>> = {};
  for (const field of CONTACT_FIELDS) {
    const i = find(ALIASES[field]);
    if (i !== undefined) fields[field] = i;
  }
  // then a header that names alternatives or adds a remark — "City / Location", "E-mail (work)":
  // the field of its first part that names one, for a field no column has by its own name (a
  // tester's "City / Location" was left out without a word). The first part says what the column
  // is: "Company (Contact)" is a company, not a name.
  const namePair = fields.name === undefined && find(ALIASES.firstName) !== undefined && find(ALIASES.lastName) !== undefined;
  const taken = new Set(Object.values(fields));
  columns.forEach((column, j) => {
    const parts = column.split(/[/|()]/).map(headerKey).filter(Boolean);
    if (parts.length < 2 || taken.has(j)) return;
    const field = parts.map((part) => CONTACT_FIELDS.find((f) => ALIASES[f].includes(part))).find((f) => f !== undefined);
    if (field === undefined || fields[field] !== undefined || (field === 'name' && namePair)) return;
    fields[field] = j;
    taken.add(j);
  });
  // LinkedIn's connections export names its profile column `URL` (told by its `Connected On`):
  // elsewhere a URL is a website, which as a LinkedIn URL would refuse every row
  if (fields.linkedin === undefined && keys.includes('connectedon') && keys.includes('url')) fields.linkedin = keys.indexOf('url');
  const out: ColumnMapping = { fields };
  if (fields.name === undefined) {
    const first = find(ALIASES.firstName);
    const last = find(ALIASES.lastName);
    if (first !== undefined && last !== undefined) {
      fields.name = first;
      out.lastNameColumn = last;
    }
  }
  return out;
}

/**
 * Applies an explicit `mapping` (`{"name": "Full Name", "title": null, …}`) over the suggestion:
 * a field mapped to a column name uses that column, a field mapped to null is not imported,
 * fields not mentioned keep the suggestion. `name` may also be two column names, first and last
 * (`"name": ["First Name", "Last Name"]`), the form mappingByName gives back, so a preview's or a
 * job's mapping can be sent again as is. Throws MappingError for unknown fields or columns, for
 * a `name` pair that is not two different columns of the file, and for a column mapped to two fields.
 */
export function resolveMapping(columns: string[], explicit: unknown): ColumnMapping {
  const mapping = suggestMapping(columns);
  if (explicit === undefined) return mapping;
  if (typeof explicit !== 'object' || explicit === null || Array.isArray(explicit)) throw new MappingError('mapping must be a JSON object of field → column name');
  const keys = columns.map(headerKey);
  const namedExactly: number[] = [];
  /** The column of this exact text when the file has one, else the first alike but for case, spaces and `_ - .`. */
  const columnIndex = (field: string, column: string) => {
    const exact = columns.findIndex((c) => exactText(c) === exactText(column));
    if (exact >= 0) {
      namedExactly.push(exact);
      return exact;
    }
    const i = keys.indexOf(headerKey(column));
    if (i < 0) throw new MappingError(`mapping.${field}: the file has no column "${column}" (columns: ${columns.join(', ')})`, `mapping.${field}`);
    return i;
  };
  for (const [field, column] of Object.entries(explicit as Record<string, unknown>)) {
    if (!(CONTACT_FIELDS as readonly string[]).includes(field)) throw new MappingError(`"${field}" is not a contact field (${CONTACT_FIELDS.join(', ')})`, `mapping.${field}`);
    const f = field as ContactField;
    if (column === null) {
      delete mapping.fields[f];
      if (f === 'name') delete mapping.lastNameColumn;
      continue;
    }
    if (f === 'name' && Array.isArray(column)) {
      if (column.length !== 2 || !column.every((c) => typeof c === 'string'))
        throw new MappingError('mapping.name must be a column name, two column names [first name, last name], or null', 'mapping.name');
      const first = columnIndex(field, column[0] as string);
      const last = columnIndex(field, column[1] as string);
      if (first === last) throw new MappingError(`mapping.name: first and last name must be two different columns, not "${columns[first]!.trim()}" twice`, 'mapping.name');
      mapping.fields.name = first;
      mapping.lastNameColumn = last;
      continue;
    }
    if (typeof column !== 'string')
      throw new MappingError(f === 'name' ? 'mapping.name must be a column name, two column names [first name, last name], or null' : `mapping.${field} must be a column name or null`, `mapping.${field}`);
    mapping.fields[f] = columnIndex(field, column);
    if (f === 'name') delete mapping.lastNameColumn;
  }
  // one column for two fields (company and title both "Org"): every contact would get the same
  // text twice, which is a slip, not an import (a tester's file gave everyone their name as company)
  const used = CONTACT_FIELDS.flatMap((field) => (mapping.fields[field] === undefined ? [] : [[field, mapping.fields[field]] as const]));
  if (mapping.lastNameColumn !== undefined && mapping.fields.name !== undefined) used.push(['name', mapping.lastNameColumn]);
  for (const [at, [field, i]] of used.entries()) {
    const other = used.slice(0, at).find(([f, j]) => j === i && f !== field);
    if (!other) continue;
    // the path names a field the mapping gave (the other may be the suggestion's)
    const given = field in (explicit as object) ? field : other[0];
    throw new MappingError(`mapping: the column "${columns[i]!.trim()}" is mapped to both ${other[0]} and ${field}; map each field to a column of its own, or one of them to null`, `mapping.${given}`);
  }
  if (namedExactly.length) mapping.namedExactly = namedExactly;
  return mapping;
}

/** Throws MappingError unless name and company are mapped. */
export function requireMapped(mapping: ColumnMapping, delimiter = ',', tiedWith?: string): void {
  const missing = (['name', 'company'] as const).filter((f) => mapping.fields[f] === undefined);
  if (missing.length)
    throw new MappingError(
      `the file has no ${missing.join(' and no ')} column; name the columns (e.g. "name" or "first name" + "last name", and "company") or send a mapping${tiedWith ? delimiterHint(delimiter, tiedWith) : ''}`,
      'file',
    );
}

const delimiterName = (d: string) => (d === '\t' ? 'tabs' : `"${d}"`);

/**
 * The vote on the header's delimiter tied (`Name;Company, Division`) and the columns the file
 * needs are not there: the file was likely split by the wrong delimiter. Says so, and how to name
 * the file's — a first line `sep=;`, as Excel writes it (a tester's case: the message sent them to
 * a mapping, which could not help).
 */
const delimiterHint = (delimiter: string, other: string): string =>
  ` (the header was read as separated by ${delimiterName(delimiter)}, which it holds as often as ${delimiterName(other)}; if the file is separated by ${delimiterName(other)}, add a first line ${other === '\t' ? '"sep=" followed by a tab' : `sep=${other}`} above the header)`;

/** The mapping as column names (for previews and job descriptions). */
export function mappingByName(columns: string[], mapping: ColumnMapping): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [field, i] of Object.entries(mapping.fields)) out[field] = columns[i]!;
  if (mapping.lastNameColumn !== undefined && mapping.fields.name !== undefined) out.name = [columns[mapping.fields.name]!, columns[mapping.lastNameColumn]!];
  return out;
}

/** The annotation a rejected-rows CSV (…/imports/:id/errors) puts after an upload's own columns. */
export const REJECTION_COLUMNS = ['reason', 'line'] as const;

/**
 * True when the last two columns are named as a rejected-rows CSV's annotation. A file of the
 * user's own may end so too: whether it is one of ours is decided against the headers this
 * organization's rejected-rows CSVs were written with (import-service.ts isOwnRejectedRows).
 */
export const endsWithRejectionColumns = (columns: string[]): boolean => columns.length > 2 && columns.at(-2) === REJECTION_COLUMNS[0] && columns.at(-1) === REJECTION_COLUMNS[1];

/**
 * The columns of an upload its rejected-rows CSV gives back: all of them, except the annotation of
 * a rejected-rows CSV of ours uploaded again (CsvFormat.formulasEscaped), which the new one
 * replaces rather than adds to (else a third round would have the columns twice).
 */
export const ownColumns = (format: { columns: string[]; formulasEscaped?: boolean }): string[] => (format.formulasEscaped ? format.columns.slice(0, -REJECTION_COLUMNS.length) : format.columns);

/** The header of the rejected-rows CSV of an upload read with `format`. */
export const rejectedRowsHeader = (format: { columns: string[]; formulasEscaped?: boolean }): string[] => [...ownColumns(format), ...REJECTION_COLUMNS];

/** The columns a mapping reads, each with the field it gives (the last-name column: name). */
const mappedFields = (mapping: ColumnMapping): [string, number][] => [
  ...(Object.entries(mapping.fields) as [string, number][]),
  ...(mapping.lastNameColumn === undefined ? [] : [['name', mapping.lastNameColumn] as [string, number]]),
];

/** The columns a mapping reads. */
export const mappedColumns = (mapping: ColumnMapping): number[] => mappedFields(mapping).map(([, i]) => i);

/**
 * Whether a row repeats the header: each of its mapped cells that is not empty is its column's
 * name, and at least two are — two exports joined into one file put the second one's header among
 * the rows, and it was imported as a contact named "Full Name" at "Company" (a tester's case).
 */
export function repeatsHeader(cells: readonly string[], columns: readonly string[], mapping: ColumnMapping): boolean {
  let same = 0;
  for (const i of mappedColumns(mapping)) {
    const cell = cells[i]?.trim() ?? '';
    if (cell === '') continue;
    if (columns[i] === undefined || headerKey(cell) !== headerKey(columns[i]!) || headerKey(cell) === '') return false;
    same++;
  }
  return same >= 2;
}

/** The contact object of one CSV row under a mapping (empty cells are absent values). */
export function rowToInput(cells: string[], mapping: ColumnMapping): Record<string, string> {
  const out: Record<string, string> = {};
  for (const field in mapping.fields) {
    const v = cells[mapping.fields[field as ContactField]!];
    if (v !== undefined && v !== '') out[field] = v;
  }
  if (mapping.lastNameColumn !== undefined) {
    // a name made of two cells is ours to join: each part trimmed, one space between
    const name = [out.name ?? '', cells[mapping.lastNameColumn] ?? ''].map((part) => part.trim()).filter(Boolean).join(' ');
    if (name) out.name = name;
    else delete out.name;
  }
  return out;
}
