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

/** One thing wrong with a submitted contact: the field it is about, and why. */
export interface ContactProblem {
  path: string;
  message: string;
}

/** A contact that cannot be stored has every problem named, and `reason` says them all in one line (a rejected row's reason). */
export type InputResult = { ok: true; draft: ContactDraft } | { ok: false; reason: string; problems: ContactProblem[] };

const TOP_LEVEL = new Set(['name', 'company', 'title', 'location', 'email', 'contactInfo', 'linkedin', 'referenceId']);
const CONTACT_INFO = new Set(['email', 'emailStatus']);
/** How many unknown fields of one contact are named; the others are counted. */
const MAX_UNKNOWN_NAMED = 5;

const rejected = (problems: ContactProblem[]): InputResult => ({ ok: false, reason: problems.map((p) => p.message).join('; '), problems });

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
 * service) but must contain something; other fields are trimmed, empty strings are absent. Every
 * field is checked, so that a contact with several problems has them all named at once.
 */
export function validateContact(input: unknown): InputResult {
  if (!isJsonObject(input)) return rejected([{ path: '', message: 'a contact must be a JSON object' }]);
  const raw = input as Record<string, unknown>;
  const problems: ContactProblem[] = [];
  const problem = (path: string, message: string) => {
    problems.push({ path, message });
  };
  // unknown fields: the first few, each cut short, and how many more (a contact of thousands of long
  // keys would otherwise get an answer, or a rejected row a reason, many times its own size)
  const unknown = Object.keys(raw).filter((key) => !TOP_LEVEL.has(key));
  for (const key of unknown.slice(0, MAX_UNKNOWN_NAMED)) problem(key.slice(0, 100), `unknown field "${key.slice(0, 100)}"`);
  if (unknown.length > MAX_UNKNOWN_NAMED) problem('', `and ${unknown.length - MAX_UNKNOWN_NAMED} more unknown fields`);

  const draft: Partial<ContactDraft> = {};
  for (const field of ['name', 'company'] as const) {
    const v = raw[field];
    if (v === undefined || v === null || (typeof v === 'string' && !v.trim())) problem(field, `${field} is required`);
    else if (typeof v !== 'string') problem(field, `${field} must be a string`);
    else {
      const wrong = textProblem(v, field, MAX_LENGTH[field]) ?? placeholderProblem(v, field);
      if (wrong) problem(field, wrong);
      else draft[field] = v;
    }
  }
  for (const field of ['title', 'location'] as const) {
    const v = optionalText(raw[field], field, MAX_LENGTH[field]);
    if (isError(v)) problem(field, v.error);
    else if (v !== undefined) draft[field] = v;
  }

  // the e-mail comes as `email` or as `contactInfo.email` (the shape GET answers); both must agree
  let email: string | undefined;
  let emailPath = 'email';
  const top = optionalText(raw.email, 'email', MAX_LENGTH.email);
  if (isError(top)) problem('email', top.error);
  else email = top;
  if (raw.contactInfo !== undefined && raw.contactInfo !== null) {
    const info = raw.contactInfo;
    if (!isJsonObject(info)) problem('contactInfo', 'contactInfo must be an object');
    else {
      const unknownInfo = Object.keys(info).filter((key) => !CONTACT_INFO.has(key));
      for (const key of unknownInfo.slice(0, MAX_UNKNOWN_NAMED)) problem(`contactInfo.${key.slice(0, 100)}`, `unknown field "contactInfo.${key.slice(0, 100)}"`);
      if (unknownInfo.length > MAX_UNKNOWN_NAMED) problem('contactInfo', `and ${unknownInfo.length - MAX_UNKNOWN_NAMED} more unknown fields`);
      const nested = optionalText(info.email, 'contactInfo.email', MAX_LENGTH.email);
      if (isError(nested)) problem('contactInfo.email', nested.error);
      else if (nested !== undefined && email !== undefined && emailKey(nested) !== emailKey(email)) problem('contactInfo.email', 'email and contactInfo.email differ');
      else if (email === undefined && nested !== undefined) [email, emailPath] = [nested, 'contactInfo.email'];
      // A contact read back (GET) carries contactInfo.emailStatus; null is "not known" and may be sent
      // back, a value is the feed's to set (SPEC §4 table).
      if (info.emailStatus !== undefined && info.emailStatus !== null) problem('contactInfo.emailStatus', 'contactInfo.emailStatus is set by the person-data feed, not by an import; leave it out or send null');
    }
  }
  if (email !== undefined) {
    const wrong = emailProblem(email);
    if (wrong) problem(emailPath, wrong);
    else draft.email = email;
  }

  const linkedin = optionalText(raw.linkedin, 'linkedin', MAX_LENGTH.linkedin);
  if (isError(linkedin)) problem('linkedin', linkedin.error);
  else if (linkedin !== undefined) {
    const canonical = canonicalLinkedin(linkedin);
    if (!canonical) problem('linkedin', `linkedin "${linkedin}" is not a LinkedIn profile URL (https://www.linkedin.com/in/<name>)`);
    else draft.linkedin = canonical;
  }

  const referenceId = referenceIdOf(raw.referenceId);
  if (isError(referenceId)) problem('referenceId', referenceId.error);
  else if (referenceId !== undefined) draft.referenceId = referenceId;

  if (problems.length) return rejected(problems);
  const level = titleLevel(draft.title);
  const domain = titleDomain(draft.title);
  if (level) draft.titleLevel = level;
  if (domain) draft.titleDomain = domain;
  return { ok: true, draft: draft as ContactDraft };
}

/** A referenceId as stored: a string or a whole number kept exactly, trimmed, in NFC, with no invisible character. */
function referenceIdOf(value: unknown): string | undefined | { error: string } {
  let ref = value;
  const digits = exactIntegerText(ref) ?? (typeof ref === 'number' && Number.isInteger(ref) && !Number.isSafeInteger(ref) ? String(ref) : undefined);
  if (digits !== undefined) return { error: `referenceId ${digits} is a whole number too large to be kept exactly as a JSON number (beyond ±(2^53−1) = ±9007199254740991); send it as a string ("${digits}")` };
  if (typeof ref === 'number' && Number.isSafeInteger(ref)) ref = String(ref);
  else if (ref !== undefined && ref !== null && typeof ref !== 'string') return { error: 'referenceId must be a string or a whole number' };
  // in one Unicode form (NFC): "Müller" typed on Windows (ü) and saved on a Mac (u + ¨) is one id
  // to the eye and must be one to the duplicate check and the filter (a tester's case: both imported)
  const referenceId = optionalText(typeof ref === 'string' ? ref.normalize('NFC') : ref, 'referenceId', MAX_LENGTH.referenceId);
  if (isError(referenceId) || referenceId === undefined) return referenceId;
  // the duplicate check compares ids as text: an invisible character would let one id pass for another
  const invisible = invisibleProblem(referenceId, 'referenceId');
  return invisible ? { error: invisible } : referenceId;
}
