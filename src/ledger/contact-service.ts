import type { Clock } from '../clock.ts';
import type { Cursors, Page } from '../cursor.ts';
import { notFound, tooLarge } from '../errors.ts';
import { canonicalJson } from '../exact-json.ts';
import type { Audit } from '../identity/audit.ts';
import type { Caller } from '../identity/model.ts';
import { emailKey } from '../normalize.ts';
import type { Db } from '../storage/db.ts';
import { foldForContains, SORTS, type ContactFilter, type ContactPosition, type ContactSort } from './contacts-list-repo.ts';
import { nextTurn } from '../event-loop.ts';
import { downloadPosition, positionOf, type ContactsRepo, type DownloadRow } from './contacts-repo.ts';
import type { LedgersRepo } from './ledgers-repo.ts';
import type { Contact, LedgerDataOwner } from './model.ts';
import { ledgerLookup } from './require-ledger.ts';

/** The most contact ids one bulk_delete takes (as many as one batch of contacts adds). */
export const MAX_BULK_DELETE = 1000;

export interface ContactServiceDeps {
  db: Db;
  clock: Clock;
  audit: Audit;
  ledgers: LedgersRepo;
  contacts: ContactsRepo;
  cursors: Cursors;
  /** What other modules keep per contact (change history): deleted with the contact, in its transaction. */
  owners?: LedgerDataOwner[];
}

export type ContactService = ReturnType<typeof createContactService>;

const CURSOR_KINDS: Record<ContactSort, 's' | 'n' | 'n?'> = {
  '+createdAt': 'n',
  '-createdAt': 'n',
  '+name': 's',
  '-name': 's',
  '-lastJobChangedAt': 'n?',
  '-lastInfoChangedAt': 'n?',
};

/**
 * The list a contact cursor belongs to: the ledger's contacts under one filter, in one sort. With
 * the filter in it, a cursor sent with other filters is a 400: it continued the other list from
 * its position and silently skipped what that list holds before it (seventeenth session).
 */
const listOf = (ledgerId: string, sort: ContactSort, filter: ContactFilter) => `contacts${sort}:${ledgerId}:${canonicalJson(asCompared(filter))}`;

/**
 * The filter as the list compares it: the case-insensitive ones (SPEC §4.2) folded, so a cursor
 * goes on with `company=co1` where `company=Co1` gave it — the same list (an API tester's case).
 */
function asCompared(filter: ContactFilter): ContactFilter {
  const out = { ...filter };
  for (const k of ['name', 'company', 'title'] as const) if (out[k] !== undefined) out[k] = foldForContains(out[k]);
  if (out.email !== undefined) out.email = emailKey(out.email);
  return out;
}

/** Cursor = the sort, the last row's sort value and seq, and whether the null tail was reached. */
function decodePosition(cursors: Cursors, ledgerId: string, cursor: string | undefined, sort: ContactSort, filter: ContactFilter): ContactPosition | undefined {
  if (cursor === undefined) return undefined;
  const [value, seq, nulls] = cursors.decode(cursor, listOf(ledgerId, sort, filter), [CURSOR_KINDS[sort], 'n', 'n']);
  return { value: value!, seq: seq as number, ...(nulls === 1 ? { nulls: true } : {}) };
}

const encodePosition = (cursors: Cursors, ledgerId: string, p: ContactPosition, sort: ContactSort, filter: ContactFilter) => cursors.encode(listOf(ledgerId, sort, filter), [p.value, p.seq, p.nulls ? 1 : 0]);

export const DOWNLOAD_PAGE = 1000;

/** Contacts of a ledger (SPEC §4): read, list with filters, delete, download. */
export function createContactService(d: ContactServiceDeps) {
  const requireLedger = ledgerLookup(d.ledgers);

  /** Deletes a contact of the ledger and what other modules keep about it; false when there is no such contact. */
  function deleteContact(ledgerId: string, contactId: string): boolean {
    if (!d.contacts.deleteContact(ledgerId, contactId)) return false;
    for (const owner of d.owners ?? []) owner.forgetContact(contactId);
    return true;
  }

  /**
   * A read of what changed or was created since a time ("since" filters: what a poller asks) first
   * lets a write in flight end (Db.writesInFlightSettled): its rows are stamped before they commit,
   * and a poller's next "since" would pass them. Other reads do not wait.
   */
  async function settleIfSince(filter: ContactFilter): Promise<void> {
    if (filter.lastJobChangedAt !== undefined || filter.lastInfoChangedAt !== undefined || filter.createdAfter !== undefined) await d.db.writesInFlightSettled();
  }

  async function page(ledgerId: string, filter: ContactFilter, sort: ContactSort, limit: number, after?: ContactPosition, signal?: AbortSignal): Promise<Page<Contact> & { last?: ContactPosition }> {
    await settleIfSince(filter);
    const rows = await d.contacts.listContacts(ledgerId, filter, sort, limit + 1, after, signal);
    if (rows.length <= limit) return { items: rows, nextCursor: null };
    const items = rows.slice(0, limit);
    const last = positionOf(items[items.length - 1]!, sort);
    return { items, nextCursor: encodePosition(d.cursors, ledgerId, last, sort, filter), last };
  }

  return {
    requireLedger,
    get(orgId: string, ledgerId: string, contactId: string): Contact {
      requireLedger(orgId, ledgerId);
      const c = d.contacts.findContact(ledgerId, contactId);
      if (!c) throw notFound('contact', contactId);
      return c;
    },

    /** A page of the list; `signal` (the client went away) stops a walk in steps (contacts-repo.ts `stepThrough`). */
    async list(orgId: string, ledgerId: string, filter: ContactFilter, sort: ContactSort, limit: number, cursor?: string, signal?: AbortSignal): Promise<Page<Contact>> {
      requireLedger(orgId, ledgerId);
      const { items, nextCursor } = await page(ledgerId, filter, sort, limit, decodePosition(d.cursors, ledgerId, cursor, sort, filter), signal);
      return { items, nextCursor };
    },

    async count(orgId: string, ledgerId: string, filter: ContactFilter, signal?: AbortSignal): Promise<number> {
      const l = requireLedger(orgId, ledgerId);
      if (Object.keys(filter).length === 0) return l.contactCount;
      await settleIfSince(filter);
      return await d.contacts.countContacts(ledgerId, filter, signal);
    },

    /**
     * What the download awaits before its answer starts, so that a write in flight that does not
     * end is a 503, not a 200 cut off after the header: with a "since", the writes in flight end
     * (settleIfSince); pages() then reads what they wrote.
     */
    readyToDownload: settleIfSince,

    /** Where a download given a list page's cursor starts; a cursor of another list is a 400 before the answer starts. */
    downloadStart: (ledgerId: string, filter: ContactFilter, sort: ContactSort, cursor?: string): ContactPosition | undefined => decodePosition(d.cursors, ledgerId, cursor, sort, filter),

    /**
     * Every matching contact for the download, page by page (keyset, no open statement between
     * pages: an open iterate() cursor would block writes on the connection and hold back
     * checkpoints, RELIABILITY.md L2). In an order contacts move in (a change time), the order of
     * one moment is read first and the rows by it (contacts-repo downloadOrder): a walk would lose
     * the contacts a change moves behind it.
     */
    async *pages(ledgerId: string, filter: ContactFilter, sort: ContactSort, signal?: AbortSignal, from: { after?: ContactPosition; limit?: number } = {}): AsyncGenerator<DownloadRow[]> {
      // SPEC §4.2: the list's `limit` and `cursor` apply to the download too — at most `limit`
      // contacts, starting where the list page of that cursor starts (downloadStart)
      let after = from.after;
      let left = from.limit ?? Infinity;
      const upTo = (rows: DownloadRow[]) => {
        const out = rows.length > left ? rows.slice(0, left) : rows;
        left -= out.length;
        return out;
      };
      if (SORTS[sort].moves) {
        const steps: (Float64Array | undefined)[] = await d.contacts.downloadOrder(ledgerId, filter, sort, signal, after, left);
        for (let n = 0; n < steps.length && left > 0; n++) {
          const seqs = steps[n]!;
          steps[n] = undefined; // sent: let it go
          for (let i = 0; i < seqs.length && left > 0; i += DOWNLOAD_PAGE) {
            if (n || i) await nextTurn();
            signal?.throwIfAborted();
            const rows = upTo(d.contacts.downloadRowsOf(ledgerId, filter, seqs.subarray(i, i + DOWNLOAD_PAGE)));
            if (rows.length) yield rows;
          }
        }
        return;
      }
      while (left > 0) {
        const rows = await d.contacts.listDownloadRows(ledgerId, filter, sort, Math.min(DOWNLOAD_PAGE, left), after, signal);
        const page = upTo(rows);
        if (page.length) yield page;
        if (rows.length < DOWNLOAD_PAGE || left === 0) return;
        after = downloadPosition(rows[rows.length - 1]!, sort);
        // a turn of the event loop between pages: a client that reads as fast as they come would
        // otherwise have every page made on promise callbacks alone, and no other request served
        // until the whole ledger was sent (a tester's case: 5.6 s for 852,000 contacts)
        await nextTurn();
      }
    },

    remove(by: Caller, orgId: string, ledgerId: string, contactId: string): void {
      d.db.tx(() => {
        requireLedger(orgId, ledgerId);
        if (!deleteContact(ledgerId, contactId)) throw notFound('contact', contactId);
        d.ledgers.addContactCount(ledgerId, -1);
        d.audit.record(by, { orgId, action: 'contact.deleted', target: { type: 'contact', id: contactId }, data: { ledgerId } });
      });
    },

    /**
     * Deletes the listed contacts of the ledger; ids not in it are skipped (counted out). An empty
     * list deletes nothing; more than MAX_BULK_DELETE ids are 413, as an oversized batch of contacts.
     */
    bulkDelete(by: Caller, orgId: string, ledgerId: string, contactIds: string[]): number {
      if (contactIds.length > MAX_BULK_DELETE) throw tooLarge(`At most ${MAX_BULK_DELETE} contact ids per call (${contactIds.length} sent); delete more in several calls.`);
      return d.db.tx(() => {
        requireLedger(orgId, ledgerId);
        if (!contactIds.length) return 0;
        const deleted = [...new Set(contactIds)].filter((id) => deleteContact(ledgerId, id));
        const n = deleted.length;
        if (n) d.ledgers.addContactCount(ledgerId, -n);
        // the ids deleted, as one delete's entry names its contact: which contacts an erasure removed
        // can be shown. A call that deleted nothing changed nothing, and is not audited (any editor
        // could fill the log with them, a security tester's case).
        if (n) d.audit.record(by, { orgId, action: 'contacts.deleted', target: { type: 'ledger', id: ledgerId }, data: { requested: contactIds.length, deleted: n, contactIds: deleted } });
        return n;
      });
    },
  };
}
