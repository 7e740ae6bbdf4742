import { hash } from 'node:crypto';
import { compareExactTimes, type Clock, type ExactTime } from '../clock.ts';
import { newId } from '../ids.ts';
import type { Contact } from '../ledger/model.ts';
import { companyKey, companyWordsKey, emailKey, linkedinSlug, nameKey, namesFit } from '../normalize.ts';
import { titleDomain, titleLevel } from '../title-rules.ts';
import type { ChangesRepo } from './changes-repo.ts';
import type { FeedListing } from './feed-listing.ts';
import { OBSERVED_AT_SKEW_MS } from './feed-input.ts';
import { INFO_FIELDS, zeroCounts, type Change, type FeedRecord, type Person, type TrackingCounts } from './model.ts';
import type { PeopleRepo } from './people-repo.ts';
import { utcDay, type FeedRun, type ReplaysRepo } from './replays-repo.ts';
import type { MatchedBy, TrackedContact, TrackedContactsRepo, TrackedFields } from './tracked-contacts-repo.ts';

/** Called for every change, inside the transaction that records it (the webhook outbox). */
export type ChangeListener = (change: Change, contact: Contact) => void;

export interface TrackerDeps {
  clock: Clock;
  people: PeopleRepo;
  changes: ChangesRepo;
  contacts: TrackedContactsRepo;
  /** The records feeds applied (migration 0043): a replay is found here before any matching. */
  replays: ReplaysRepo;
  /** Set later by the webhooks module. */
  listeners: ChangeListener[];
}

/** Fields compared for info changes, with how they are read from a contact and a person. */
type InfoField = (typeof INFO_FIELDS)[number];
/**
 * Free text: spelt with other spaces, in other case or with other punctuation, the same title or
 * place (not a change): "VP Sales", "VP, Sales" and "V.P. - Sales", "Vice-President", "Vice
 * President" and "Co-Founder", "Cofounder" (since the thirty-sixth session, testers' false info
 * changes; company keys join their words so too). A + # & @ % or * is no punctuation here: "C++
 * Developer" is not "C Developer", nor "R&D" "R D".
 */
const TEXT_FIELDS: ReadonlySet<InfoField> = new Set(['title', 'location']);
const foldText = (s: string) =>
  s
    .normalize('NFKC')
    .toLowerCase() // the root locale's ('und'), the same for every code point
    .replace(/(?:(?![&#@%*])[\s\p{P}])+/gu, ''); // spaces and punctuation: "V.P." is "VP", "Co-Founder" "Cofounder", "R & D" "R&D"
const sameText = (a: string, b: string) => foldText(a) === foldText(b);
/** Fields only a person record gives: a contact is imported without them. */
const NOT_IMPORTED: ReadonlySet<InfoField> = new Set(['emailStatus', 'hasMultipleJobs', 'jobStartedAt']);

const personValue = (p: Person, f: InfoField): unknown => p[f];
const contactValue = (c: Contact, f: InfoField): unknown => c[f];
const wire = (f: InfoField, v: unknown): unknown => (v !== null && (f === 'jobStartedAt') ? new Date(v as number).toISOString() : v);

export type Tracker = ReturnType<typeof createTracker>;

/** A contact's name key: stored with tracked contacts, worked out for one just imported. */
const contactNameKey = (c: Contact & { nameKey?: string | null }): string => c.nameKey ?? nameKey(c.name);

const PERSON_FIELDS = ['externalId', 'linkedinSlug', 'email', 'emailStatus', 'name', 'company', 'title', 'location', 'jobStartedAt', 'hasMultipleJobs', 'observedAt', 'observedNsBefore'] as const;
/** True when storing `next` would change nothing that matters (observedAt included). */
const samePerson = (p: Person, next: Omit<Person, 'seq' | 'id'>) => PERSON_FIELDS.every((f) => p[f] === next[f]);

/** When a record says it was observed (to the nanosecond), and when a person was last observed; a record without observedAt is `now`. */
const recordTime = (r: FeedRecord, now: number): ExactTime => (r.observedAt === undefined ? { ms: now, nsBefore: 0 } : { ms: r.observedAt, nsBefore: r.observedNsBefore === undefined ? 0 : r.observedNsBefore });
const personTime = (p: Person): ExactTime => ({ ms: p.observedAt, nsBefore: p.observedNsBefore });

/**
 * One person made of two whom a record joined (applyFresh: one known by LinkedIn or personId, the
 * other by the address alone), when the one merged away (`later`) was observed after the one
 * kept: the kept one's identity, the later one's facts — as a record of the later observation
 * would have given them to the kept one (what it lacks kept, a new job without a title or a start
 * has none) — and its time and the records seen at it.
 */
function joinedLater(kept: Person, later: Person, now: number): Omit<Person, 'seq' | 'id'> {
  const newJob = kept.companyKey !== later.companyKey;
  return {
    externalId: kept.externalId,
    linkedinSlug: kept.linkedinSlug,
    email: later.email ?? kept.email,
    // the same address (merged by it): its status as seen last
    emailStatus: later.emailStatus ?? kept.emailStatus,
    name: later.name,
    nameKey: later.nameKey,
    company: later.company,
    companyKey: later.companyKey,
    title: later.title ?? (newJob ? null : kept.title),
    location: later.location ?? kept.location,
    jobStartedAt: later.jobStartedAt ?? (newJob ? null : kept.jobStartedAt),
    hasMultipleJobs: later.hasMultipleJobs ?? kept.hasMultipleJobs,
    observedAt: later.observedAt,
    observedNsBefore: later.observedNsBefore,
    updatedAt: now,
    seenRecords: later.seenRecords,
  };
}
/**
 * When a person was last observed, as a record is compared with it: a time further ahead of `now`
 * than an observedAt may be when it arrives (OBSERVED_AT_SKEW_MS) is from this machine's clock
 * while it was ahead (a record without observedAt is observed "now"), or a provider's time at that
 * limit with this clock stepped back since. It is taken as a day before `now`: records of the last
 * day are newer, older ones stay stale. Else, the clock set right, every record about the person
 * was stale until the real time got there (a clock a year ahead froze them for a year); and as no
 * time at all, any old record rolled them back (a reviewer's case).
 */
const isAhead = (ms: number, now: number): boolean => ms > now + OBSERVED_AT_SKEW_MS;
const knownTime = (t: ExactTime, now: number): ExactTime => (isAhead(t.ms, now) ? { ms: now - OBSERVED_AT_SKEW_MS, nsBefore: null } : t);
/**
 * How recently a person's facts are known: their observation (knownTime), or `asOf` when later —
 * the time of a record applied to them just now, which says what they are then also when it
 * changed nothing and left their time as it was (a record without observedAt: now).
 */
const knownAsOf = (p: Person, now: number, asOf?: ExactTime): ExactTime => {
  const t = knownTime(personTime(p), now);
  return asOf !== undefined && compareExactTimes(asOf, t) > 0 ? asOf : t;
};
/** Two people's observations compared as records are with them (knownTime): < 0 `a` earlier, 0 the same time, > 0 later. */
const comparePeople = (a: Person, b: Person, now: number): number => compareExactTimes(knownTime(personTime(a), now), knownTime(personTime(b), now));

/**
 * The most record digests a person keeps (Person.seenRecords, 8 bytes each): past it, the oldest are
 * dropped first. A feed's later listings of the person (`repeated`) take at most half of it, so
 * that a person listed on many rows does not push out the records that were applied.
 */
export const RECORDS_SEEN_MAX = 64;
const DIGEST_BYTES = 8;

/**
 * What a record says, as 8 bytes: records that say the same (observedAt aside) have one digest —
 * also when spelt otherwise in what the tracker does not tell apart (a tester's case: the original
 * with its e-mail in capitals undid the correction): e-mail keys, company keys, and names, titles
 * and places in other case or spacing. The forms are those of migration 0031's time, when people
 * began to store digests (company keys with their words apart, text folded for case and spacing
 * only): a form changed since would make the digests stored before it name no record, and the
 * replay of a day's feed after its correction would flip contacts again (a reviewer's case).
 */
export const recordDigest = (r: FeedRecord): Buffer => digestOf(recordSays(r));
const digestOf = (says: string): Buffer => hash('sha256', says, 'buffer').subarray(0, DIGEST_BYTES);

/** What a record says (recordDigest), as the text both its digest and its replay key (replayKey) are made of. */
function recordSays(r: FeedRecord): string {
  // toLowerCase is the root locale's lowercasing ('und'), the same for every code point, ~14× faster
  const fold = (s: string | undefined) => (s === undefined ? null : s.normalize('NFKC').replace(/\s+/gu, ' ').trim().toLowerCase());
  const said = [r.personId, r.linkedin, r.email && emailKey(r.email), r.emailStatus, fold(r.name), companyWordsKey(r.company), fold(r.title), fold(r.location), r.jobStartedAt, r.hasMultipleJobs];
  return JSON.stringify(said);
}

/**
 * Where a record with an observation time is remembered once a feed applied it: that time's UTC
 * day, and 12 bytes of what the record says at that time to the nanosecond. Undefined for a record
 * without observedAt (observed "now": never a replay).
 */
function replayKey(r: FeedRecord, says: string): { day: number; key: Buffer } | undefined {
  if (r.observedAt === undefined) return undefined;
  return { day: utcDay(r.observedAt), key: hash('sha256', `${says}@${r.observedAt}-${r.observedNsBefore ?? 0}`, 'buffer').subarray(0, 12) };
}

function hasSeen(seen: Buffer | null, digest: Buffer): boolean {
  if (!seen) return false;
  for (let i = 0; i + DIGEST_BYTES <= seen.length; i += DIGEST_BYTES) if (seen.compare(digest, 0, DIGEST_BYTES, i, i + DIGEST_BYTES) === 0) return true;
  return false;
}

/** The digests of `a` and then those of `b` not in it, keeping the latest RECORDS_SEEN_MAX (two people joined). */
function seenBoth(a: Buffer | null, b: Buffer | null): Buffer | null {
  let seen = a;
  for (let i = 0; b && i + DIGEST_BYTES <= b.length; i += DIGEST_BYTES) seen = withSeen(seen, b.subarray(i, i + DIGEST_BYTES));
  return seen;
}

/** `seen` with `digest` added last (unless it is there), keeping the latest RECORDS_SEEN_MAX. */
const withSeen = (seen: Buffer | null, digest: Buffer): Buffer =>
  !seen ? Buffer.from(digest) : hasSeen(seen, digest) ? seen : Buffer.concat([seen.subarray(Math.max(0, seen.length - (RECORDS_SEEN_MAX - 1) * DIGEST_BYTES)), digest]);

/**
 * A person listed again in one feed at the same observation time (one row per job, a record
 * repeated): the first listing stands, and this one only fills in what the person lacks — a
 * personId, a LinkedIn URL, an e-mail and its status, a location, hasMultipleJobs, and, when it
 * names the same company, a title and start date (another company's title is another job's).
 * Undefined when it adds nothing (a `repeated` record). Such a record, replayed, adds nothing again.
 */
function fillIn(p: Person, r: FeedRecord): FeedRecord | undefined {
  const sameJob = companyKey(r.company) === p.companyKey;
  const gaps: Partial<FeedRecord> = {};
  if (p.externalId === null && r.personId) gaps.personId = r.personId;
  if (p.linkedinSlug === null && r.linkedin) gaps.linkedin = r.linkedin;
  if (p.email === null && r.email) Object.assign(gaps, { email: r.email }, r.emailStatus ? { emailStatus: r.emailStatus } : {});
  if (p.location === null && r.location) gaps.location = r.location;
  if (p.hasMultipleJobs === null && r.hasMultipleJobs !== undefined) gaps.hasMultipleJobs = r.hasMultipleJobs;
  if (sameJob && p.title === null && r.title) gaps.title = r.title;
  if (sameJob && p.jobStartedAt === null && r.jobStartedAt !== undefined) gaps.jobStartedAt = r.jobStartedAt;
  if (!Object.keys(gaps).length) return undefined;
  return { name: p.name, company: p.company, observedAt: p.observedAt, observedNsBefore: p.observedNsBefore, ...gaps };
}

/**
 * What an older record than the person's (stale) still says: who it is about. A personId or LinkedIn
 * URL the person lacks is theirs (the identity of the one the record was found for, not a state to
 * roll back to); the rest of the record is not applied. Undefined when it gives neither.
 */
function identityOf(p: Person, r: FeedRecord): FeedRecord | undefined {
  const ids: Partial<FeedRecord> = {};
  if (p.externalId === null && r.personId) ids.personId = r.personId;
  if (p.linkedinSlug === null && r.linkedin) ids.linkedin = r.linkedin;
  if (!Object.keys(ids).length) return undefined;
  return { name: p.name, company: p.company, observedAt: p.observedAt, observedNsBefore: p.observedNsBefore, ...ids };
}

/**
 * Whether the one person with a record's name + company is someone else by the keys each brings:
 * name + company is the weakest key, and a person known by a personId or LinkedIn profile (SPEC
 * §4.1: authoritative) is not found by it for a record that brings a key of its own (an e-mail
 * address, a personId or a LinkedIn profile the person does not have; the person's own ones found
 * them before), nor is a person known by such a key or an address for a record with a personId or
 * LinkedIn profile. They are two people who share a name and a company (thirty-sixth session, a
 * tester's case: a namesake's e-mail-only record taken for the LinkedIn-known person gave that
 * person her address, both contacts then followed the one person, and every record of either
 * flipped both contacts' companies). Two records known by addresses alone still meet by name +
 * company: an address changes at the same employer (an info change), a LinkedIn profile does not.
 */
function namesakeByKeys(p: Person, r: { personId?: string; email?: string }, slug: string | undefined): boolean {
  // an address both have is a key they share (it found nobody alone: more people have it)
  if (r.email && p.email !== null && emailKey(r.email) === emailKey(p.email)) return false;
  const recordIdentified = !!r.personId || !!slug;
  const personIdentified = p.externalId !== null || p.linkedinSlug !== null;
  return (personIdentified && (recordIdentified || !!r.email)) || (recordIdentified && p.email !== null);
}

/**
 * Matching and change detection (SPEC §5). Every method runs inside the caller's transaction.
 * A person's known state is compared with each contact matched to it: another company (after
 * normalization) is a job change; any other differing field is an info change, one row per field.
 * `name`, `importCompany` and `importTitle` are never touched. Replaying a record changes nothing.
 */
export function createTracker(d: TrackerDeps) {
  /**
   * Finds the person a record is about: personId, LinkedIn slug, e-mail, then name + company. The
   * weaker keys (e-mail, name + company) only find a person who could be the same one: a person
   * known under another personId or another LinkedIn profile is someone else who shares the
   * address or the name, and so is a person whose name does not fit the record's (namesFit: a
   * shared info@ address), and the record is then about a new person.
   */
  function findPerson(r: { personId?: string; linkedin?: string; email?: string; name: string; company: string }, seen?: { keyHolders: number; emailHolders?: Person[] }): Person | undefined {
    if (r.personId) {
      const p = d.people.findByExternalId(r.personId);
      if (p) return p;
    }
    const slug = r.linkedin ? linkedinSlug(r.linkedin) : undefined;
    if (slug) {
      const p = d.people.findBySlug(slug);
      if (p) return p;
    }
    const compatible = (p: Person | undefined) =>
      p && (!r.personId || p.externalId === null || p.externalId === r.personId) && (!slug || p.linkedinSlug === null || p.linkedinSlug === slug) ? p : undefined;
    const [nameK, companyK] = [nameKey(r.name), companyKey(r.company)];
    if (r.email) {
      // up to two people with the address: exactly one may be the record's (applyRecord learns who else has it),
      // and only when the names fit — a record of Gil Hart at hello@ is not Eda Finch's, who has it too (a tester's case)
      const holders = d.people.emailHolders(r.email);
      if (seen) seen.emailHolders = holders;
      const p = holders.length === 1 && namesFit(holders[0]!.nameKey, nameK) ? compatible(holders[0]) : undefined;
      if (p) return p;
    }
    // how many people have the record's name + company: a new person among them is a namesake (applyRecord)
    const holders = d.people.keyHolders(nameK, companyK);
    if (seen) seen.keyHolders = holders.length;
    if (holders.length === 1) return namesakeByKeys(holders[0]!, r, slug) ? undefined : compatible(holders[0]);
    // A record known by name + company alone, or with an address that names nobody for it (shared, or
    // another name's), among namesakes, is the person an earlier such record made (known by the same
    // keys and nothing else): else each replay of it made one more (testers' cases).
    if (holders.length > 1 && !r.personId && !slug) return d.people.findKeyless(nameK, companyK, r.email);
    return undefined;
  }

  /**
   * Brings a contact up to the person's state; records and announces the changes. A contact the
   * person was just found for (`newMatch`: by which key) is matched to it (isVerified) in the same
   * update — for the first time, or moving from another person. `asOf`: the time of the record
   * applied to the person just now, when later than theirs (knownAsOf).
   */
  function reconcile(found: TrackedContact, p: Person, counts: TrackingCounts, newMatch?: MatchedBy, asOf?: ExactTime): void {
    const firstMatch = newMatch !== undefined && !found.isVerified;
    const c = newMatch ? { ...found, isVerified: true } : found;
    // never dated before the contact's import or its last change, even when the wall clock stepped
    // back (SPEC §5: lastJobChangedAt is never before the import; change times only move forward)
    const now = Math.max(d.clock.now(), c.createdAt, c.lastJobChangedAt ?? 0, c.lastInfoChangedAt ?? 0);
    const changes: Omit<Change, 'seq'>[] = [];
    // what the contact shows is the person's as of their observation (a time ahead: a day ago), or
    // of the record applied to them just now (`asOf`: knownAsOf)
    const factsObservedAt = knownAsOf(p, d.clock.now(), asOf).ms;
    const next: TrackedFields = {
      factsObservedAt,
      company: c.company,
      companyKey: c.companyKey ?? companyKey(c.company),
      title: c.title,
      titleLevel: c.titleLevel,
      titleDomain: c.titleDomain,
      location: c.location,
      email: c.email,
      emailStatus: c.emailStatus,
      hasMultipleJobs: c.hasMultipleJobs,
      jobStartedAt: c.jobStartedAt,
      lastJobChangedAt: c.lastJobChangedAt,
      lastInfoChangedAt: c.lastInfoChangedAt,
    };
    const base = { ledgerId: c.ledgerId, contactId: c.id, detectedAt: now, observedAt: p.observedAt };
    const jobChange = p.companyKey !== next.companyKey;
    if (jobChange) {
      changes.push({ ...base, id: newId('chg'), type: 'job', field: null, from: { company: c.company, title: c.title }, to: { company: p.company, title: p.title } });
      next.company = p.company;
      next.companyKey = p.companyKey;
      next.title = p.title;
      next.jobStartedAt = p.jobStartedAt;
      next.lastJobChangedAt = now;
      next.lastInfoChangedAt = now;
      counts.jobChanges++;
    }
    let emailChanged = false;
    let filledIn = false;
    for (const f of INFO_FIELDS) {
      if (jobChange && (f === 'title' || f === 'jobStartedAt')) continue; // part of the job change
      const to = personValue(p, f) ?? null;
      const from = contactValue(c, f);
      const same = from === to || (typeof from === 'string' && typeof to === 'string' && (f === 'email' ? emailKey(from) === emailKey(to) : TEXT_FIELDS.has(f) && sameText(from, to)));
      if (f === 'email') emailChanged = to !== null && !same;
      // unknown is not a change — except the status of a new address, which the old address's status does not describe
      if (to === null && !(f === 'emailStatus' && emailChanged)) continue;
      if (same) continue;
      // A first match fills in what no import can give (a status, a start date, several jobs):
      // unknown until now, not changed — else every contact imported after its person is known
      // would be reported as changed. The status of an address the match changes is part of that change.
      if (firstMatch && from === null && NOT_IMPORTED.has(f) && !(f === 'emailStatus' && emailChanged)) {
        (next as unknown as Record<string, unknown>)[f] = to;
        filledIn = true;
        continue;
      }
      changes.push({ ...base, id: newId('chg'), type: 'info', field: f, from: { [f]: wire(f, from) }, to: { [f]: wire(f, to) } });
      (next as unknown as Record<string, unknown>)[f] = to;
      next.lastInfoChangedAt = now;
      counts.infoChanges++;
    }
    if (!changes.length && !filledIn) {
      if (newMatch) d.contacts.markMatched(c.id, { personId: p.id, by: newMatch }, factsObservedAt, now);
      return;
    }
    next.titleLevel = titleLevel(next.title ?? undefined) ?? null;
    next.titleDomain = titleDomain(next.title ?? undefined) ?? null;
    d.contacts.updateTracked(c.id, next, now, newMatch ? { personId: p.id, by: newMatch } : undefined);
    if (!changes.length) return;
    const { companyKey: _key, ...rest } = next;
    const updated: Contact = { ...c, ...rest, updatedAt: now };
    delete (updated as TrackedContact).nameKey;
    delete (updated as TrackedContact).companyKey;
    delete (updated as TrackedContact).matchedBy;
    delete (updated as TrackedContact).factsObservedAt;
    for (const ch of changes) {
      const seq = d.changes.insertChange(ch);
      for (const l of d.listeners) l({ ...ch, seq }, updated);
    }
  }

  /**
   * Whether a person's facts are older than those a contact shows (its factsObservedAt, compared
   * in whole milliseconds, each time ahead of the clock taken as a day ago): matching it to them
   * would roll it back (SPEC §5; testers' cases). A contact that never took facts may take anyone's.
   */
  function olderThanShown(c: TrackedContact, q: Person, now: number, asOf?: ExactTime): boolean {
    let shown = c.factsObservedAt ?? null;
    // Matched by name + company to another person when it was listed (a move by its address): as
    // stored now — a namesake may have unmatched it since, raising its time — and as late as that
    // person, observed again maybe without a change to the contact (a tester's case: an old record
    // with her address moved her back to her old company).
    if (c.matchedBy === 'name') {
      const stored = d.contacts.matchOf(c.id);
      shown = stored.factsObservedAt;
      const other = stored.personId === null || stored.personId === q.id ? undefined : d.people.findBySeq(Number(stored.personId));
      if (other) shown = Math.max(shown ?? 0, knownTime(personTime(other), now).ms);
    }
    if (shown === null) return false;
    return knownAsOf(q, now, asOf).ms < knownTime({ ms: shown, nsBefore: 0 }, now).ms;
  }

  /** Whether feeds other than `run`'s may have left records observed on `day` (FeedRun.daysOfOthers). */
  function othersRemember(run: FeedRun, day: number): boolean {
    let known = run.daysOfOthers.get(day);
    if (known === undefined) run.daysOfOthers.set(day, (known = d.replays.hasDay(day)));
    return known;
  }

  /**
   * Applies one feed record: updates the people store (never rolling a person back to an older
   * observation), matches contacts to the person and reconciles every matched contact. Returns
   * why the record was rejected instead (it names two different known people), else undefined.
   * `listing`: whom the feed listed before this record — a person listed again is not changed
   * unless the record says it was observed later (a replay must find the same first listing);
   * what such a listing adds that the person lacks is filled in (fillIn).
   * `says`: recordSays(record). `applied.person`: the person the record was applied to (or found
   * stale or repeated for).
   */
  function applyFresh(record: FeedRecord, says: string, counts: TrackingCounts, listing: FeedListing | undefined, applied: { person: number | null }): string | undefined {
    const now = d.clock.now();
    const looked: { keyHolders: number; emailHolders?: Person[] } = { keyHolders: 0 };
    const existing = findPerson(record, looked);
    if (existing && record.linkedin) {
      const slug = linkedinSlug(record.linkedin);
      const holder = existing.linkedinSlug === slug ? existing : d.people.findBySlug(slug);
      if (holder && holder.seq !== existing.seq) {
        return `personId "${record.personId}" and linkedin "${record.linkedin}" belong to two different people already known; the record was not applied`;
      }
    }
    // A personId nobody has, with the LinkedIn URL of a person first known by another: it is theirs
    // too (LinkedIn is authoritative), whatever the record's time, and a later record under it alone
    // finds them (a tester's case: it made a namesake, and the next record with both was rejected).
    if (existing && record.personId && existing.externalId !== null && existing.externalId !== record.personId) d.people.addOtherId(existing.seq, record.personId);
    // the record's time against the person's: < 0 older, 0 the same time, > 0 newer
    const vsKnown = existing ? compareExactTimes(recordTime(record, now), knownTime(personTime(existing), now)) : 1;
    // An older record changes nothing the person's newer observation says, but gives them the
    // personId or LinkedIn URL they lack: found by a weaker key (e-mail, name + company), it is
    // theirs, and its replay must find them again — else a later record that gave them another
    // personId made the replay find nobody and make someone new (SPEC §5: replays add nothing).
    const older = vsKnown < 0 ? identityOf(existing!, record) : undefined;
    if (vsKnown < 0 && !older) {
      counts.stale++;
      applied.person = existing!.seq;
      return undefined;
    }
    // Records seen at the person's observation time are remembered (seenRecords): one coming again
    // in a later feed is a replay, not a correction of that time, and changes nothing — else
    // replaying a day's feed after its correction flips the contact back and forth (SPEC §5).
    const digest = digestOf(says);
    // only a record that says this time is remembered at it (one without observedAt is "now")
    const atKnownTime = existing !== undefined && record.observedAt !== undefined && vsKnown === 0;
    let replay = atKnownTime && hasSeen(existing.seenRecords, digest);
    let r = older ?? record;
    if (!older && existing && listing?.has(existing.seq) && !(record.observedAt !== undefined && vsKnown > 0)) {
      const filled = fillIn(existing, record);
      if (!filled) {
        counts.repeated++;
        applied.person = existing.seq;
        // the same file with its rows in another order finds this one seen (in half of the room)
        const seen = existing.seenRecords?.length ?? 0;
        if (atKnownTime && !replay && seen < (RECORDS_SEEN_MAX / 2) * DIGEST_BYTES) d.people.setSeenRecords(existing.seq, withSeen(existing.seenRecords, digest));
        return undefined;
      }
      // what it fills in is applied, seen before or not (a correction since may have cleared it)
      r = filled;
      replay = false;
    }
    const time = recordTime(r, now);
    const companyK = companyKey(r.company);
    const newJob = existing !== undefined && existing.companyKey !== companyK;
    const person: Omit<Person, 'seq' | 'id'> = {
      // the first personId a person was known by stays (LinkedIn is authoritative: a record with
      // another personId and this person's LinkedIn is about them, and finds them by it again)
      externalId: existing?.externalId ?? r.personId ?? null,
      linkedinSlug: r.linkedin ? linkedinSlug(r.linkedin) : (existing?.linkedinSlug ?? null),
      email: r.email ?? existing?.email ?? null,
      // a status belongs to its address: a new address without one has none, and no address has none
      emailStatus: !(r.email ?? existing?.email)
        ? null
        : (r.emailStatus ?? (r.email && emailKey(r.email) !== (existing?.email && emailKey(existing.email)) ? null : (existing?.emailStatus ?? null))),
      name: r.name,
      nameKey: existing?.name === r.name ? existing.nameKey : nameKey(r.name),
      company: r.company,
      companyKey: companyK,
      // a new job without a title has no known title
      title: r.title ?? (newJob ? null : (existing?.title ?? null)),
      location: r.location ?? existing?.location ?? null,
      jobStartedAt: r.jobStartedAt ?? (newJob ? null : (existing?.jobStartedAt ?? null)),
      hasMultipleJobs: r.hasMultipleJobs ?? existing?.hasMultipleJobs ?? null,
      observedAt: time.ms,
      observedNsBefore: time.nsBefore,
      updatedAt: now,
      seenRecords: existing && compareExactTimes(time, personTime(existing)) === 0 ? (atKnownTime ? withSeen(existing.seenRecords, digest) : existing.seenRecords) : Buffer.from(digest),
    };
    let p: Person;
    if (existing) {
      // a replay: nothing to write; nor for a record without observedAt that says what is known (it
      // does not refresh the time alone) — unless the person's time is ahead of the clock: it is set
      // right, to `now`
      const keepsTime = r.observedAt === undefined && !isAhead(existing.observedAt, now);
      if (replay || samePerson(existing, keepsTime ? { ...person, observedAt: existing.observedAt, observedNsBefore: existing.observedNsBefore } : person)) {
        p = existing;
        if (atKnownTime && !replay) d.people.setSeenRecords(existing.seq, withSeen(existing.seenRecords, digest));
      } else {
        d.people.updatePerson(existing.seq, person);
        counts.personsUpdated++;
        p = { ...person, seq: existing.seq, id: existing.id };
      }
    } else {
      const id = d.people.insertPerson(person);
      counts.personsUpdated++;
      p = { ...person, seq: Number(id), id };
    }

    // The keys people left (below: the contacts a namesake left unmatched may fit one person again).
    const keysLeft: { nameKey: string; companyKey: string }[] = [];
    // A record that brings a LinkedIn profile or personId and an address another person has: when
    // that one is the only other holder, is known by nothing stronger and has a name that fits,
    // the two are one person whom two sources kept apart (namesakeByKeys: one sent LinkedIn
    // profiles, the other addresses alone). That person is merged into this one — their contacts
    // follow this one, the row goes — instead of the address being shared by two, which left the
    // contacts known by it unmatched and their next job change lost (a tester's case).
    if (existing && p.email && (p.externalId !== null || p.linkedinSlug !== null) && !(existing.email && emailKey(existing.email) === emailKey(p.email))) {
      const others = d.people.othersWithEmail(p);
      const twin = others.length === 1 ? others[0]! : undefined;
      if (twin && twin.externalId === null && twin.linkedinSlug === null && namesFit(twin.nameKey, p.nameKey)) {
        d.contacts.movePerson(twin.id, p.id, now);
        d.people.deletePerson(twin.seq);
        keysLeft.push(twin);
        // the newer observation of the two stands (SPEC §5: no rollback): a record between their
        // times joined them, and the address-known one had been seen later (a tester's case: her
        // contact took the older company back, a false job change). So does the first listing of
        // this feed: the address-known one listed before this record, which is no later
        // observation, is this record's person listed before it (a feed tester's case: the later
        // listing's title stood, and a replay, finding the one person by the address first, put
        // the first listing's back — an info change at every replay).
        // (not when this one was listed first, nor over what it knew of a later time: no rollback)
        const listedFirst =
          listing?.has(twin.seq) === true &&
          !listing.has(existing.seq) &&
          !older &&
          compareExactTimes(knownTime(personTime(existing), now), knownTime(personTime(twin), now)) <= 0 &&
          !(record.observedAt !== undefined && compareExactTimes(recordTime(record, now), knownTime(personTime(twin), now)) > 0);
        // the records seen at one time stay seen when the two were observed at it: a replay of the
        // address-known one's record is a replay, not a correction, also after FEED_REPLAY_DAYS
        const seen = compareExactTimes(personTime(twin), personTime(p)) === 0 ? seenBoth(p.seenRecords, twin.seenRecords) : undefined;
        if (listedFirst || comparePeople(twin, p, now) > 0) {
          const joined = { ...joinedLater(p, twin, now), ...(seen ? { seenRecords: seen } : {}) };
          d.people.updatePerson(p.seq, joined);
          p = { ...joined, seq: p.seq, id: p.id };
        } else if (seen) {
          d.people.setSeenRecords(p.seq, seen);
          p = { ...p, seenRecords: seen };
        }
      }
    }

    // by e-mail only while the address names this one person (two people may share one), and only
    // contacts whose name fits theirs (emailPerson); a contact matched by name + company to someone else
    // moves to this person, as its import would have matched it. Looked up before a namesake unmatches
    // such a contact below: its own address says which of the two it is.
    // What this record says of the person holds as of its time (one without observedAt: now).
    // Not for what an older record or a fill-in (fillIn: the first listing's time) applies.
    const asOf = older || r !== record ? undefined : recordTime(record, now);
    // (one observed before what such a contact shows is passed over below: olderThanShown)
    const byEmail = p.email && d.people.findByEmail(p.email)?.seq === p.seq ? d.contacts.listMatchableByEmail(p.email, p.id).filter((c) => namesFit(contactNameKey(c), p.nameKey)) : [];

    // A second person with these name + company keys: the contacts matched by them alone to the
    // other one could be either person now ("when exactly one person fits"), so they are unmatched.
    // A new person's keys were looked up by findPerson (it gets there for every new person).
    const namesake = existing
      ? (existing.nameKey !== p.nameKey || existing.companyKey !== p.companyKey) && d.people.countByKeys(p.nameKey, p.companyKey) > 1
      : looked.keyHolders > 0;
    if (namesake) {
      // Only a person who was alone with these keys can have contacts matched by them: when a
      // second one came, those were unmatched. So with two or more others there is nothing to
      // undo, and a feed of thousands of namesakes does not walk all of them for each one.
      const others = d.people.othersWithKeys(p);
      if (others.length === 1) d.contacts.unmatchByKeys(others[0]!.id, now);
    }
    // A second person with this address: the contacts matched by it alone to the other one could
    // be either now (e-mail matches "when exactly one person has it"), so they are unmatched, as
    // for namesakes, and each is matched again by what else fits it (name + company, when exactly
    // one person fits) — else a contact with a shared info@ address followed whichever person
    // came first and reported that person's job change (a tester's case). With two or more others
    // the address was shared already and nobody's contacts are matched by it.
    if (p.email && !(existing?.email && emailKey(existing.email) === emailKey(p.email))) {
      // a new person's were looked up by findPerson, before it was stored (no second look-up a record)
      const others = !existing && looked.emailHolders ? looked.emailHolders : d.people.othersWithEmail(p);
      if (others.length === 1) for (const c of d.contacts.unmatchByEmail(others[0]!.id, p.email, now)) rematch(c, existing, p, counts);
    }
    const known = existing ? d.contacts.listOfPerson(p.id) : [];
    const fresh: [TrackedContact[], MatchedBy][] = [];
    if (p.linkedinSlug) fresh.push([d.contacts.listUnmatchedByLinkedin(`https://www.linkedin.com/in/${p.linkedinSlug}`), 'linkedin']);
    if (byEmail.length) fresh.push([byEmail, 'email']);
    // name + company: contacts without LinkedIn whose e-mail (if any) names no person, while exactly
    // one person fits (the e-mail of a contact unmatched as ambiguous may be what its first match brought)
    // (the count first: contacts left unmatched by a crowd of namesakes are not listed for each of them)
    if (d.people.countByKeys(p.nameKey, p.companyKey) === 1) {
      const byKeys = unmatchedByKeys(p.nameKey, p.companyKey);
      if (byKeys.length) fresh.push([byKeys, 'name']);
    }
    // The keys this person leaves, and those of a person merged into them: when one other person is
    // left with them, the contacts a namesake left unmatched fit exactly one person again and follow
    // them now — not at that person's next record, whose new company would no longer find them (a
    // tester's case: the job change was lost; another's: a merge left them unmatched).
    if (existing) keysLeft.push(existing);
    for (const k of keysLeft) {
      if (k.nameKey === p.nameKey && k.companyKey === p.companyKey) continue;
      const left = d.people.keyHolders(k.nameKey, k.companyKey);
      // nobody left with the keys this person had alone: the contacts waiting for a record of them
      // as recent (olderThanShown) are theirs, with the job change (a tester's case: it was lost)
      // (the keys were this person's or the one merged into them: both are `p` now, a reviewer's case)
      const to = left.length === 1 ? left[0]! : left.length === 0 ? p : undefined;
      if (!to) continue;
      for (const c of unmatchedByKeys(k.nameKey, k.companyKey)) {
        if (olderThanShown(c, to, now, to === p ? asOf : undefined)) continue;
        counts.contactsMatched++;
        reconcile(c, to, counts, 'name', to === p ? asOf : undefined);
      }
    }
    for (const c of known) reconcile(c, p, counts);
    const seen = new Set(known.map((c) => c.id));
    for (const [contacts, by] of fresh) {
      for (const c of contacts) {
        if (seen.has(c.id)) continue;
        seen.add(c.id);
        // not to facts older than the contact shows: it waits for a record of this person as recent
        if (olderThanShown(c, p, now, asOf)) continue;
        // matched for the first time (or again after being left unmatched); one matched to another person moves: its changes count
        if (!c.isVerified) counts.contactsMatched++;
        reconcile(c, p, counts, by, asOf);
      }
    }
    // an older record is no listing of the person (tracking.md)
    if (!older) listing?.add(p.seq);
    applied.person = p.seq;
    return undefined;
  }

  return {
    findPerson,
    /**
     * Applies one feed record (applyFresh), unless an earlier feed applied it already: a record
     * that says what it said then, observed at the same time, is a replay — counted as it was then
     * (stale when its person has been observed later since, repeated when this feed listed them
     * before), its person listed as then, nothing applied. Told apart before any matching, which
     * depends on whom the feed had stored before the record: its replay could find another
     * person, one the same feed made after it (SPEC §5: replays add nothing; tracking.md, Replays
     * are found before matching). `run`: the feed job's run (FeedRun); a record listed again by
     * its own feed is applyFresh's (`repeated`).
     */
    applyRecord(record: FeedRecord, counts: TrackingCounts, listing?: FeedListing, run?: FeedRun): string | undefined {
      const says = recordSays(record);
      const at = run && replayKey(record, says);
      const first = at && othersRemember(run!, at.day) ? d.replays.findApplied(at.day, at.key) : undefined;
      if (first && first.feed !== run!.feed) {
        // none when the person was merged into another since: counted as then, nobody listed (a
        // person's seq is never given again, so it never names someone else)
        const since = first.person === null ? undefined : d.people.observedAtOf(first.person);
        const stale = first.outcome === 'stale' || (since !== undefined && compareExactTimes(recordTime(record, 0), knownTime(since, d.clock.now())) < 0);
        // listed before by this feed (at this time: a later one is not stale): a repeat, as for applyFresh
        if (stale) counts.stale++;
        else if (first.outcome === 'repeated' || (since !== undefined && listing?.has(first.person!))) counts.repeated++;
        else if (since !== undefined) listing?.add(first.person!);
        return undefined;
      }
      const before = { stale: counts.stale, repeated: counts.repeated };
      const applied = { person: null as number | null };
      const rejected = applyFresh(record, says, counts, listing, applied);
      if (at && !first && rejected === undefined) {
        const outcome = counts.stale > before.stale ? 'stale' : counts.repeated > before.repeated ? 'repeated' : 'applied';
        d.replays.recordApplied(at.day, at.key, utcDay(d.clock.now()), { feed: run!.feed, person: applied.person, outcome });
      }
      return rejected;
    },

    /**
     * Import-time matching (SPEC §5) of the contacts one import chunk just stored: each contact a
     * known person fits is matched (isVerified) and brought up to date — a person known to work
     * elsewhere gives a job change at processing time. Nothing to look up while nobody is known.
     */
    matchImported(contacts: Contact[]): { matched: number; jobChanges: number } {
      const counts = zeroCounts();
      if (!d.people.hasPeople()) return { matched: 0, jobChanges: 0 };
      for (const c of contacts) matchImportedOne(c, counts);
      return { matched: counts.contactsMatched, jobChanges: counts.jobChanges };
    },
  };

  /**
   * Contacts without LinkedIn left unmatched with these name + company keys that the one person
   * holding them may take: those whose e-mail (if any) names no person for them (emailPerson) — the
   * address of one unmatched as ambiguous may be what its first match brought, so it does not count.
   */
  function unmatchedByKeys(nameK: string, companyK: string): TrackedContact[] {
    return d.contacts.listUnmatchedByKeys(nameK, companyK).filter((c) => !c.email || c.matchedBy === 'ambiguous' || !emailPerson(c.email, contactNameKey(c)));
  }

  /**
   * The person a contact's address names: the one person who has it, when that person's name fits
   * the contact's (namesFit). A contact Bob Stone with info@acme is not Alice Stone's, though she is
   * the only person known with the address: it is theirs to share (a tester's case: Bob took her
   * title, and then reported her move as his job change).
   */
  function emailPerson(email: string, contactNameK: string): Person | undefined {
    const p = d.people.findByEmail(email);
    return p && namesFit(p.nameKey, contactNameK) ? p : undefined;
  }

  /**
   * A contact just unmatched from the person who had its address alone (the address is shared
   * now) matched again by name + company, as its import would be: by the company it was imported
   * with (a wrong match may have changed its company since), else its current one, a person who
   * has the contact's address before one who has not — but never to a person observed before the
   * facts the contact shows, as late as the one it was unmatched from (olderThanShown): that would
   * roll it back (SPEC §5; a tester's case: an old record of the address's owner under another
   * personId sent the contact back to the company she had left). Nobody else fitting, it stays
   * unmatched and keeps what it has. The person the record is about (`p`), when the record moved them from
   * keys only they had (`before`), takes the contacts that fit those keys — its job change
   * included, which the new keys would not find. Not counted as matched: it was matched before,
   * and a move to another person counts under the changes it brings (tracking.md).
   */
  function rematch(c: TrackedContact, before: Person | undefined, p: Person, counts: TrackingCounts): void {
    const nameK = nameKey(c.name);
    const companyKeys = [...new Set([companyKey(c.importCompany), c.companyKey ?? companyKey(c.company)])];
    const candidates: (Person | undefined)[] = [];
    if (before && (before.nameKey !== p.nameKey || before.companyKey !== p.companyKey) && nameK === before.nameKey && companyKeys.includes(before.companyKey) && d.people.countByKeys(before.nameKey, before.companyKey) === 0) candidates.push(p);
    for (const k of companyKeys) candidates.push(d.people.findByKeys(nameK, k));
    const now = d.clock.now();
    const eligible = candidates.filter((q): q is Person => q !== undefined && !olderThanShown(c, q, now));
    // one who has the contact's address first (a tester's case: a namesake without it at the import
    // company took the contact from the person it followed, who has it)
    const key = c.email === null ? undefined : emailKey(c.email);
    const to = eligible.find((q) => q.email !== null && emailKey(q.email) === key) ?? eligible[0];
    if (!to) return;
    reconcile(c, to, counts, 'name');
  }

  /** Matching order as for feed records: LinkedIn (authoritative: nothing else is tried), else e-mail, else name + company. */
  function matchImportedOne(c: Contact, counts: TrackingCounts): void {
    let p: Person | undefined;
    let by: MatchedBy = 'linkedin';
    if (c.linkedin) p = d.people.findBySlug(linkedinSlug(c.linkedin));
    else {
      if (c.email) [p, by] = [emailPerson(c.email, contactNameKey(c)), 'email'];
      if (!p) [p, by] = [d.people.findByKeys(nameKey(c.name), companyKey(c.company)), 'name'];
    }
    if (!p) return;
    counts.contactsMatched++;
    reconcile(c, p, counts, by);
  }
}
