/**
 * Text as a regular expression that matches exactly that text: every character with a meaning in
 * a pattern is escaped (Node 22 has no RegExp.escape). For patterns built from data — a folder's
 * path, a router's prefix, a table of abbreviations.
 */
export const regExpLiteral = (text: string): string => text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
