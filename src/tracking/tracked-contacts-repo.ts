import type { Db } from '../storage/db.ts';
import { toContact, type ContactRow } from '../ledger/contacts-repo.ts';
import { emailKeyIs, emailKeySql } from '../ledger/contacts-list-repo.ts';
import type { Contact } from '../ledger/model.ts';
import { emailKey, storedEmailKey } from '../normalize.ts';

export type TrackedContactsRepo = ReturnType<typeof createTrackedContactsRepo>;

/** A contact with its stored name and company keys (saves normalizing them again) and how it was matched. */
export type TrackedContact = Contact & {
  nameKey?: string | null;
  companyKey?: string | null;
  matchedBy?: MatchedBy | 'ambiguous' | null;
  /** When the facts it shows were observed, at least (migration 0045); null when not known. */
  factsObservedAt?: number | null;
};

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
  /** When the facts it shows now were observed: the time of the person they came from (ms). */
  factsObservedAt: number | null;
}

/** Which key matched a contact to its person (SPEC §5 order; migration 0015). */
export type MatchedBy = 'linkedin' | 'email' | 'name';

/** A match being made: the person, and by which key. */
export interface MatchTo {
  personId: string;
  by: MatchedBy;
}

/** The columns change tracking may set (TrackedFields), as named parameters. */
const SET_TRACKED = `company = @company, company_key = @companyKey, title = @title, title_level = @titleLevel, title_domain = @titleDomain,
  location = @location, email = @email, email_key = @emailKey, email_status = @emailStatus, has_multiple_jobs = @hasMultipleJobs, job_started_at = @jobStartedAt,
  last_job_changed_at = @lastJobChangedAt, last_info_changed_at = @lastInfoChangedAt, facts_observed_at = @factsObservedAt, updated_at = @updatedAt`;

/**
 * Contacts of a ledger that is not being deleted: a deleted ledger is hidden at once and purged in
 * the background (src/ledger/ledgers-repo.ts), and meanwhile a feed neither changes its contacts
 * nor counts them — what a feed reports adds up to what the API can show. One primary-key look-up
 * for each contact found.
 */
const LIVE = 'NOT EXISTS (SELECT 1 FROM ledgers l WHERE l.id = c.ledger_id AND l.deleted_at IS NOT NULL)';

/**
 * A contact unmatched from a person (`@personId`) keeps what it shows, observed as late as that
 * person at least (migration 0045): their time, when later than the one stored — the person may
 * have been observed again since the contact was last written (a reviewer's case: it then took a
 * namesake's facts observed in between), and contacts matched before 0045 have none.
 */
const FACTS_KEPT = `facts_observed_at = max(coalesce(facts_observed_at, 0), coalesce((SELECT observed_at FROM people WHERE seq = CAST(@personId AS INTEGER)), 0))`;

/**
 * How a contact matched by name + company alone is left when a namesake comes: `ambiguous` when its
 * address may be what a match brought (an e-mail change was ever recorded for it), so the address
 * does not match it again; plainly unmatched (NULL) when the address is the one it was imported
 * with, so the person it names is found by it later, as an import of the contact would find them.
 */
const unmatchedBy = (t: string) =>
  `CASE WHEN ${t}.email IS NOT NULL AND NOT EXISTS (SELECT 1 FROM changes ch WHERE ch.contact_id = ${t}.id AND ch.type = 'info' AND ch.field = 'email') THEN NULL ELSE 'ambiguous' END`;

/** Contacts as change tracking reads and writes them: by person, by matching key, tracked fields. */
export function createTrackedContactsRepo(db: Db) {
  const q = {
    byPerson: db.raw.prepare<[string], ContactRow>(`SELECT * FROM contacts c WHERE c.person_id = ? AND ${LIVE}`),
    unmatchedByLinkedin: db.raw.prepare<[string], ContactRow>(`SELECT * FROM contacts c WHERE c.linkedin = ? AND c.person_id IS NULL AND ${LIVE}`),
    // Unmatched (not as ambiguous: its address may be the one its first match brought), or matched
    // by name + company alone to another person — the e-mail comes first (SPEC §5), unless the
    // address is that person's too (then it may be what that match brought).
    matchOf: db.raw.prepare<[string], { person_id: string | null; facts_observed_at: number | null }>('SELECT person_id, facts_observed_at FROM contacts WHERE id = ?'),
    personsByLinkedin: db.raw.prepare<[string, number], string>(`SELECT DISTINCT c.person_id FROM contacts c WHERE c.linkedin = ? AND c.person_id IS NOT NULL AND ${LIVE} LIMIT ?`).pluck(),
    personsByEmail: db.raw.prepare<[string, number], string>(`SELECT DISTINCT c.person_id FROM contacts c WHERE ${emailKeyIs('?', 'c.')} AND c.person_id IS NOT NULL AND ${LIVE} LIMIT ?`).pluck(),
    matchableByEmail: db.raw.prepare<{ emailKey: string; personId: string }, ContactRow>(
      `SELECT * FROM contacts c WHERE ${emailKeyIs('@emailKey', 'c.')} AND c.linkedin IS NULL AND (
         (c.person_id IS NULL AND c.matched_by IS NOT 'ambiguous')
         OR (c.matched_by = 'name' AND c.person_id <> @personId
             AND NOT EXISTS (SELECT 1 FROM people o WHERE o.seq = CAST(c.person_id AS INTEGER) AND ${emailKeySql('o.')} = ${emailKeySql('c.')}))) AND ${LIVE}`,
    ),
    unmatchedByKeys: db.raw.prepare<[string, string], ContactRow>(
      `SELECT * FROM contacts c WHERE c.name_key = ? AND c.company_key = ? AND c.person_id IS NULL AND c.linkedin IS NULL AND ${LIVE}`,
    ),
    unmatchByKeys: db.raw.prepare<{ now: number; personId: string }>(
      `UPDATE contacts SET person_id = NULL, matched_by = ${unmatchedBy('contacts')}, is_verified = 0, ${FACTS_KEPT}, updated_at = @now WHERE person_id = @personId AND matched_by = 'name'`,
    ),
    unmatchByEmail: db.raw.prepare<{ now: number; personId: string; emailKey: string }, ContactRow>(
      `UPDATE contacts AS c SET person_id = NULL, matched_by = ${unmatchedBy('c')}, is_verified = 0, ${FACTS_KEPT}, updated_at = @now
       WHERE c.person_id = @personId AND c.matched_by = 'email' AND ${emailKeyIs('@emailKey', 'c.')} AND ${LIVE} RETURNING *`,
    ),
    match: db.raw.prepare<[string, MatchedBy, number, number, string]>('UPDATE contacts SET person_id = ?, matched_by = ?, is_verified = 1, facts_observed_at = ?, updated_at = ? WHERE id = ?'),
    movePerson: db.raw.prepare<[string, number, string]>('UPDATE contacts SET person_id = ?, updated_at = ? WHERE person_id = ?'),
    unmatchPerson: db.raw.prepare<{ now: number; personId: string }>(
      `UPDATE contacts SET person_id = NULL, matched_by = ${unmatchedBy('contacts')}, is_verified = 0, ${FACTS_KEPT}, updated_at = @now WHERE person_id = @personId`,
    ),
    countOfPerson: db.raw.prepare<[string], number>('SELECT count(*) FROM contacts c WHERE c.person_id = ?').pluck(),
    update: db.raw.prepare(`UPDATE contacts SET ${SET_TRACKED} WHERE id = @id`),
    matchAndUpdate: db.raw.prepare(`UPDATE contacts SET person_id = @personId, matched_by = @matchedBy, is_verified = 1, ${SET_TRACKED} WHERE id = @id`),
  };
  const all = (rows: ContactRow[]): TrackedContact[] =>
    rows.map((r) => {
      const row = r as ContactRow & { name_key: string | null; company_key: string | null; matched_by: TrackedContact['matchedBy']; facts_observed_at: number | null };
      return { ...toContact(r), nameKey: row.name_key, companyKey: row.company_key, matchedBy: row.matched_by, factsObservedAt: row.facts_observed_at };
    });
  return {
    listOfPerson: (personId: string) => all(q.byPerson.all(personId)),
    listUnmatchedByLinkedin: (linkedin: string) => all(q.unmatchedByLinkedin.all(linkedin)),
    /** Contacts the person with this address may take by it: unmatched, or matched to another person by name + company alone. */
    listMatchableByEmail: (email: string, personId: string) => all(q.matchableByEmail.all({ emailKey: emailKey(email), personId })),
    /** A contact's match as stored now: its person (people.seq as text) and when its facts were observed (nulls when none). */
    matchOf: (contactId: string): { personId: string | null; factsObservedAt: number | null } => {
      const r = q.matchOf.get(contactId);
      return { personId: r?.person_id ?? null, factsObservedAt: r?.facts_observed_at ?? null };
    },
    listUnmatchedByKeys: (nameKey: string, companyKey: string) => all(q.unmatchedByKeys.all(nameKey, companyKey)),
    /**
     * The people (their seqs as text) followed by contacts that show this LinkedIn URL (canonical)
     * or this e-mail address, at most `max`, in ledgers not being deleted: a contact keeps the URL it was imported with when its
     * person moves to another profile, and an access or erasure request names people by the keys
     * their contacts show (people-service.ts).
     */
    personsShowing: (k: { linkedin?: string; email?: string }, max: number): string[] => [
      ...(k.linkedin === undefined ? [] : q.personsByLinkedin.all(k.linkedin, max)),
      ...(k.email === undefined ? [] : q.personsByEmail.all(emailKey(k.email), max)),
    ],
    /** Matches a contact whose facts are the person's already: observed at `factsObservedAt` (their time). */
    markMatched: (contactId: string, to: MatchTo, factsObservedAt: number, now: number): void => void q.match.run(to.personId, to.by, factsObservedAt, now, contactId),
    /** The contacts matched to one person follow another, into whom that one was merged (matched as they were). */
    movePerson: (fromId: string, toId: string, now: number): void => void q.movePerson.run(toId, now, fromId),
    /**
     * Undoes the person's matches made by name + company (another person has the same keys now):
     * those contacts are unmatched, no longer verified, and matched again only by name + company
     * once exactly one person fits. Returns how many.
     */
    unmatchByKeys: (personId: string, now: number): number => q.unmatchByKeys.run({ now, personId }).changes,
    /** How many contacts are matched to the person (those of ledgers being deleted too). */
    countOfPerson: (personId: string): number => q.countOfPerson.get(personId)!,
    /**
     * Unmatches every contact of a person the store forgets (people-service.ts): no longer
     * verified, their fields as they are. Returns how many.
     */
    unmatchPerson: (personId: string, now: number): number => q.unmatchPerson.run({ now, personId }).changes,
    /**
     * Undoes the person's matches made by this address (another person has it too now: e-mail
     * matches "when exactly one person has it"), as unmatchByKeys does for namesakes. Returns the
     * contacts unmatched, as they are now.
     */
    unmatchByEmail: (personId: string, email: string, now: number): TrackedContact[] => all(q.unmatchByEmail.all({ now, personId, emailKey: emailKey(email) })),
    /** Stores the tracked fields; with `matchTo`, also matches the contact to that person (one statement instead of two). */
    updateTracked: (contactId: string, f: TrackedFields, now: number, matchTo?: MatchTo): void => {
      const params = { ...f, emailKey: storedEmailKey(f.email), hasMultipleJobs: f.hasMultipleJobs === null ? null : f.hasMultipleJobs ? 1 : 0, updatedAt: now, id: contactId };
      if (matchTo === undefined) q.update.run(params);
      else q.matchAndUpdate.run({ ...params, personId: matchTo.personId, matchedBy: matchTo.by });
    },
  };
}
