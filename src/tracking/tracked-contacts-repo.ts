import type { Db } from '../storage/db.ts';
import { toContact, type ContactRow } from '../ledger/contacts-repo.ts';
import type { Contact } from '../ledger/model.ts';

export type TrackedContactsRepo = ReturnType<typeof createTrackedContactsRepo>;

/** A contact with its stored company key (saves normalizing its company again). */
export type TrackedContact = Contact & { companyKey?: string | null };

/** The fields change tracking may set on a contact (never name, importCompany, importTitle). */
export interface TrackedFields {
  company: string;
  companyKey: string;
  title: string | null;
  titleLevel: string | null;
  titleDomain: string | null;
  location: string | null;
  email: string | null;
  emailStatus: string | null;
  hasMultipleJobs: boolean | null;
  jobStartedAt: number | null;
  lastJobChangedAt: number | null;
  lastInfoChangedAt: number | null;
}

/** The columns change tracking may set (TrackedFields), as named parameters. */
const SET_TRACKED = `company = @company, company_key = @companyKey, title = @title, title_level = @titleLevel, title_domain = @titleDomain,
  location = @location, email = @email, email_status = @emailStatus, has_multiple_jobs = @hasMultipleJobs, job_started_at = @jobStartedAt,
  last_job_changed_at = @lastJobChangedAt, last_info_changed_at = @lastInfoChangedAt, updated_at = @updatedAt`;

/** Contacts as change tracking reads and writes them: by person, by matching key, tracked fields. */
export function createTrackedContactsRepo(db: Db) {
  const q = {
    byPerson: db.raw.prepare<[string], ContactRow>('SELECT * FROM contacts WHERE person_id = ?'),
    unmatchedByLinkedin: db.raw.prepare<[string], ContactRow>('SELECT * FROM contacts WHERE linkedin = ? AND person_id IS NULL'),
    unmatchedByEmail: db.raw.prepare<[string], ContactRow>('SELECT * FROM contacts WHERE email = ? AND person_id IS NULL AND linkedin IS NULL'),
    unmatchedByKeys: db.raw.prepare<[string, string], ContactRow>(
      'SELECT * FROM contacts WHERE name_key = ? AND company_key = ? AND person_id IS NULL AND linkedin IS NULL',
    ),
    match: db.raw.prepare<[string, number, string]>('UPDATE contacts SET person_id = ?, is_verified = 1, updated_at = ? WHERE id = ?'),
    update: db.raw.prepare(`UPDATE contacts SET ${SET_TRACKED} WHERE id = @id`),
    matchAndUpdate: db.raw.prepare(`UPDATE contacts SET person_id = @personId, is_verified = 1, ${SET_TRACKED} WHERE id = @id`),
  };
  const all = (rows: ContactRow[]): TrackedContact[] => rows.map((r) => ({ ...toContact(r), companyKey: (r as ContactRow & { company_key: string | null }).company_key }));
  return {
    listOfPerson: (personId: string) => all(q.byPerson.all(personId)),
    listUnmatchedByLinkedin: (linkedin: string) => all(q.unmatchedByLinkedin.all(linkedin)),
    listUnmatchedByEmail: (email: string) => all(q.unmatchedByEmail.all(email)),
    listUnmatchedByKeys: (nameKey: string, companyKey: string) => all(q.unmatchedByKeys.all(nameKey, companyKey)),
    markMatched: (contactId: string, personId: string, now: number): void => void q.match.run(personId, now, contactId),
    /** Stores the tracked fields; with `matchTo`, also matches the contact to that person (one statement instead of two). */
    updateTracked: (contactId: string, f: TrackedFields, now: number, matchTo?: string): void => {
      const params = { ...f, hasMultipleJobs: f.hasMultipleJobs === null ? null : f.hasMultipleJobs ? 1 : 0, updatedAt: now, id: contactId };
      if (matchTo === undefined) q.update.run(params);
      else q.matchAndUpdate.run({ ...params, personId: matchTo });
    },
  };
}
