import type { Clock } from '../clock.ts';
import { invalid } from '../errors.ts';
import type { Audit } from '../identity/audit.ts';
import type { Caller } from '../identity/model.ts';
import { canonicalLinkedin, companyKey, linkedinSlug, nameKey } from '../normalize.ts';
import type { Db } from '../storage/db.ts';
import type { Person } from './model.ts';
import type { PeopleRepo } from './people-repo.ts';
import type { TrackedContactsRepo } from './tracked-contacts-repo.ts';

/** How a person is named in an access or erasure request: any of their keys, name and company together. */
export interface PersonKeys {
  personId?: string;
  linkedin?: string;
  email?: string;
  name?: string;
  company?: string;
}

/**
 * The most people one request finds or forgets. An erasure names one person, who may be known
 * several times (a second LinkedIn profile, an address several people share); a crowd of namesakes
 * found by name + company alone is refused instead of forgotten in one long transaction (D2).
 */
export const PEOPLE_MAX = 100;

/** A stored person as an access request shows them, with how many contacts are matched to them. */
export interface StoredPerson {
  person: Person;
  contacts: number;
}

/**
 * The people store (installation-wide, what feeds brought) answering for one person: what it holds
 * about them (an access request) and forgetting them (an erasure request), for superusers
 * (docs/operations.md, Erasure requests). Contacts are the organizations' own data and stay as
 * they are; those matched to a forgotten person are unmatched.
 */
export function createPeopleService(d: { db: Db; clock: Clock; people: PeopleRepo; contacts: TrackedContactsRepo; audit: Audit }) {
  function storeKeys(k: PersonKeys) {
    let slug: string | undefined;
    if (k.linkedin !== undefined) {
      const canonical = canonicalLinkedin(k.linkedin);
      if (canonical === undefined) throw invalid(`linkedin: "${k.linkedin.slice(0, 200)}" is not a LinkedIn profile URL`, [{ path: 'linkedin', message: 'not a LinkedIn profile URL' }]);
      slug = linkedinSlug(canonical);
    }
    return {
      externalId: k.personId,
      linkedinSlug: slug,
      email: k.email,
      nameKey: k.name === undefined ? undefined : nameKey(k.name),
      companyKey: k.company === undefined ? undefined : companyKey(k.company),
    };
  }

  function holders(keys: ReturnType<typeof storeKeys>): Person[] {
    const found = d.people.holdersOf(keys, PEOPLE_MAX + 1);
    if (found.length > PEOPLE_MAX) {
      throw invalid(`More than ${PEOPLE_MAX} people fit these keys; name the person by a key of their own (personId, linkedin or email) rather than by name and company alone.`);
    }
    return found;
  }

  return {
    /** Everyone the store knows by any of the keys, in the order they were first stored. */
    find: (k: PersonKeys): StoredPerson[] => holders(storeKeys(k)).map((person) => ({ person, contacts: d.contacts.countOfPerson(person.id) })),

    /**
     * Forgets everyone the store knows by any of the keys, in one transaction: their rows go (a
     * seq is never given again), the contacts matched to them are unmatched. Audited with the
     * kinds of keys and the counts, never the values.
     */
    async forget(by: Caller, k: PersonKeys): Promise<{ peopleForgotten: number; contactsUnmatched: number }> {
      const keys = storeKeys(k); // a bad URL is refused before the write lock is asked for
      return d.db.txSoon(() => {
        const found = holders(keys);
        const now = d.clock.now();
        let contactsUnmatched = 0;
        for (const p of found) {
          contactsUnmatched += d.contacts.unmatchPerson(p.id, now);
          d.people.deletePerson(p.seq);
        }
        const named = (Object.keys(k) as (keyof PersonKeys)[]).filter((key) => k[key] !== undefined);
        d.audit.record(by, { orgId: null, action: 'people.forgotten', data: { keys: named, peopleForgotten: found.length, contactsUnmatched } });
        return { peopleForgotten: found.length, contactsUnmatched };
      });
    },
  };
}

export type PeopleService = ReturnType<typeof createPeopleService>;
