/**
 * JSON text → values, keeping the digits of integers beyond 2^53−1. JSON.parse turns
 * `9007199254740993` into the nearest double (9007199254740992): a value stored "as submitted"
 * would come back as another number. Here such an integer becomes a JSON.rawJSON value holding
 * its source text, which JSON.stringify writes back digit for digit. Everything else is what
 * JSON.parse gives. The source-aware reviver costs ~8× a plain parse (4.8 ms against 0.57 ms for
 * a 1,000-contact batch), so it runs only when the plain parse met such an integer (the check is a
 * walk over the parsed value: ~0.06 ms for that batch).
 */

interface RawJson {
  readonly rawJSON: string;
}

// Node 22 has JSON.rawJSON / JSON.isRawJSON and the reviver's `context.source` (TC39 "JSON.parse
// source text access"); the es2023 lib the project type-checks against does not declare them yet.
const J = JSON as JSON & {
  rawJSON(text: string): RawJson;
  isRawJSON(value: unknown): value is RawJson;
  parse(text: string, reviver: (this: unknown, key: string, value: unknown, context: { source?: string }) => unknown): unknown;
};

const INTEGER_TEXT = /^-?\d+$/;

function reviver(_key: string, value: unknown, context: { source?: string }): unknown {
  if (typeof value === 'number' && !Number.isSafeInteger(value) && context.source !== undefined && INTEGER_TEXT.test(context.source)) return J.rawJSON(context.source);
  return value;
}

/**
 * Walks a parsed JSON value — the value, then every value inside its arrays and objects — and
 * returns true as soon as `visit` does. `depth` is 0 for the value itself. Without recursion:
 * JSON.parse accepts nesting far deeper than the call stack (200,000 levels of `[`).
 */
export function someJsonValue(root: unknown, visit: (v: unknown, depth: number) => boolean): boolean {
  const values: unknown[] = [root];
  const depths: number[] = [0];
  while (values.length) {
    const v = values.pop();
    const depth = depths.pop()!;
    if (visit(v, depth)) return true;
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) {
        values.push(v[i]);
        depths.push(depth + 1);
      }
    } else {
      for (const k in v) {
        values.push((v as Record<string, unknown>)[k]);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** True when `v` holds a number written as an integer that a double cannot hold exactly. */
export const hasUnsafeInteger = (v: unknown): boolean => someJsonValue(v, (x) => typeof x === 'number' && Number.isInteger(x) && !Number.isSafeInteger(x));

/** JSON.parse, except that integers beyond ±(2^53−1) keep their digits (see the module comment). Throws SyntaxError like JSON.parse. */
export function parseJsonExact(text: string): unknown {
  const value = JSON.parse(text) as unknown;
  return hasUnsafeInteger(value) ? J.parse(text, reviver) : value;
}

/** The digits of a number's text before its exponent hold something other than zeros. */
const NONZERO_MANTISSA = /^-?0*\.?0*[1-9]/;
/** A number with a three-digit exponent or hundreds of digits: only such a text can leave a double's range. */
const FAR_NUMBER = /[eE][+-]?\d{3}|\d{300}/;

/**
 * The text of the first number in JSON `text` (already parsed to `value`) that a double cannot
 * hold even roughly: beyond ±1.8e308, which JSON.parse reads as ±Infinity (and JSON.stringify
 * writes back as null), or a non-zero number below 4.9e-324, which it reads as 0. Undefined when
 * there is none; the text is read again, with each number's source, only when it could hold one.
 */
export function outOfRangeNumber(text: string, value: unknown): { text: string; readAs: 0 | typeof Infinity } | undefined {
  if (!FAR_NUMBER.test(text)) return undefined;
  if (!someJsonValue(value, (x) => x === 0 || (typeof x === 'number' && !Number.isFinite(x)))) return undefined;
  let found: { text: string; readAs: 0 | typeof Infinity } | undefined;
  J.parse(text, (_key: string, v: unknown, context: { source?: string }) => {
    if (found === undefined && typeof v === 'number' && context.source !== undefined && (!Number.isFinite(v) || (v === 0 && NONZERO_MANTISSA.test(context.source)))) {
      found = { text: context.source, readAs: v === 0 ? 0 : Infinity };
    }
    return v;
  });
  return found;
}

/** An integer that parseJsonExact kept as its digits: its source text; undefined for anything else. */
export function exactIntegerText(value: unknown): string | undefined {
  return typeof value === 'object' && value !== null && J.isRawJSON(value) ? value.rawJSON : undefined;
}

/** A run of spaces, matched where firstDuplicateKey meets one (sticky: from lastIndex). */
const SPACES = / +/y;

/**
 * The path (`contacts.3.name`) of the first key that an object of valid JSON text gives twice, or
 * undefined. JSON.parse keeps the last of them without a word (RFC 8259 §4: names SHOULD be
 * unique, and parsers differ on which wins), so `{"name":"Ada","name":"Bob"}` would quietly be
 * Bob. Strings are skipped whole (indexOf to their closing quote), so text inside a value never
 * reads as a key; ~1 ms for a 1,000-contact batch of 190 KB, twice JSON.parse. Runs of spaces
 * are skipped by a regex: a batch padded with 3 MB of them took 14 ms a character at a time, 3 ms so (JSON.parse's own time).
 */
export function firstDuplicateKey(text: string): string | undefined {
  if (!text.includes('{')) return undefined;
  const keys: (Set<string> | null)[] = []; // per open bracket: an object's keys, or null for an array
  const at: (string | number)[] = [];
  let pos = 0;
  for (;;) {
    const open = text.indexOf('"', pos);
    const end = open < 0 ? text.length : open;
    for (let i = pos; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x20 && text.charCodeAt(i + 1) === 0x20) {
        // a run of spaces (indentation, padding) is skipped in native code
        SPACES.lastIndex = i;
        SPACES.test(text);
        i = SPACES.lastIndex - 1;
      } else if (c === 0x7b /* { */) {
        keys.push(new Set());
        at.push('');
      } else if (c === 0x5b /* [ */) {
        keys.push(null);
        at.push(0);
      } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
        keys.pop();
        at.pop();
      } else if (c === 0x2c /* , */ && keys[keys.length - 1] === null) at[at.length - 1] = (at[at.length - 1] as number) + 1;
    }
    if (open < 0) return undefined;
    let close = text.indexOf('"', open + 1);
    while (text.charCodeAt(close - 1) === 0x5c /* \ */) {
      let n = 1;
      while (text.charCodeAt(close - 1 - n) === 0x5c) n++;
      if (n % 2 === 0) break; // the backslashes escape each other, not the quote
      close = text.indexOf('"', close + 1);
    }
    pos = close + 1;
    let next = pos;
    while (next < text.length && (text.charCodeAt(next) <= 0x20)) next++;
    if (text.charCodeAt(next) !== 0x3a /* : */) continue;
    const quoted = text.slice(open, close + 1);
    const key = quoted.includes('\\') ? (JSON.parse(quoted) as string) : quoted.slice(1, -1);
    const own = keys[keys.length - 1]!;
    at[at.length - 1] = key;
    if (own.has(key)) return at.join('.');
    own.add(key);
    pos = next + 1;
  }
}

/**
 * JSON text of a parsed value with every object's keys in sorted order: the same value gives the
 * same text however its keys were ordered when sent, so that a request's fingerprint (an
 * Idempotency-Key's) does not change when a client re-serializes it. Exact integers stay exact.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || J.isRawJSON(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

/** A `\u` escape of a UTF-16 surrogate: the only way JSON text that is valid UTF-8 can hold half a pair. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * True when a parsed JSON value holds a string or key with half a surrogate pair (`"\ud800"`
 * alone): no character, and SQLite's UTF-8 would store U+FFFD in its place — the text altered
 * without a word. `text` is the JSON it was parsed from (a cheap test first: only an escape makes one).
 */
export function hasLoneSurrogate(text: string, value: unknown): boolean {
  if (!SURROGATE_ESCAPE.test(text)) return false;
  return someJsonValue(value, (v) => (typeof v === 'string' ? LONE_SURROGATE.test(v) : typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).some((k) => LONE_SURROGATE.test(k))));
}
