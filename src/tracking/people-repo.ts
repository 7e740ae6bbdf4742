import type { ExactTime } from '../clock.ts';
import type { Db } from '../storage/db.ts';
import type { Person } from './model.ts';
import { emailKey, storedEmailKey } from '../normalize.ts';
import { emailKeyIs } from '../ledger/contacts-list-repo.ts';

/** The settings key of the largest seq of a deleted person (a new person's is past it). */
const PEOPLE_SEQ_FLOOR = 'people.deleted_seq_max';

interface PersonRow {
  seq: number;
  external_id: string | null;
  linkedin_slug: string | null;
  email: string | null;
  email_status: string | null;
  name: string;
  name_key: string;
  company: string;
  company_key: string;
  title: string | null;
  location: string | null;
  job_started_at: number | null;
  has_multiple_jobs: number | null;
  observed_at: number;
  observed_ns_before: number | null;
  updated_at: number;
  seen_records: Buffer | null;
}

const toPerson = (r: PersonRow): Person => ({
  seq: r.seq,
  id: String(r.seq),
  externalId: r.external_id,
  linkedinSlug: r.linkedin_slug,
  email: r.email,
  emailStatus: r.email_status,
  name: r.name,
  nameKey: r.name_key,
  company: r.company,
  companyKey: r.company_key,
  title: r.title,
  location: r.location,
  jobStartedAt: r.job_started_at,
  hasMultipleJobs: r.has_multiple_jobs === null ? null : r.has_multiple_jobs === 1,
  observedAt: r.observed_at,
  observedNsBefore: r.observed_ns_before,
  updatedAt: r.updated_at,
  seenRecords: r.seen_records,
});

export type PeopleRepo = ReturnType<typeof createPeopleRepo>;

/** The people store: latest known state per person, installation-wide (SPEC §5). */
export function createPeopleRepo(db: Db) {
  const q = {
    bySeq: db.raw.prepare<[number], PersonRow>('SELECT * FROM people WHERE seq = ?'),
    byExternal: db.raw.prepare<[string], PersonRow>('SELECT * FROM people WHERE external_id = ?'),
    // a further personId (migration 0044)
    byOtherId: db.raw.prepare<[string], PersonRow>('SELECT people.* FROM person_other_ids JOIN people ON people.seq = person_other_ids.person WHERE person_other_ids.external_id = ?'),
    addOtherId: db.raw.prepare<[string, number]>('INSERT INTO person_other_ids (external_id, person) VALUES (?, ?) ON CONFLICT (external_id) DO NOTHING'),
    otherIds: db.raw.prepare<[number], string>('SELECT external_id FROM person_other_ids WHERE person = ? ORDER BY external_id').pluck(),
    bySlug: db.raw.prepare<[string], PersonRow>('SELECT * FROM people WHERE linkedin_slug = ?'),
    byEmail: db.raw.prepare<[string], PersonRow>(`SELECT * FROM people WHERE ${emailKeyIs('?')} LIMIT 2`),
    byKeys: db.raw.prepare<[string, string], PersonRow>('SELECT * FROM people WHERE name_key = ? AND company_key = ? LIMIT 2'),
    othersByKeys: db.raw.prepare<[string, string, number], PersonRow>('SELECT * FROM people WHERE name_key = ? AND company_key = ? AND seq <> ? LIMIT 2'),
    othersByEmail: db.raw.prepare<[string, number], PersonRow>(`SELECT * FROM people WHERE ${emailKeyIs('?')} AND seq <> ? LIMIT 2`),
    // one seek in people_known_by_name_only (migration 0029), not a walk of a crowd of namesakes (the
    // planner, which sees people_by_name_company deliver the same order, is told)
    keylessByKeys: db.raw.prepare<[string, string], PersonRow>(
      'SELECT * FROM people INDEXED BY people_known_by_name_only WHERE name_key = ? AND company_key = ? AND external_id IS NULL AND linkedin_slug IS NULL AND email IS NULL ORDER BY seq LIMIT 1',
    ),
    // The first namesake known by this address besides name + company, and by nothing else: a walk of
    // the namesakes in seq order (people_by_name_company holds them so), made only for a record whose
    // address and name + company are both another's too. Not the address's index: an info@ address
    // may have many more holders than a name at one company has namesakes.
    weakByKeys: db.raw.prepare<[string, string, string], PersonRow>(
      `SELECT * FROM people INDEXED BY people_by_name_company WHERE name_key = ? AND company_key = ? AND external_id IS NULL AND linkedin_slug IS NULL AND ${emailKeyIs('?')} ORDER BY seq LIMIT 1`,
    ),
    countKeys: db.raw.prepare<[string, string], number>('SELECT count(*) FROM (SELECT 1 FROM people WHERE name_key = ? AND company_key = ? LIMIT 2)').pluck(),
    any: db.raw.prepare<[], number>('SELECT EXISTS (SELECT 1 FROM people)').pluck(),
    // every holder of a key, not the first two (people-service.ts: an access or erasure request)
    allByEmail: db.raw.prepare<[string, number], PersonRow>(`SELECT * FROM people WHERE ${emailKeyIs('?')} LIMIT ?`),
    allByKeys: db.raw.prepare<[string, string, number], PersonRow>('SELECT * FROM people WHERE name_key = ? AND company_key = ? LIMIT ?'),
    // A seq is never given twice: SQLite gives a new row the largest rowid + 1, which is a deleted
    // person's when they had the largest (a merge deletes one), and what still names that seq — a
    // replay's record of its person, a feed's listing — would then name someone else (a reviewer's
    // case: a correction of that someone dropped as a second listing). So a new person's seq is
    // also past PEOPLE_SEQ_FLOOR, the largest deleted.
    insert: db.raw.prepare(
      `INSERT INTO people (seq, external_id, linkedin_slug, email, email_key, email_status, name, name_key, company, company_key, title, location, job_started_at, has_multiple_jobs, observed_at, observed_ns_before, updated_at, seen_records)
       VALUES (max(coalesce((SELECT max(seq) FROM people), 0), coalesce((SELECT CAST(value AS INTEGER) FROM settings WHERE key = '${PEOPLE_SEQ_FLOOR}'), 0)) + 1,
         @externalId, @linkedinSlug, @email, @emailKey, @emailStatus, @name, @nameKey, @company, @companyKey, @title, @location, @jobStartedAt, @hasMultipleJobs, @observedAt, @observedNsBefore, @updatedAt, @seenRecords)`,
    ),
    deleted: db.raw.prepare<[string]>(
      `INSERT INTO settings (key, value) VALUES ('${PEOPLE_SEQ_FLOOR}', ?) ON CONFLICT (key) DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))`,
    ),
    update: db.raw.prepare(
      `UPDATE people SET external_id = @externalId, linkedin_slug = @linkedinSlug, email = @email, email_key = @emailKey, email_status = @emailStatus, name = @name, name_key = @nameKey,
         company = @company, company_key = @companyKey, title = @title, location = @location, job_started_at = @jobStartedAt,
         has_multiple_jobs = @hasMultipleJobs, observed_at = @observedAt, observed_ns_before = @observedNsBefore, updated_at = @updatedAt, seen_records = @seenRecords
       WHERE seq = @seq`,
    ),
    setSeen: db.raw.prepare<[Buffer, number]>('UPDATE people SET seen_records = ? WHERE seq = ?'),
    delete: db.raw.prepare<[number]>('DELETE FROM people WHERE seq = ?'),
    timeOf: db.raw.prepare<[number], { observed_at: number; observed_ns_before: number | null }>('SELECT observed_at, observed_ns_before FROM people WHERE seq = ?'),
  };
  const one = (r: PersonRow | undefined) => r && toPerson(r);
  const params = (p: Omit<Person, 'seq' | 'id'>) => {
    const { externalId, linkedinSlug, email, emailStatus, name, nameKey, company, companyKey, title, location, jobStartedAt, observedAt, observedNsBefore, updatedAt, seenRecords } = p;
    return { externalId, linkedinSlug, email, emailKey: storedEmailKey(email), emailStatus, name, nameKey, company, companyKey, title, location, jobStartedAt, observedAt, observedNsBefore, updatedAt, seenRecords, hasMultipleJobs: p.hasMultipleJobs === null ? null : p.hasMultipleJobs ? 1 : 0 };
  };
  return {
    /** When the person `seq` was last observed (undefined: no such person any more). */
    observedAtOf: (seq: number): ExactTime | undefined => {
      const r = q.timeOf.get(seq);
      return r && { ms: r.observed_at, nsBefore: r.observed_ns_before };
    },
    /** True when the store knows at least one person. */
    hasPeople: (): boolean => q.any.get() === 1,
    /** The person known by this personId: their first, or one learnt since (addOtherId). */
    findBySeq: (seq: number) => one(q.bySeq.get(seq)),
    findByExternalId: (id: string) => one(q.byExternal.get(id) ?? q.byOtherId.get(id)),
    /** A further personId of a person known by another (a record with it and their LinkedIn URL); one another person has is not taken. */
    addOtherId: (seq: number, id: string): void => void q.addOtherId.run(id, seq),
    /** The further personIds a person is known by, besides their first. */
    otherIdsOf: (seq: number): string[] => q.otherIds.all(seq),
    findBySlug: (slug: string) => one(q.bySlug.get(slug)),
    /** The person with this e-mail when exactly one has it. */
    findByEmail: (email: string) => {
      const rows = q.byEmail.all(emailKey(email));
      return rows.length === 1 ? toPerson(rows[0]!) : undefined;
    },
    /** Up to two people with this e-mail (two = "more than one"). */
    emailHolders: (email: string): Person[] => q.byEmail.all(emailKey(email)).map(toPerson),
    /** The person with this normalized name + company when exactly one fits. */
    findByKeys: (nameKey: string, companyKey: string) => {
      const rows = q.byKeys.all(nameKey, companyKey);
      return rows.length === 1 ? toPerson(rows[0]!) : undefined;
    },
    /**
     * The first person with this normalized name + company known by nothing else (no personId,
     * LinkedIn or e-mail) — or, given an e-mail, by that address and nothing else: the first of
     * several when a crowd of them was made (before the twenty-fifth session each replay of such a
     * record made one more, before the thirty-third one each replay of such a record with an address), so a record finds the same one every time.
     */
    findKeyless: (nameKey: string, companyKey: string, email?: string) =>
      one(email === undefined ? q.keylessByKeys.get(nameKey, companyKey) : q.weakByKeys.get(nameKey, companyKey, emailKey(email))),
    /** The query plans of findKeyless without and with an e-mail (tests: one seek in an index, no sort). */
    explainFindKeyless: (): string[] => db.queryPlan(q.keylessByKeys.source, 'x', 'y'),
    explainFindKeylessWithEmail: (): string[] => db.queryPlan(q.weakByKeys.source, 'x', 'y', 'z'),
    /** Up to two people with this normalized name + company (two: "more than one"). */
    keyHolders: (nameKey: string, companyKey: string): Person[] => q.byKeys.all(nameKey, companyKey).map(toPerson),
    /** Up to two other people with the person's name + company keys (two = "more than one"). */
    othersWithKeys: (p: Person): Person[] => q.othersByKeys.all(p.nameKey, p.companyKey, p.seq).map(toPerson),
    /** Up to two other people with the person's e-mail address (two = "more than one"). */
    othersWithEmail: (p: Person): Person[] => (p.email === null ? [] : q.othersByEmail.all(emailKey(p.email), p.seq).map(toPerson)),
    /** How many people (0, 1 or 2 = "more than one") have these keys. */
    countByKeys: (nameKey: string, companyKey: string): number => q.countKeys.get(nameKey, companyKey)!,
    /**
     * Everyone the store knows by any of these keys — its own id (seq), the personId, the LinkedIn slug, the e-mail
     * address (every holder), the normalized name + company (every namesake) — in seq order, at
     * most `max` (an access or erasure request: people-service.ts).
     */
    holdersOf: (k: { seq?: number; seqs?: number[]; externalId?: string; linkedinSlug?: string; email?: string; nameKey?: string; companyKey?: string }, max: number): Person[] => {
      const found = new Map<number, PersonRow>();
      const add = (rows: (PersonRow | undefined)[]) => {
        for (const r of rows) if (r) found.set(r.seq, r);
      };
      if (k.seq !== undefined) add([q.bySeq.get(k.seq)]);
      for (const seq of k.seqs ?? []) add([q.bySeq.get(seq)]);
      if (k.externalId !== undefined) add([q.byExternal.get(k.externalId), q.byOtherId.get(k.externalId)]);
      if (k.linkedinSlug !== undefined) add([q.bySlug.get(k.linkedinSlug)]);
      if (k.email !== undefined) add(q.allByEmail.all(emailKey(k.email), max));
      if (k.nameKey !== undefined && k.companyKey !== undefined) add(q.allByKeys.all(k.nameKey, k.companyKey, max));
      return [...found.values()].sort((a, b) => a.seq - b.seq).slice(0, max).map(toPerson);
    },
    /** Stores a new person; returns its id. */
    insertPerson: (p: Omit<Person, 'seq' | 'id'>): string => String(q.insert.run(params(p)).lastInsertRowid),
    updatePerson: (seq: number, p: Omit<Person, 'seq' | 'id'>): void => void q.update.run({ ...params(p), seq }),
    /** Stores the digests of the records seen at the person's observation time (nothing else changed). */
    setSeenRecords: (seq: number, seen: Buffer): void => void q.setSeen.run(seen, seq),
    /** Removes a person merged into another (their contacts were moved first: tracker.ts); their seq is never given again. */
    deletePerson: (seq: number): void => {
      q.deleted.run(String(seq));
      q.delete.run(seq);
    },
  };
}
