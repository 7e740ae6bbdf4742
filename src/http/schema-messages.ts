import { z } from 'zod';

/**
 * The messages a request's validation errors carry when a schema names none of its own: written
 * for the person reading a 400 or 422 ("must not be empty", "must be at most 200 characters"),
 * not zod's defaults ("Too small: expected string to have >=1 characters"). A message a schema
 * gives itself still wins (zod's order: schema, parse call, this configuration, locale).
 */

/** What a JSON value is, for messages: "a string", "an array", "null". */
export const kindOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`);

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  bigint: 'a whole number',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
  null: 'null',
};

const UNITS: Record<string, [string, string]> = {
  string: ['character', 'characters'],
  array: ['item', 'items'],
  set: ['item', 'items'],
  file: ['byte', 'bytes'],
};

const FORMATS: Record<string, string> = {
  email: 'must be an e-mail address',
  url: 'must be a URL',
  datetime: 'must be an ISO 8601 date-time',
  date: 'must be a date (YYYY-MM-DD)',
  uuid: 'must be a UUID',
};

const count = (n: number | bigint, unit: [string, string] | undefined) => (unit ? `${n} ${n === 1 ? unit[0] : unit[1]}` : String(n));

function bound(origin: string, limit: number | bigint, inclusive: boolean | undefined, side: 'min' | 'max'): string {
  const unit = UNITS[origin];
  if (side === 'min' && unit && Number(limit) === 1 && inclusive !== false) return 'must not be empty';
  if (!unit) return `must be ${side === 'min' ? (inclusive === false ? 'greater than' : 'at least') : inclusive === false ? 'less than' : 'at most'} ${limit}`;
  const n = inclusive === false ? (side === 'min' ? Number(limit) + 1 : Number(limit) - 1) : Number(limit);
  return `must ${origin === 'string' ? 'be' : 'have'} ${side === 'min' ? 'at least' : 'at most'} ${count(n, unit)}`;
}

/** The plain message for an issue zod raises without one of the schema's own, or undefined for zod's. */
export function plainMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      return `must be ${EXPECTED[issue.expected] ?? issue.expected}, not ${kindOf(issue.input)}`;
    case 'too_small':
      return bound(issue.origin, issue.minimum, issue.inclusive, 'min');
    case 'too_big':
      return bound(issue.origin, issue.maximum, issue.inclusive, 'max');
    case 'invalid_value': {
      const values = issue.values.map((v) => JSON.stringify(v));
      return values.length === 1 ? `must be ${values[0]}` : `must be one of ${values.join(', ')}`;
    }
    case 'invalid_format':
      return FORMATS[issue.format] ?? 'is not in the expected format';
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    case 'invalid_union':
      return 'is not in any of the accepted forms';
    default:
      return undefined;
  }
}

z.config({ customError: plainMessage });
