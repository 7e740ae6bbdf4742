// How the import pages name a file's columns: by their header, or by their place when the header
// is blank or repeats another's.

/** What a column is called in the page: its header, or "(column 5)" when the header is blank. */
export const colName = (columns: string[], i: number) => (columns[i]!.trim() === '' ? `(column ${i + 1})` : columns[i]!);
/** The columns whose header is the same text as column i's (trimmed): a mapping, which names columns by their text, cannot choose between them. */
export const twinsOf = (columns: string[], i: number) => {
  const text = (c: string) => c.normalize('NFC').trim();
  return columns.flatMap((c, j) => (j !== i && text(c) === text(columns[i]!) ? [j] : []));
};
/** “a”, “b” and “c” */
export const inWords = (items: string[]) => (items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`);
/** Columns by their place, 1 being the first: "columns 3 and 4". */
export const places = (js: number[]) => `column${js.length === 1 ? '' : 's'} ${inWords(js.map((j) => String(j + 1)))}`;
/** What a column named twice is said to be, at the field it is chosen for (the import would refuse it). */
export const twiceText = (columns: string[], js: number[]) =>
  columns[js[0]!]!.trim() === ''
    ? `${places(js)} have no header: the import cannot tell them apart. Give one of them a header in the file, then choose it.`
    : `The header names “${columns[js[0]!]!.trim()}” ${js.length === 2 ? 'twice' : `${js.length} times`} (${places(js)}): the import cannot tell them apart. Rename one of them in the file, then choose it.`;
/**
 * A column as the mapping step offers and lists it: its name, with its place when another column
 * has the same header ("name (column 2)"), as the message about them says (the selects offered
 * "name" twice, which could not be told apart).
 */
export const placedName = (columns: string[], i: number) => (columns[i]!.trim() !== '' && twinsOf(columns, i).length > 0 ? `${columns[i]} (column ${i + 1})` : colName(columns, i));
