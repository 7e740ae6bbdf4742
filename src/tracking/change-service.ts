import type { Cursors, Page } from '../cursor.ts';
import { notFound } from '../errors.ts';
import type { ContactsRepo } from '../ledger/contacts-repo.ts';
import type { LedgersRepo } from '../ledger/ledgers-repo.ts';
import { ledgerLookup } from '../ledger/require-ledger.ts';
import type { ChangesRepo } from './changes-repo.ts';
import type { Change, ChangeType } from './model.ts';

export type ChangeService = ReturnType<typeof createChangeService>;

/** Change history: per contact (newest first) and the ledger-wide feed (in recording order). */
export function createChangeService(d: { ledgers: LedgersRepo; contacts: ContactsRepo; changes: ChangesRepo; cursors: Cursors }) {
  const requireLedger = ledgerLookup(d.ledgers);
  const page = (rows: Change[], limit: number, key: string): Page<Change> =>
    rows.length > limit ? { items: rows.slice(0, limit), nextCursor: d.cursors.encode(key, [rows[limit - 1]!.seq]) } : { items: rows, nextCursor: null };
  return {
    ofContact(orgId: string, ledgerId: string, contactId: string, limit: number, cursor?: string): Page<Change> {
      requireLedger(orgId, ledgerId);
      if (!d.contacts.findContact(ledgerId, contactId)) throw notFound('contact', contactId);
      const list = `contact-changes:${contactId}`;
      const before = cursor === undefined ? undefined : (d.cursors.decode(cursor, list, ['n'])[0] as number);
      return page(d.changes.listOfContact(contactId, limit + 1, before), limit, list);
    },
    /**
     * `since` and `type` are part of the cursor's meaning: a cursor continues the same feed. Besides
     * `nextCursor` (null on the last page, as every list), the feed is read as a log: `resumeCursor`
     * is where this page ends — after its last change, or where it started when it is empty — so a
     * client that read to the end keeps it and later gets exactly the changes recorded since.
     */
    ofLedger(orgId: string, ledgerId: string, opts: { since?: number; type?: ChangeType; limit: number; cursor?: string }): Page<Change> & { resumeCursor: string } {
      requireLedger(orgId, ledgerId);
      const key = `ledger-changes:${ledgerId}:${opts.type ?? ''}:${opts.since ?? ''}`;
      let after = opts.cursor === undefined ? 0 : (d.cursors.decode(opts.cursor, key, ['n'])[0] as number);
      if (opts.cursor === undefined && opts.since !== undefined) {
        const first = d.changes.firstSeqSince(ledgerId, opts.since);
        // nothing detected since then yet: the feed starts after every change of the ledger so far
        after = first === null ? d.changes.lastSeqOfLedger(ledgerId) : first - 1;
      }
      const out = page(d.changes.listOfLedger(ledgerId, { since: opts.since, type: opts.type, afterSeq: after, limit: opts.limit + 1 }), opts.limit, key);
      return { ...out, resumeCursor: d.cursors.encode(key, [out.items.at(-1)?.seq ?? after]) };
    },
  };
}
