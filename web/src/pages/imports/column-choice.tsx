// The wizard's second step: the column each contact field takes, from the preview of the file
// (POST …/imports/preview), and the mapping Import sends for it.
import { fmtCount } from '../../ui.tsx';
import { colName, inWords, placedName, places, twiceText, twinsOf } from './column-names.ts';

/** What POST …/imports/preview answers: the file's columns, its first rows and the mapping suggested. */
export interface Preview {
  columns: string[];
  delimiter: string;
  rowCount: number;
  rows: string[][];
  suggestedMapping: Record<string, string | string[]>;
  mapping: Record<string, string | string[]>;
  missing: string[];
  /** Fields two columns or more could be: left out of the mappings, for the user to choose. */
  ambiguous: { field: string; columns: number[]; message: string }[];
  /** The columns whose header names a first name, and a last name: what a name pair can be made of. */
  nameParts: { first: number[]; last: number[] };
}

/** The column chosen for each contact field (a select's value: see NONE, col and pair). */
export type Choice = Record<string, string>;

const FIELDS: { field: string; label: string; required?: boolean }[] = [
  { field: 'name', label: 'Name', required: true },
  { field: 'company', label: 'Company', required: true },
  { field: 'title', label: 'Title' },
  { field: 'email', label: 'E-mail' },
  { field: 'linkedin', label: 'LinkedIn URL' },
  { field: 'location', label: 'Location' },
  { field: 'referenceId', label: 'Reference id (your CRM id)' },
];
// A choice is "not imported", a column by its place (`c3`), or for the name a first + last name
// pair of them (`c0+c2`): a header may be blank or repeat another, so its text cannot be the choice's value.
const NONE = '';
const col = (i: number) => `c${i}`;
const pair = (first: number, last: number) => `${col(first)}+${col(last)}`;
/** The columns a choice takes, by their place: none, one, or a name's first and last. */
const columnsOf = (v: string | undefined): number[] => (v && /^c\d+(\+c\d+)?$/.test(v) ? v.split('+').map((c) => Number(c.slice(1))) : []);
/** The pairs a name can be made of: each first-name column with each last-name column (the preview's nameParts). */
const namePairs = (p: Preview) => p.nameParts.first.flatMap((f) => p.nameParts.last.filter((l) => l !== f).map((l) => [f, l] as const));
/**
 * A field the preview left unmapped because several columns could be it, in the page's words
 * (the API's message tells of a JSON mapping the user never sees).
 */
function ambiguityText(p: Preview, a: Preview['ambiguous'][number], label: string, required: boolean): string {
  const { columns } = p;
  const twins = a.columns.filter((j) => twinsOf(columns, j).length > 0);
  const choosable = a.columns.filter((j) => !twins.includes(j));
  const names = (js: number[]) => inWords(js.map((j) => `“${colName(columns, j)}”`));
  // the columns compete as a half of the name: the choice is a pair (one of them alone would be the whole name)
  const half = a.field !== 'name' ? undefined : a.columns.every((j) => p.nameParts.first.includes(j)) ? 'first name' : a.columns.every((j) => p.nameParts.last.includes(j)) ? 'last name' : undefined;
  if (twins.length === 0)
    return `${names(a.columns)} (${places(a.columns)}) could ${a.columns.length === 2 ? 'both' : 'all'} be the ${half ?? label}: choose the ${half ? 'first name + last name pair' : 'one'} to import${required ? '.' : ', or leave it not imported.'}`;
  return `${twiceText(columns, twins)}${choosable.length ? ` Or choose ${names(choosable)}.` : ''}`;
}
const DELIMITERS: Record<string, string> = { ',': 'comma', ';': 'semicolon', '\t': 'tab' };

/** The choice the preview suggests: its mapping's columns, by their place. */
export function suggestedChoice(p: Preview): Choice {
  const c: Choice = {};
  for (const { field } of FIELDS) {
    const m = p.suggestedMapping[field];
    c[field] = Array.isArray(m) ? pair(p.columns.indexOf(m[0]!), p.columns.indexOf(m[1]!)) : m === undefined || !p.columns.includes(m) ? NONE : col(p.columns.indexOf(m));
  }
  return c;
}

/** The mapping Import sends for a choice: each field's column by its header's text (the name's pair as [first, last]), or null. */
export function mappingOf(p: Preview, choice: Choice): Record<string, string | string[] | null> {
  const mapping: Record<string, string | string[] | null> = {};
  for (const { field } of FIELDS) {
    // the server takes a column by its header's text ("" for a blank one)
    const texts = columnsOf(choice[field]).map((i) => p.columns[i]!);
    mapping[field] = texts.length === 0 ? null : texts.length === 1 ? texts[0]! : texts;
  }
  return mapping;
}

/** What is wrong with a choice, said at the mapping step before anything is sent; `blocked`: Import waits. */
export function checkChoice(p: Preview, choice: Choice) {
  const missing = FIELDS.filter((f) => f.required && !(choice[f.field] ?? NONE));
  /** The fields a column gives, as its header in the preview says. */
  const mapsTo = (j: number) => FIELDS.filter((f) => columnsOf(choice[f.field]).includes(j));
  /** The columns no field takes: said in words, so that none is left out unnoticed (a tester's "City / Location"). */
  const left = p.columns.map((_, j) => j).filter((j) => mapsTo(j).length === 0);
  /**
   * Columns chosen for two fields or more: said at those fields before anything is sent, in the
   * page's words (a web tester got the server's refusal, "mapping.title: … or one of them to null",
   * below the table, and no field marked).
   */
  const shared = p.columns.map((_, j) => ({ j, fields: mapsTo(j) })).filter((x) => x.fields.length > 1);
  const sharedFields = new Set(shared.flatMap((x) => x.fields.map((f) => f.field)));
  /** Fields given a column whose header another column has too: the import would refuse it, so it is said at the field. */
  const twice = FIELDS.flatMap((f) => {
    const j = columnsOf(choice[f.field]).find((i) => twinsOf(p.columns, i).length > 0);
    return j === undefined ? [] : [{ field: f.field, columns: [j, ...twinsOf(p.columns, j)].sort((a, b) => a - b) }];
  });
  const ambiguous = new Map(p.ambiguous.map((a) => [a.field, a]));
  return { missing, mapsTo, left, shared, sharedFields, twice, ambiguous, blocked: missing.length > 0 || shared.length > 0 || twice.length > 0 };
}
export type ChoiceCheck = ReturnType<typeof checkChoice>;

/**
 * The mapping step: a select per contact field, what is wrong with the choice said at its fields,
 * the columns left out, and the file's first rows with the field each column gives.
 */
export function ColumnChoice(props: { fileName: string; p: Preview; choice: Choice; check: ChoiceCheck; disabled: boolean; onChoice: (c: Choice) => void }) {
  const { p, choice, check } = props;
  const { missing, mapsTo, left, shared, sharedFields, twice, ambiguous } = check;
  /**
   * What is said at a field, once: the columns that compete for it (a hint), or the column chosen
   * that another has the header of (an error: its twin was chosen, or another one). Until the
   * fiftieth session a twin chosen among those the hint named left that hint as it was, muted,
   * beside a select marked invalid, and Import disabled with no error said.
   */
  const noteOf = (field: string, label: string, required: boolean) => {
    const a = ambiguous.get(field);
    const t = twice.find((x) => x.field === field);
    if (!a && !t) return undefined;
    const text = a && (!t || a.columns.includes(t.columns[0]!)) ? ambiguityText(p, a, label, required) : twiceText(p.columns, t!.columns);
    return { id: t ? `twice-${field}` : `ambiguous-${field}`, error: t !== undefined, text };
  };
  return (
    <>
      <p class="muted">
        <strong>{props.fileName}</strong>: {fmtCount(p.rowCount, 'row')}, {DELIMITERS[p.delimiter] ?? p.delimiter} separated, {fmtCount(p.columns.length, 'column')}. Each contact field below takes its value from the column you choose.
      </p>
      <div class="mapping">
        {FIELDS.map(({ field, label, required }) => {
          const note = noteOf(field, label, required === true);
          return (
            <div class="field" key={field}>
              <label for={`map-${field}`}>
                {label}
                {required && <span class="req"> (required)</span>}
              </label>
              <select
                id={`map-${field}`}
                value={choice[field] ?? NONE}
                disabled={props.disabled}
                aria-invalid={sharedFields.has(field) || twice.some((t) => t.field === field) || undefined}
                aria-describedby={[sharedFields.has(field) && 'columns-shared', note?.id].filter(Boolean).join(' ') || undefined}
                onChange={(e) => props.onChoice({ ...choice, [field]: e.currentTarget.value })}
              >
                <option value={NONE}>— not imported —</option>
                {field === 'name' &&
                  namePairs(p).map(([f, l]) => (
                    <option key={pair(f, l)} value={pair(f, l)}>
                      {placedName(p.columns, f)} + {placedName(p.columns, l)}
                    </option>
                  ))}
                {p.columns.map((_, i) => (
                  <option key={i} value={col(i)}>
                    {placedName(p.columns, i)}
                  </option>
                ))}
              </select>
              {/* (keyed: an error replaces the hint as a new element, so that it is announced) */}
              {note &&
                (note.error ? (
                  <p class="form-error" role="alert" id={note.id} key="error">
                    {note.text}
                  </p>
                ) : (
                  <p class="hint" id={note.id} key="hint">
                    {note.text}
                  </p>
                ))}
            </div>
          );
        })}
      </div>
      {missing.length > 0 && (
        <p class="form-error" role="alert">
          Choose a column for {missing.map((m) => m.label).join(' and ')}: every contact needs them.
        </p>
      )}
      {shared.length > 0 && (
        <p class="form-error" role="alert" id="columns-shared">
          {shared.map((x) => `“${placedName(p.columns, x.j)}” is chosen for ${x.fields.map((f) => f.label).join(' and ')}`).join('; ')}: choose a column of its own for each field, or “— not imported —” for all but one.
        </p>
      )}
      {left.length > 0 && (
        <p class="muted" id="columns-left">
          Not imported: {left.map((j) => placedName(p.columns, j)).join(', ')}. To import one, choose it for a field above.
        </p>
      )}
      <h3>First rows of the file</h3>
      <div class="table-wrap" tabIndex={0} role="region" aria-label="First rows of the file">
        <table class="preview">
          <thead>
            <tr>
              {p.columns.map((_, j) => (
                <th scope="col" key={j}>
                  {placedName(p.columns, j)}
                  <span class="maps">
                    {mapsTo(j)
                      .map((f) => `→ ${f.label}`)
                      .join(', ')}
                  </span>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {p.rows.map((r, i) => (
              <tr key={i}>
                {p.columns.map((_, j) => (
                  <td key={j}>{r[j] ?? ''}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
