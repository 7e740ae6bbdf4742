import { createReadStream, createWriteStream, openSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Clock } from '../clock.ts';
import type { Cursors } from '../cursor.ts';
import { notFound } from '../errors.ts';
import type { ContactsRepo } from '../ledger/contacts-repo.ts';
import type { LedgersRepo } from '../ledger/ledgers-repo.ts';
import { presentContact } from '../ledger/presenters.ts';
import { ledgerLookup } from '../ledger/require-ledger.ts';
import type { RunControl } from '../jobs/scheduler.ts';
import type { Logger } from '../log.ts';
import { makeDirDurably, moveDurably } from '../storage/durable-files.ts';
import type { Db } from '../storage/db.ts';
import type { DailySet, DailySetFile, DailySetsRepo } from './daily-sets-repo.ts';

/** About where a change-set file is split (SPEC §5: "split at about 300 MB" — of JSON lines, before gzip). */
export const DAILY_SET_MAX_BYTES = 300 * 1024 * 1024;
const DAY = 86_400_000;
const PAGE = 500;
/** Changes read per synchronous step when collecting a day's contacts (about 3 ms on the reference machine). */
const COLLECT = 1000;
/** How far back a run looks for days whose sets are missing (the server was stopped, a write failed). */
export const CATCH_UP_DAYS = 31;

export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10).replace(/-/g, '');
const startOfDay = (day: string) => Date.UTC(+day.slice(0, 4), +day.slice(4, 6) - 1, +day.slice(6, 8));
/** Where a ledger's exports live: `<data>/exports/ledgers/<ledgerId>`. */
const ledgerExportsDir = (dataDir: string, ledgerId: string) => join(dataDir, 'exports', 'ledgers', ledgerId);
export const dailyDir = (dataDir: string, ledgerId: string, day: string) => join(ledgerExportsDir(dataDir, ledgerId), 'streams', 'daily', day);

export type DailySets = ReturnType<typeof createDailySets>;

export interface GzipFile {
  /** Resolves when the stream takes more (back-pressure); rejects once writing failed. */
  write(text: string): Promise<void>;
  /** Resolves when everything is in the file; rejects if writing failed (ENOSPC…). */
  end(): Promise<void>;
  destroy(): void;
  /** Compressed bytes so far. */
  readonly bytes: number;
}

/**
 * A gzip file being written. A failure of the file (the disk is full) comes back from `write` or
 * `end` as a rejection — never as an 'error' event without a listener, which would end the process.
 */
export function openGzipFile(path: string): GzipFile {
  const gz = createGzip();
  let bytes = 0;
  gz.on('data', (chunk: Buffer) => (bytes += chunk.length));
  const done = pipeline(gz, createWriteStream(path, { mode: 0o600 }));
  done.catch(() => {}); // observed by write() and end()
  return {
    async write(text) {
      if (gz.destroyed) return done;
      if (!gz.write(text)) await Promise.race([once(gz, 'drain'), done]);
    },
    async end() {
      gz.end();
      await done;
    },
    destroy: () => gz.destroy(),
    get bytes() {
      return bytes;
    },
  };
}

/**
 * Daily change sets (SPEC §5): for each ledger, the contacts changed on a UTC day, in the API's
 * contact shape, one per line, gzipped, split at about 300 MB. Written once per (ledger, day) by
 * the scheduler after the day ended; files are written under a temporary name and renamed, and
 * the set is recorded only when all its files are in place, so a crash just means "write it again".
 */
export function createDailySets(d: {
  clock: Clock;
  log: Logger;
  db: Db;
  dataDir: string;
  ledgers: LedgersRepo;
  contacts: ContactsRepo;
  sets: DailySetsRepo;
  cursors: Cursors;
  /** CHANGE_SETS_KEEP_DAYS: sets of days older than this go (and are not written again); 0: kept. */
  keepDays?: number;
}) {
  const requireLedger = ledgerLookup(d.ledgers);

  async function writeLedgerDay(ledgerId: string, day: string, maxBytes: number): Promise<DailySet> {
    const from = startOfDay(day);
    const dir = dailyDir(d.dataDir, ledgerId, day);
    rmSync(dir, { recursive: true, force: true });
    await makeDirDurably(dir);
    const files: DailySetFile[] = [];
    let file: GzipFile | undefined;
    let current: DailySetFile | undefined;
    let written = 0; // JSON-lines bytes in the current file, before compression
    const close = async () => {
      if (!file || !current) return;
      await file.end();
      current.bytes = file.bytes;
      await moveDurably(join(dir, `${current.name}.partial`), join(dir, current.name)); // on disk before the set is recorded
      files.push(current);
      file = undefined;
      current = undefined;
    };
    const open = () => {
      current = { name: `changes-${day}-${files.length + 1}.jsonl.gz`, bytes: 0, contacts: 0 };
      file = openGzipFile(join(dir, `${current.name}.partial`));
      written = 0;
    };
    // the day's changed contacts, collected COLLECT changes per synchronous step (a busy day has
    // hundreds of thousands), then written in id order
    const changed = d.sets.openChangedContacts(ledgerId, from, from + DAY);
    let after = '';
    try {
      while (changed.collect(COLLECT) === COLLECT) await new Promise((resolve) => setImmediate(resolve));
      for (;;) {
        const ids = changed.page(after, PAGE);
        if (!ids.length) break;
        for (const id of ids) {
          const c = d.contacts.findContact(ledgerId, id);
          if (!c) continue; // deleted since
          if (!file || written >= maxBytes) {
            await close();
            open();
          }
          const line = `${JSON.stringify(presentContact(c))}\n`;
          written += Buffer.byteLength(line);
          await file!.write(line);
          current!.contacts++;
        }
        after = ids[ids.length - 1]!;
      }
    } catch (err) {
      file?.destroy(); // its file descriptor; the next run writes the day again from scratch
      throw err;
    } finally {
      changed.close();
    }
    await close();
    const set: DailySet = { ledgerId, day, files, createdAt: d.clock.now() };
    d.sets.recordSet(set);
    return set;
  }

  /**
   * The starts (UTC midnight) of the days a run writes: the last CATCH_UP_DAYS up to yesterday,
   * oldest first — fewer when sets are kept fewer days (a set the retention deleted is not written again).
   */
  function catchUpWindow(): number[] {
    const yesterday = startOfDay(dayOf(d.clock.now() - DAY));
    const days = d.keepDays ? Math.min(CATCH_UP_DAYS, d.keepDays) : CATCH_UP_DAYS;
    return Array.from({ length: days }, (_, i) => yesterday - (days - 1 - i) * DAY);
  }

  /** Removes a day's folder of a ledger's sets; one that cannot go is logged (the next night tries again), not the end of the run. */
  function removeDay(ledgerId: string, day: string): void {
    try {
      rmSync(dailyDir(d.dataDir, ledgerId, day), { recursive: true, force: true });
    } catch (err) {
      d.log.error({ err, ledgerId, day }, 'could not remove the files of an old daily change set');
    }
  }

  /**
   * The retention (CHANGE_SETS_KEEP_DAYS): the sets of days before the last `keepDays` go — the
   * record first (the API no longer lists them), then the files; day folders left behind by a run
   * stopped between the two go too. Returns how many sets went.
   */
  async function prune(ctl?: RunControl): Promise<number> {
    if (!d.keepDays) return 0;
    const before = dayOf(startOfDay(dayOf(d.clock.now())) - d.keepDays * DAY);
    let removed = 0;
    for (;;) {
      if (ctl?.stopping) return removed;
      const sets = d.sets.listSetsBefore(before, 100);
      if (!sets.length) break;
      for (const s of sets) {
        d.sets.removeSet(s.ledgerId, s.day);
        removeDay(s.ledgerId, s.day);
        removed++;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    let ledgers: string[] = [];
    try {
      ledgers = readdirSync(join(d.dataDir, 'exports', 'ledgers'));
    } catch {
      // no exports yet
    }
    for (const ledgerId of ledgers) {
      let days: string[] = [];
      try {
        days = readdirSync(join(ledgerExportsDir(d.dataDir, ledgerId), 'streams', 'daily'));
      } catch {
        continue;
      }
      for (const day of days) if (/^\d{8}$/.test(day) && day < before && !d.sets.hasSet(ledgerId, day)) removeDay(ledgerId, day);
    }
    if (removed) d.log.info({ removed, keepDays: d.keepDays }, 'daily change sets of old days deleted');
    return removed;
  }

  /** Writes the sets of `day` (YYYYMMDD) for every ledger with changes that day and no set yet. */
  async function generate(day: string, opts: { maxBytes?: number; ctl?: RunControl } = {}): Promise<DailySet[]> {
    const from = startOfDay(day);
    const out: DailySet[] = [];
    for (const ledgerId of d.sets.listLedgersWithChanges(from, from + DAY)) {
      if (opts.ctl?.stopping) break; // the rest is written at the next start
      if (d.sets.hasSet(ledgerId, day)) continue;
      try {
        out.push(await writeLedgerDay(ledgerId, day, opts.maxBytes ?? DAILY_SET_MAX_BYTES));
      } catch (err) {
        d.log.error({ err, ledgerId, day }, 'could not write a daily change set');
      }
    }
    if (out.length) d.log.info({ day, ledgers: out.length }, 'daily change sets written');
    return out;
  }

  /** Removes every change-set file of a ledger (it was deleted). */
  function removeLedger(ledgerId: string): void {
    try {
      rmSync(ledgerExportsDir(d.dataDir, ledgerId), { recursive: true, force: true });
    } catch (err) {
      d.log.error({ err, ledgerId }, 'could not remove the change sets of a deleted ledger');
    }
  }

  return {
    generate,
    removeLedger,
    prune,
    /**
     * At start: the exports of ledgers that no longer exist (a set still being written while its
     * ledger was purged lands after the purge removed the folder). Returns how many folders went.
     */
    removeOrphans(): number {
      let ids: string[];
      try {
        ids = readdirSync(join(d.dataDir, 'exports', 'ledgers'));
      } catch {
        return 0;
      }
      const gone = ids.filter((id) => d.ledgers.orgOfLedger(id) === undefined);
      for (const id of gone) removeLedger(id);
      return gone.length;
    },
    /**
     * What the scheduler runs each night and at start: every day of the last CATCH_UP_DAYS up to
     * yesterday, oldest first, so days missed while the server was stopped (or whose write failed)
     * are written too; a (ledger, day) already written is skipped.
     */
    async catchUp(ctl?: RunControl): Promise<DailySet[]> {
      const out: DailySet[] = [];
      for (const from of catchUpWindow()) {
        if (ctl?.stopping) break;
        out.push(...(await generate(dayOf(from), { ctl })));
      }
      return out;
    },
    /** Yesterday (UTC), the last day a run writes. */
    yesterday: () => dayOf(d.clock.now() - DAY),
    /** The ledger's sets, newest day first; the cursor is sealed to this ledger's list, like every other (SPEC §2: opaque). */
    list(orgId: string, ledgerId: string, limit: number, cursor?: string): { items: DailySet[]; nextCursor: string | null } {
      requireLedger(orgId, ledgerId);
      const list = `daily-sets:${ledgerId}`;
      const beforeDay = cursor === undefined ? '99999999' : (d.cursors.decode(cursor, list, ['s'])[0] as string);
      const rows = d.sets.listSets(ledgerId, beforeDay, limit + 1);
      return rows.length > limit ? { items: rows.slice(0, limit), nextCursor: d.cursors.encode(list, [rows[limit - 1]!.day]) } : { items: rows, nextCursor: null };
    },
    /**
     * The last UTC day (YYYYMMDD) up to which the ledger's sets are all written: every day up to it
     * with changes of the ledger has its set, so one not listed had none; a day after it may still
     * get one (yesterday before the 00:10 run, a day whose write failed). The first day of the
     * catch-up window with changes and no set ends it; none: yesterday. Asked after the write in
     * flight ends (as a read with a "since"): a change stamped before midnight whose chunk commits
     * after it must not make yesterday look written.
     */
    async writtenThrough(orgId: string, ledgerId: string): Promise<string> {
      requireLedger(orgId, ledgerId);
      await d.db.writesInFlightSettled();
      for (const from of catchUpWindow()) {
        if (!d.sets.hasSet(ledgerId, dayOf(from)) && d.sets.hasChanges(ledgerId, from, from + DAY)) return dayOf(from - DAY);
      }
      return dayOf(d.clock.now() - DAY);
    },
    /** A file of a recorded set, as a stream. */
    open(orgId: string, ledgerId: string, day: string, file: string) {
      requireLedger(orgId, ledgerId);
      const set = d.sets.findSet(ledgerId, day);
      const entry = set?.files.find((f) => f.name === file);
      if (!set || !entry) throw notFound('change set file', `${day}/${file}`);
      // opened before any header is sent: a recorded file that is gone (a database restored without
      // its exports/ folder) is a 404, not a 200 that breaks off
      let fd: number;
      try {
        fd = openSync(join(dailyDir(d.dataDir, ledgerId, day), entry.name), 'r');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw notFound('change set file', `${day}/${file}`);
        throw err;
      }
      return { entry, stream: createReadStream('', { fd }) };
    },
  };
}
