import { exactIntegerText } from '../exact-json.ts';
import { canonicalLinkedin, emailKey, emailProblem, invisibleProblem, placeholderProblem, textProblem } from '../normalize.ts';
import { titleDomain, titleLevel, type TitleDomain, type TitleLevel } from '../title-rules.ts';

/**
 * Validation and canonicalization of one submitted contact (SPEC §4.1), shared by API batches and
 * CSV rows. Pure: it runs in the import runner and in the CSV worker thread. A bad row is not an
 * exception — it becomes a rejection with a reason and the rest of the import goes on.
 */

export const MAX_LENGTH = { name: 256, company: 256, title: 256, location: 256, referenceId: 128, email: 320, linkedin: 512 } as const;

/** A contact ready to be stored. */
export interface ContactDraft {
  name: string;
  company: string;
  title?: string;
  location?: string;
  email?: string;
  linkedin?: string;
  referenceId?: string;
  titleLevel?: TitleLevel;
  titleDomain?: TitleDomain;
}

export type InputResult = { ok: true; draft: ContactDraft } | { ok: false; reason: string };

const TOP_LEVEL = new Set(['name', 'company', 'title', 'location', 'email', 'contactInfo', 'linkedin', 'referenceId']);
const CONTACT_INFO = new Set(['email', 'emailStatus']);

const reject = (reason: string): InputResult => ({ ok: false, reason });

/** Trimmed text; '' and null are absent. A non-string is an error message. */
function optionalText(value: unknown, field: string, max: number): string | undefined | { error: string } {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return { error: `${field} must be a string` };
  const t = value.trim();
  if (!t) return undefined;
  const problem = textProblem(t, field, max);
  if (problem) return { error: problem };
  return t;
}

const isError = (v: unknown): v is { error: string } => typeof v === 'object' && v !== null;

/** A JSON object: not an array, nor a big integer kept as its digits (src/exact-json.ts). */
const isJsonObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && exactIntegerText(v) === undefined;

/**
 * Checks one contact object. `name` and `company` are kept verbatim (never modified by the
 * service) but must contain something; other fields are trimmed, empty strings are absent.
 */
export function validateContact(input: unknown): InputResult {
  if (!isJsonObject(input)) return reject('a contact must be a JSON object');
  const raw = input as Record<string, unknown>;
  for (const key of Object.keys(raw)) if (!TOP_LEVEL.has(key)) return reject(`unknown field "${key}"`);

  const draft: Partial<ContactDraft> = {};
  for (const field of ['name', 'company'] as const) {
    const v = raw[field];
    if (v === undefined || v === null || (typeof v === 'string' && !v.trim())) return reject(`${field} is required`);
    if (typeof v !== 'string') return reject(`${field} must be a string`);
    const problem = textProblem(v, field, MAX_LENGTH[field]) ?? placeholderProblem(v, field);
    if (problem) return reject(problem);
    draft[field] = v;
  }
  for (const field of ['title', 'location'] as const) {
    const v = optionalText(raw[field], field, MAX_LENGTH[field]);
    if (isError(v)) return reject(v.error);
    if (v !== undefined) draft[field] = v;
  }

  let email = optionalText(raw.email, 'email', MAX_LENGTH.email);
  if (isError(email)) return reject(email.error);
  if (raw.contactInfo !== undefined && raw.contactInfo !== null) {
    const info = raw.contactInfo;
    if (!isJsonObject(info)) return reject('contactInfo must be an object');
    for (const key of Object.keys(info)) if (!CONTACT_INFO.has(key)) return reject(`unknown field "contactInfo.${key}"`);
    const nested = optionalText((info as Record<string, unknown>).email, 'contactInfo.email', MAX_LENGTH.email);
    if (isError(nested)) return reject(nested.error);
    if (nested !== undefined && email !== undefined && emailKey(nested) !== emailKey(email)) return reject('email and contactInfo.email differ');
    // A contact read back (GET) carries contactInfo.emailStatus; null is "not known" and may be sent
    // back, a value is the feed's to set (SPEC §4 table).
    const status = (info as Record<string, unknown>).emailStatus;
    if (status !== undefined && status !== null) return reject('contactInfo.emailStatus is set by the person-data feed, not by an import; leave it out or send null');
    email ??= nested;
  }
  if (email !== undefined) {
    const problem = emailProblem(email);
    if (problem) return reject(problem);
    draft.email = email;
  }

  const linkedin = optionalText(raw.linkedin, 'linkedin', MAX_LENGTH.linkedin);
  if (isError(linkedin)) return reject(linkedin.error);
  if (linkedin !== undefined) {
    const canonical = canonicalLinkedin(linkedin);
    if (!canonical) return reject(`linkedin "${linkedin}" is not a LinkedIn profile URL (https://www.linkedin.com/in/<name>)`);
    draft.linkedin = canonical;
  }

  let ref = raw.referenceId;
  const digits = exactIntegerText(ref) ?? (typeof ref === 'number' && Number.isInteger(ref) && !Number.isSafeInteger(ref) ? String(ref) : undefined);
  if (digits !== undefined) return reject(`referenceId ${digits} is a whole number too large to be kept exactly as a JSON number (beyond ±(2^53−1) = ±9007199254740991); send it as a string ("${digits}")`);
  if (typeof ref === 'number' && Number.isSafeInteger(ref)) ref = String(ref);
  else if (ref !== undefined && ref !== null && typeof ref !== 'string') return reject('referenceId must be a string or a whole number');
  // in one Unicode form (NFC): "Müller" typed on Windows (ü) and saved on a Mac (u + ¨) is one id
  // to the eye and must be one to the duplicate check and the filter (a tester's case: both imported)
  const referenceId = optionalText(typeof ref === 'string' ? ref.normalize('NFC') : ref, 'referenceId', MAX_LENGTH.referenceId);
  if (isError(referenceId)) return reject(referenceId.error);
  if (referenceId !== undefined) {
    // the duplicate check compares ids as text: an invisible character would let one id pass for another
    const problem = invisibleProblem(referenceId, 'referenceId');
    if (problem) return reject(problem);
    draft.referenceId = referenceId;
  }

  const level = titleLevel(draft.title);
  const domain = titleDomain(draft.title);
  if (level) draft.titleLevel = level;
  if (domain) draft.titleDomain = domain;
  return { ok: true, draft: draft as ContactDraft };
}
