import { notFound } from '../errors.ts';
import type { LedgersRepo } from './ledgers-repo.ts';
import type { Ledger } from './model.ts';

/**
 * The ledger named in a path, when it exists, is not being deleted and belongs to the
 * organization in the same path; 404 otherwise (also for another tenant's ledger, SPEC §2).
 */
export const ledgerLookup =
  (ledgers: LedgersRepo) =>
  (orgId: string, ledgerId: string): Ledger => {
    const l = ledgers.findLedger(orgId, ledgerId);
    if (!l) throw notFound('ledger', ledgerId);
    return l;
  };
