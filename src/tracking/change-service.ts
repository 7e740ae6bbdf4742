import type { Cursors, Page } from '../cursor.ts';
import { isoZ } from '../clock.ts';
import { badRequest, type FieldError, notFound } from '../errors.ts';
import type { ContactsRepo } from '../ledger/contacts-repo.ts';
import type { Contact } from '../ledger/model.ts';
import type { LedgersRepo } from '../ledger/ledgers-repo.ts';
import { ledgerLookup } from '../ledger/require-ledger.ts';
import type { Db } from '../storage/db.ts';
import type { ChangesRepo } from './changes-repo.ts';
import type { Change, ChangeType } from './model.ts';

export type ChangeService = ReturnType<typeof createChangeService>;

/** Change history: per contact (newest first) and the ledger-wide feed (in recording order). */
export function createChangeService(d: { ledgers: LedgersRepo; contacts: ContactsRepo; changes: ChangesRepo; cursors: Cursors; db: Db }) {
  const requireLedger = ledgerLookup(d.ledgers);
  /** Cuts a `limit + 1` query result into a page; `sealAt` makes the cursor after a change's seq. */
  const page = (rows: Change[], limit: number, sealAt: (seq: number) => string): Page<Change> =>
    rows.length > limit ? { items: rows.slice(0, limit), nextCursor: sealAt(rows[limit - 1]!.seq) } : { items: rows, nextCursor: null };
  return {
    ofContact(orgId: string, ledgerId: string, contactId: string, limit: number, cursor?: string): Page<Change> {
      requireLedger(orgId, ledgerId);
      if (!d.contacts.findContact(ledgerId, contactId)) throw notFound('contact', contactId);
      const list = `contact-changes:${contactId}`;
      const before = cursor === undefined ? undefined : (d.cursors.decode(cursor, list, ['n'])[0] as number);
      return page(d.changes.listOfContact(contactId, limit + 1, before), limit, (seq) => d.cursors.encode(list, [seq]));
    },
    /**
     * A cursor continues the same feed: it carries the `since` and `type` it was made under, so a
     * client may send it alone. Given beside it, they must be the cursor's own: a cursor of one
     * feed read as another would skip or repeat changes, so that is a 400 naming what differs.
     * Besides `nextCursor` (null on the last page, as every list), the feed is read as a log:
     * `resumeCursor` is where this page ends — after its last change, or where it started when it
     * is empty — so a client that read to the end keeps it and later gets exactly the changes
     * recorded since. A feed started by `since` first lets a write in flight end, so that it
     * begins after every change detected before the request (Db.writesInFlightSettled).
     */
    async ofLedger(orgId: string, ledgerId: string, opts: { since?: number; type?: ChangeType; limit: number; cursor?: string; withContacts?: boolean }): Promise<Page<Change> & { resumeCursor: string; contacts?: Map<string, Contact> }> {
      requireLedger(orgId, ledgerId);
      if (opts.cursor === undefined && opts.since !== undefined) await d.db.writesInFlightSettled();
      const key = `ledger-feed:${ledgerId}`;
      let feed = { since: opts.since, type: opts.type };
      let after = 0;
      if (opts.cursor !== undefined) {
        const held = openFeedCursor(opts.cursor, ledgerId, feed);
        feed = { since: held.since, type: held.type };
        after = held.after;
      } else if (opts.since !== undefined) {
        const first = d.changes.firstSeqSince(ledgerId, opts.since);
        // nothing detected since then yet: the feed starts after every change of the ledger so far
        after = first === null ? d.changes.lastSeqOfLedger(ledgerId) : first - 1;
      }
      const sealAt = (seq: number) => d.cursors.encode(key, [seq, feed.type ?? '', feed.since ?? null]);
      const out = page(d.changes.listOfLedger(ledgerId, { ...feed, afterSeq: after, limit: opts.limit + 1 }), opts.limit, sealAt);
      return { ...out, resumeCursor: sealAt(out.items.at(-1)?.seq ?? after), ...(opts.withContacts ? { contacts: contactsOf(ledgerId, out.items) } : {}) };
    },
  };

  /**
   * The contacts of a page of changes as they are now, by id (`include=contact`): one look-up by
   * primary key a contact, in the same turn as the page. A contact deleted after the page was read
   * (its changes go with it) is missing from the map.
   */
  function contactsOf(ledgerId: string, changes: Change[]): Map<string, Contact> {
    const found = new Map<string, Contact>();
    for (const { contactId } of changes) {
      if (found.has(contactId)) continue;
      const c = d.contacts.findContact(ledgerId, contactId);
      if (c) found.set(contactId, c);
    }
    return found;
  }

  /**
   * The position and filters a feed cursor holds, checked against the filters sent beside it.
   * Cursors issued before they carried their filters (label `ledger-changes:<ledger>:<type>:<since>`,
   * the seq alone) are still read, with the filters the client repeats as it had to then.
   */
  function openFeedCursor(cursor: string, ledgerId: string, sent: { since?: number; type?: ChangeType }): { after: number; since?: number; type?: ChangeType } {
    let values;
    try {
      values = d.cursors.decode(cursor, `ledger-feed:${ledgerId}`, ['n', 's', 'n?']);
    } catch (err) {
      try {
        const [after] = d.cursors.decode(cursor, `ledger-changes:${ledgerId}:${sent.type ?? ''}:${sent.since ?? ''}`, ['n']);
        return { after: after as number, ...sent };
      } catch {
        throw err;
      }
    }
    const [after, type, since] = values as [number, string, number | null];
    const held = { type: type === '' ? undefined : (type as ChangeType), since: since ?? undefined };
    const differs: FieldError[] = [];
    if (sent.type !== undefined && sent.type !== held.type) differs.push({ path: 'type', message: held.type ? `the cursor continues the feed of type=${held.type}` : 'the cursor continues the feed of every type' });
    if (sent.since !== undefined && sent.since !== held.since) differs.push({ path: 'since', message: held.since !== undefined ? `the cursor continues the feed since ${isoZ(held.since)}` : 'the cursor continues the feed without since' });
    if (differs.length) throw badRequest('invalid_cursor', 'cursor was made for another type or since; send it alone (it carries them) or with the same ones.', differs);
    return { after, ...held };
  }
}
