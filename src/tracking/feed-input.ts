import { parseExactTimestamp, parseTimestamp, TIMESTAMP_RULE } from '../clock.ts';
import { MAX_LENGTH } from '../ledger/contact-input.ts';
import { canonicalLinkedin, emailProblem, placeholderProblem, textProblem } from '../normalize.ts';
import type { FeedRecord } from './model.ts';

/**
 * Validation of one person-data feed record (SPEC §5). Feed files come from data providers and
 * carry fields of their own: fields this service does not use are ignored (documented), but every
 * field it uses must be valid, or the record is rejected with a reason.
 */

const EMAIL_STATUS = new Set(['valid', 'catch-all', 'best-guess']);

export type FeedInputResult = { ok: true; record: FeedRecord } | { ok: false; reason: string };

const reject = (reason: string): FeedInputResult => ({ ok: false, reason });

function text(v: unknown, field: string, max: number): string | undefined | { error: string } {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && field === 'personId') {
    // JSON.parse has already rounded such a number: two people's ids could become one
    if (!Number.isFinite(v)) return { error: 'personId is a number beyond ±1.8e308 (read as infinity: every such id would be one person); send it as a string' };
    if (Number.isInteger(v) && !Number.isSafeInteger(v)) return { error: `personId is a whole number beyond ±(2^53−1) (read as ${v}), which cannot be kept exactly; send it as a string` };
    v = String(v);
  }
  if (typeof v !== 'string') return { error: `${field} must be a string` };
  const t = v.trim();
  if (!t) return undefined;
  const problem = textProblem(t, field, max);
  if (problem) return { error: problem };
  return t;
}
const bad = (v: unknown): v is { error: string } => typeof v === 'object' && v !== null;

const START_RULE = `${TIMESTAMP_RULE}, a month (2024-03) or a year (2024)`;

/**
 * When a job started: profiles say it to the month ("Mar 2024") or the year, so `2024-03` and
 * `2024` are taken as the first day of that month or year (UTC), as well as every timestamp.
 */
function parseStartDate(v: string): number | undefined {
  const m = /^(\d{4})(?:-(\d{2}))?$/.exec(v);
  return m ? parseTimestamp(`${m[1]}-${m[2] ?? '01'}-01`) : parseTimestamp(v);
}

/** How far in the future an `observedAt` may be (clock skew between a provider and this machine). */
export const OBSERVED_AT_SKEW_MS = 24 * 60 * 60 * 1000;

/** `now` bounds `observedAt`: a record observed in the future would make every later one look stale. */
export function validateFeedRecord(input: unknown, now: number): FeedInputResult {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return reject('a record must be an object');
  const raw = input as Record<string, unknown>;
  const record: Partial<FeedRecord> = {};
  for (const [field, max] of [['personId', 128], ['name', MAX_LENGTH.name], ['company', MAX_LENGTH.company], ['title', MAX_LENGTH.title], ['location', MAX_LENGTH.location]] as const) {
    const v = text(raw[field], field, max);
    if (bad(v)) return reject(v.error);
    if (v !== undefined) record[field] = v;
  }
  const email = text(raw.email, 'email', MAX_LENGTH.email);
  if (bad(email)) return reject(email.error);
  if (email !== undefined) {
    const problem = emailProblem(email);
    if (problem) return reject(problem);
    record.email = email;
  }
  const li = text(raw.linkedin, 'linkedin', MAX_LENGTH.linkedin);
  if (bad(li)) return reject(li.error);
  if (li !== undefined) {
    const c = canonicalLinkedin(li);
    if (!c) return reject(`linkedin "${li}" is not a LinkedIn profile URL`);
    record.linkedin = c;
  }
  const status = text(raw.emailStatus, 'emailStatus', 32);
  if (bad(status)) return reject(status.error);
  if (status !== undefined) {
    // providers spell them Valid, CATCH-ALL, best_guess: one status whatever the case and separator
    const known = status.toLowerCase().replace(/[\s_]+/g, '-');
    if (!EMAIL_STATUS.has(known)) return reject(`emailStatus must be valid, catch-all or best-guess`);
    record.emailStatus = known as FeedRecord['emailStatus'];
  }
  const started = text(raw.jobStartedAt, 'jobStartedAt', 64);
  if (bad(started)) return reject(started.error);
  if (started !== undefined) {
    const t = parseStartDate(started);
    if (t === undefined) return reject(`jobStartedAt must be ${START_RULE}`);
    record.jobStartedAt = t;
  }
  const observed = text(raw.observedAt, 'observedAt', 64);
  if (bad(observed)) return reject(observed.error);
  if (observed !== undefined) {
    // to the nanosecond: two observations of one millisecond keep their order (clock.ts ExactTime)
    const t = parseExactTimestamp(observed);
    if (t === undefined) return reject(`observedAt must be ${TIMESTAMP_RULE}`);
    if (t.ms > now + OBSERVED_AT_SKEW_MS) return reject(`observedAt "${observed}" is in the future`);
    record.observedAt = t.ms;
    if (t.nsBefore) record.observedNsBefore = t.nsBefore;
  }
  const multi = raw.hasMultipleJobs;
  if (multi !== undefined && multi !== null && multi !== '') {
    // true/false in any case, or 1/0 — as JSON values or as text (CSV cells arrive as text)
    const m = typeof multi === 'string' ? multi.trim().toLowerCase() : multi;
    if (m === true || m === 'true' || m === '1' || m === 1) record.hasMultipleJobs = true;
    else if (m === false || m === 'false' || m === '0' || m === 0) record.hasMultipleJobs = false;
    else return reject('hasMultipleJobs must be true or false');
  }
  if (!record.name || !record.company) {
    const missing = [!record.name && 'name', !record.company && 'company'].filter(Boolean).join(' and ');
    return reject(`${missing} ${missing.includes(' and ') ? 'are' : 'is'} required (a record must say who the person is and where they work)`);
  }
  const placeholder = placeholderProblem(record.name, 'name') ?? placeholderProblem(record.company, 'company');
  if (placeholder) return reject(placeholder);
  return { ok: true, record: record as FeedRecord };
}
