import type { Clock } from '../clock.ts';
import { badRequest, conflict, invalid } from '../errors.ts';
import type { Audit } from '../identity/audit.ts';
import type { Caller } from '../identity/model.ts';
import { canonicalLinkedin, companyKey, linkedinSlug, nameKey } from '../normalize.ts';
import type { Db } from '../storage/db.ts';
import type { FeedsRepo } from './feeds-repo.ts';
import type { Person } from './model.ts';
import type { PeopleRepo } from './people-repo.ts';
import type { PersonIds } from './person-ids.ts';
import type { TrackedContactsRepo } from './tracked-contacts-repo.ts';

/** How a person is named in an access or erasure request: any of their keys, name and company together. */
export interface PersonKeys {
  /** The store's own id of a person (StoredPerson's), to name one of several a shared key finds. */
  id?: string;
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

/** The kinds of keys a request named, for the audit log (never their values). */
const keyKinds = (k: PersonKeys) => (Object.keys(k) as (keyof PersonKeys)[]).filter((key) => k[key] !== undefined);

/** A stored person as an access request shows them, with how many contacts are matched to them. */
export interface StoredPerson {
  /** Their public id (person-ids.ts), which names them in a request. */
  id: string;
  person: Person;
  contacts: number;
  /** The further personIds they are known by (a record with one and their LinkedIn URL). */
  otherPersonIds: string[];
}

/**
 * The people store (installation-wide, what feeds brought) answering for one person: what it holds
 * about them (an access request) and forgetting them (an erasure request), for superusers
 * (docs/operations.md, Erasure requests). Contacts are the organizations' own data and stay as
 * they are; those matched to a forgotten person are unmatched.
 */
export function createPeopleService(d: {
  db: Db;
  clock: Clock;
  people: PeopleRepo;
  contacts: TrackedContactsRepo;
  feeds: FeedsRepo;
  audit: Audit;
  personIds: PersonIds;
  /** Feeds not yet jobs: bodies arriving through the API, files waiting in the inbox (names, at most `max`). */
  arriving: { uploads(): number; inbox(max: number): string[] };
}) {
  function storeKeys(k: PersonKeys) {
    let slug: string | undefined;
    if (k.linkedin !== undefined) {
      const canonical = canonicalLinkedin(k.linkedin);
      if (canonical === undefined) throw invalid(`linkedin: "${k.linkedin.slice(0, 200)}" is not a LinkedIn profile URL`, [{ path: 'linkedin', message: 'not a LinkedIn profile URL' }]);
      slug = linkedinSlug(canonical);
    }
    return {
      seq: k.id === undefined ? undefined : seqOf(k.id),
      externalId: k.personId,
      linkedinSlug: slug,
      email: k.email,
      nameKey: k.name === undefined ? undefined : nameKey(k.name),
      companyKey: k.company === undefined ? undefined : companyKey(k.company),
    };
  }
  type StoreKeys = ReturnType<typeof storeKeys>;

  function seqOf(id: string): number {
    const seq = d.personIds.decode(id);
    if (seq === undefined) throw badRequest('invalid_parameter', `id: "${id.slice(0, 100)}" is not a stored person's id (GET /api/ledger/v1/people answers it)`, [{ path: 'id', message: "not a stored person's id" }]);
    return seq;
  }

  /**
   * The people a key names, in the store and through the contacts that show it: a contact keeps
   * the LinkedIn URL and the address it was imported with when the person it follows moves on, and
   * a request with the keys a contact shows found nobody while that contact still followed them (a
   * tester's case: "0 forgotten", the person kept).
   */
  const holdersOf = (keys: Partial<StoreKeys>, max: number): Person[] => {
    const linkedin = keys.linkedinSlug === undefined ? undefined : `https://www.linkedin.com/in/${keys.linkedinSlug}`;
    const seqs = linkedin === undefined && keys.email === undefined ? [] : d.contacts.personsShowing({ linkedin, email: keys.email }, max).map(Number);
    return d.people.holdersOf({ ...keys, seqs }, max);
  };

  const tooMany = (what: string) => `More than ${PEOPLE_MAX} people are known by ${what}; name the person by a key of their own (their id, personId or LinkedIn URL).`;

  function holders(keys: Partial<StoreKeys>): Person[] {
    const found = holdersOf(keys, PEOPLE_MAX + 1);
    // 409, as a forget naming several: the request is well formed, the store holds too many for it (it was a 422)
    if (found.length > PEOPLE_MAX) throw conflict('too_many_people', tooMany('these keys'));
    return found;
  }

  /**
   * Whom a request to forget names: a key of their own (id, personId, LinkedIn) names one person;
   * an address, a name + company, or a LinkedIn URL (through contacts that show it) that several people have names none of them — forgetting them
   * all would erase others (a reviewer's case: two Ann Lees at Acme) —, so it is refused with how
   * to name the one meant.
   */
  function toForget(keys: StoreKeys): Person[] {
    const weak: [string, Partial<StoreKeys>][] = [];
    // a URL the store gives one person, but contacts may show it for one who moved on to another
    // profile while a later one took it (a released vanity URL): two people, forgotten both (a reviewer's case)
    if (keys.linkedinSlug !== undefined) weak.push(['this LinkedIn URL', { linkedinSlug: keys.linkedinSlug }]);
    if (keys.email !== undefined) weak.push(['this e-mail address', { email: keys.email }]);
    if (keys.nameKey !== undefined) weak.push(['this name and company', { nameKey: keys.nameKey, companyKey: keys.companyKey }]);
    for (const [what, k] of weak) {
      const n = holdersOf(k, PEOPLE_MAX + 1).length;
      // past PEOPLE_MAX the GET it would point to refuses too (a tester's case): a key of their own, then
      if (n > 1) throw conflict('ambiguous_person', n > PEOPLE_MAX ? tooMany(what) : `${n} people are known by ${what}; see them with GET /api/ledger/v1/people and forget the one meant by its id.`);
    }
    return holders(keys);
  }

  return {
    /**
     * Everyone the store knows by any of the keys, in the order they were first stored. Who looked
     * is audited (`people.looked_up`: the kinds of keys and how many were found), as a forget is.
     */
    async find(by: Caller, k: PersonKeys): Promise<StoredPerson[]> {
      const found = holders(storeKeys(k)).map((person) => ({ id: d.personIds.encode(person.seq), person, contacts: d.contacts.countOfPerson(person.id), otherPersonIds: d.people.otherIdsOf(person.seq) }));
      await d.db.txSoon(() => d.audit.record(by, { orgId: null, action: 'people.looked_up', data: { keys: keyKinds(k), found: found.length } }));
      return found;
    },

    /**
     * Forgets everyone the store knows by any of the keys, in one transaction: their rows go (a
     * seq is never given again), the contacts matched to them are unmatched. Audited with the
     * kinds of keys and the counts, never the values.
     */
    async forget(by: Caller, k: PersonKeys): Promise<{ peopleForgotten: number; contactsUnmatched: number }> {
      const keys = storeKeys(k); // a bad URL is refused before the write lock is asked for
      return d.db.txSoon(() => {
        // a feed received before this request and not yet applied could bring them straight back
        // (a reviewer's case: forgotten while a feed ran, back with their address when it ended)
        const waiting = [...d.feeds.unfinishedFeeds(3), ...d.arriving.inbox(3).map((name) => `inbox/${name}`)];
        const uploads = d.arriving.uploads();
        if (uploads) waiting.push(`${uploads} being received`);
        if (waiting.length) {
          throw conflict('feed_in_progress', `Feeds are still being applied or received (${waiting.join(', ')}); forget the person once they have ended, or a record of theirs in them brings the person back.`);
        }
        const found = toForget(keys);
        const now = d.clock.now();
        let contactsUnmatched = 0;
        for (const p of found) {
          contactsUnmatched += d.contacts.unmatchPerson(p.id, now);
          d.people.deletePerson(p.seq);
        }
        d.audit.record(by, { orgId: null, action: 'people.forgotten', data: { keys: keyKinds(k), peopleForgotten: found.length, contactsUnmatched } });
        return { peopleForgotten: found.length, contactsUnmatched };
      });
    },
  };
}

export type PeopleService = ReturnType<typeof createPeopleService>;
