/**
 * Time, injected everywhere it matters so tests can move it (P14). All stored timestamps are
 * milliseconds since the epoch (INTEGER columns); the wire format is produced here.
 */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * A clock tests can set and advance. Its time lives in shared memory, so that the bulk thread
 * (src/bulk-thread) reads the same clock as the main thread: `sharedTime` / `clockOf`.
 */
export class ManualClock implements Clock {
  readonly shared = new Float64Array(new SharedArrayBuffer(8));
  constructor(start: number | string = Date.now()) {
    this.set(start);
  }
  now(): number {
    return this.shared[0]!;
  }
  set(t: number | string): void {
    this.shared[0] = typeof t === 'number' ? t : Date.parse(t);
  }
  advance(ms: number): void {
    this.shared[0]! += ms;
  }
}

/** What a worker thread needs to read the same time as `clock`: the shared time of a ManualClock, else null (the system clock). */
export const sharedTime = (clock: Clock): Float64Array | null => (clock instanceof ManualClock ? clock.shared : null);

/** The clock of a worker thread, from what `sharedTime` gave it. */
export const clockOf = (shared: Float64Array | null): Clock => (shared ? { now: () => shared[0]! } : systemClock);

export const DAY_MS = 86_400_000;
/** Up to 9999-12-31T23:59:59.999Z: the range where toISOString writes a four-digit year. */
const MAX_FAST_MS = 253_402_300_800_000;
const TWO = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const THREE = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));
/** `YYYY-MM-DDT` of recent days (bounded). */
const dayPrefixes = new Map<number, string>();

function dayPrefix(day: number): string {
  let s = dayPrefixes.get(day);
  if (s === undefined) {
    if (dayPrefixes.size >= 4096) dayPrefixes.clear();
    s = new Date(day * DAY_MS).toISOString().slice(0, 11);
    dayPrefixes.set(day, s);
  }
  return s;
}

/**
 * `2026-11-22T10:32:00.123Z`: the timestamp format of every response (SPEC §2); the same text as
 * `new Date(ms).toISOString()`, several times faster (a list page formats hundreds of them): the
 * date part comes from a small cache of days, the time of day from lookup tables.
 */
export function isoZ(ms: number): string {
  if (!(ms >= 0 && ms < MAX_FAST_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  let t = ms - day * DAY_MS;
  const h = Math.floor(t / 3_600_000);
  t -= h * 3_600_000;
  const m = Math.floor(t / 60_000);
  t -= m * 60_000;
  const s = Math.floor(t / 1000);
  return `${dayPrefix(day)}${TWO[h]}:${TWO[m]}:${TWO[s]}.${THREE[t - s * 1000]}Z`;
}

export function isoZOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : isoZ(ms);
}

/**
 * `2026-11-22T11:32:00.123456`: the session's `expiresAt` — UTC, no zone, six fractional digits,
 * exactly what the hosted service returns and what Python's `%Y-%m-%dT%H:%M:%S.%f` parses.
 */
export function sessionExpiry(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000');
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
// the offset as ±hh:mm, ±hhmm or ±hh (ISO 8601 allows the hours alone: "+05", "-03")
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2})(?::?(\d{2}))?)?$/i;

/**
 * What a timestamp filter accepts, for the messages of the parameters that take one: which of
 * ISO 8601's forms, since "must be an ISO 8601 timestamp" refused forms ISO 8601 has (the basic
 * 20261202T114024Z, ten fractional digits; two testers' cases).
 */
export const TIMESTAMP_RULE =
  "a timestamp in ISO 8601's extended format, 2026-11-01T09:30:00.5Z (the seconds, up to nine fractional digits and the zone may be left out: no zone is UTC; a zone is Z, ±hh:mm, ±hhmm or ±hh), or a date (2026-11-01); years 0001–9999 (ending before year 10000 in UTC, to the millisecond rounded up), zone offsets up to ±23:59";

/**
 * Parses a timestamp filter (SPEC §2): ISO 8601 with or without zone (no zone = UTC) or a plain
 * date. Returns epoch milliseconds, or undefined when the text is not such a timestamp.
 * Fields are range-checked as RFC 3339 does (month 01–12, the day within its month, hour ≤ 23,
 * minute and second ≤ 59, offset hours ≤ 23 and minutes ≤ 59); the year is 0001–9999, taken as
 * written (Date.UTC would read 0–99 as 1900–1999), and the instant must fall before year 10000
 * UTC, so that every accepted time is written back with a four-digit year.
 */
export function parseTimestamp(text: string): number | undefined {
  return parseExactTimestamp(text)?.ms;
}

/**
 * A time to the nanosecond, as precise as a timestamp may be written (nine fractional digits):
 * `ms` rounded up to a whole millisecond (what parseTimestamp returns and what is stored and shown)
 * and `nsBefore`, how far before `ms` the time is (0 ≤ nsBefore < 1,000,000). Feeds compare
 * observation times with it: Python and PostgreSQL write microseconds, and two observations in one
 * millisecond rounded to it came out the same time, so the older one was applied after the newer.
 */
export interface ExactTime {
  ms: number;
  /** Null: not known (a person observed before migration 0039), anywhere in the millisecond before `ms`. */
  nsBefore: number | null;
}

/**
 * Negative when `a` is earlier than `b`, 0 for the same time, positive when later. Within one
 * millisecond a time whose part below it is not known is the same time as any other, as all
 * times of a millisecond were before migration 0039.
 */
export const compareExactTimes = (a: ExactTime, b: ExactTime): number => a.ms - b.ms || (a.nsBefore === null || b.nsBefore === null ? 0 : b.nsBefore - a.nsBefore);

/** parseTimestamp to the nanosecond (ExactTime). */
export function parseExactTimestamp(text: string): { ms: number; nsBefore: number } | undefined {
  const s = text.trim();
  let m = DATE_ONLY.exec(s);
  if (m) {
    const ms = utc(+m[1]!, +m[2]!, +m[3]!, 0, 0, 0, 0, 0);
    return ms === undefined ? undefined : { ms, nsBefore: 0 };
  }
  m = DATE_TIME.exec(s);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, sec, frac, , sign, oh, om] = m;
  if (+h! > 23 || +mi! > 59 || +(sec ?? 0) > 59) return undefined;
  let offsetMinutes = 0;
  if (sign) {
    if (+oh! > 23 || +(om ?? 0) > 59) return undefined;
    offsetMinutes = (sign === '+' ? 1 : -1) * (+oh! * 60 + +(om ?? 0));
  }
  const ms = utc(+y!, +mo!, +d!, +h!, +mi!, +(sec ?? 0), fractionMs(frac), offsetMinutes);
  // the nanoseconds past the fraction's whole milliseconds, which rounded `ms` up when not 0
  const ns = frac && frac.length > 3 ? Number(frac.slice(3).padEnd(6, '0')) : 0;
  return ms === undefined ? undefined : { ms, nsBefore: ns === 0 ? 0 : 1_000_000 - ns };
}

/**
 * The milliseconds of a fraction of a second, rounded up: times are kept in whole milliseconds, and
 * for a time between two of them (`…01.1425Z`) the next one is where both kinds of filter bound
 * stay exact — a stored value is ≥ 142.5 exactly when it is ≥ 143, and < 142.5 exactly when it is
 * < 143. Digit arithmetic, not floating point (0.142 × 1000 is 142.00000000000003).
 */
function fractionMs(frac: string | undefined): number {
  if (!frac) return 0;
  const ms = Number(frac.slice(0, 3).padEnd(3, '0'));
  return /[1-9]/.test(frac.slice(3)) ? ms + 1 : ms;
}

/**
 * Epoch milliseconds of a local time with the given offset from UTC, or undefined for a year
 * outside 0001–9999, a day its month does not have (2026-02-31, which Date would roll over), or
 * an instant from year 10000 on.
 */
function utc(y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number, offsetMinutes: number): number | undefined {
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d); // not Date.UTC: it reads years 0–99 as 1900–1999
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d) return undefined;
  date.setUTCHours(h, mi, s, ms);
  const t = date.getTime() - offsetMinutes * 60_000;
  return Number.isFinite(t) && t < MAX_FAST_MS ? t : undefined;
}
