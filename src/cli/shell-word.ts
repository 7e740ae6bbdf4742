/**
 * A path as one word of a command to copy into a shell: as it is when the shell reads it so, else
 * in single quotes (a folder named "client data" or "o'brien" split the command or left a quote
 * open).
 */
export function shellWord(word: string): string {
  return /^[\w/.,:@%+=-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
