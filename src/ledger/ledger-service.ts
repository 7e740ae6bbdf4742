import { unlinkSync } from 'node:fs';
import type { Clock } from '../clock.ts';
import type { Cursors, Page } from '../cursor.ts';
import type { Audit } from '../identity/audit.ts';
import type { Caller } from '../identity/model.ts';
import type { OrgsRepo } from '../identity/orgs-repo.ts';
import { newId } from '../ids.ts';
import { deleteInChunks, type DeleteStep } from '../jobs/chunk-pacing.ts';
import type { Queue } from '../jobs/queue.ts';
import { FINISHED_JOB_RETENTION_MS, type Runner } from '../jobs/scheduler.ts';
import type { Db } from '../storage/db.ts';
import type { ContactsRepo } from './contacts-repo.ts';
import type { ImportsRepo } from './imports-repo.ts';
import type { LedgersRepo } from './ledgers-repo.ts';
import type { Ledger, LedgerDataOwner, LedgerReferrer, OrgDataOwner } from './model.ts';
import { ledgerLookup } from './require-ledger.ts';

export const PURGE_LEDGER = 'ledger.purge';
export const PURGE_ORG = 'org.purge';

export interface LedgerDeps {
  db: Db;
  clock: Clock;
  queue: Queue;
  audit: Audit;
  ledgers: LedgersRepo;
  contacts: ContactsRepo;
  imports: ImportsRepo;
  orgs: OrgsRepo;
  kick: () => void;
  cursors: Cursors;
  /** What other modules keep per ledger, purged with it. */
  owners?: LedgerDataOwner[];
  /** What other modules keep per organization (audit log, webhook deliveries), purged before its row. */
  orgOwners?: OrgDataOwner[];
  /** What other modules keep that names a ledger (webhooks' ledgerIds), told when it is deleted. */
  referrers?: LedgerReferrer[];
}

export type LedgerService = ReturnType<typeof createLedgerService>;

/** Ledgers (SPEC §4): CRUD, and deletion as "hide now, purge in the background". */
export function createLedgerService(d: LedgerDeps) {
  const requireLedger = ledgerLookup(d.ledgers);

  /**
   * Deletes a purged ledger's rows in chunks sized by their measured cost (jobs/chunk-pacing.ts):
   * contacts, then what other modules keep (change history), then imports with their rejected
   * rows. Returns false when asked to stop; the job then starts over from what is left.
   */
  async function purgeLedgerRows(ledgerId: string, checkpoint: () => void, stopping: () => boolean): Promise<boolean> {
    const steps: DeleteStep[] = [
      (n) => d.contacts.purgeContacts(ledgerId, n),
      ...(d.owners ?? []).map((owner): DeleteStep => (n) => owner.purgeRows(ledgerId, n)),
      (n) => d.imports.purgeImports(ledgerId, n),
    ];
    return (await deleteInChunks(d.db, steps, { inTx: checkpoint, stopping })).done;
  }

  /** What an organization keeps besides its ledgers, deleted in chunks before its row (which would take it along at once). */
  async function purgeOrgRows(orgId: string, checkpoint: () => void, stopping: () => boolean): Promise<boolean> {
    const steps = (d.orgOwners ?? []).map((owner): DeleteStep => (n) => owner.purgeOrgRows(orgId, n));
    return (await deleteInChunks(d.db, steps, { inTx: checkpoint, stopping })).done;
  }

  /** After a ledger's rows are gone: its uploads, and the files other modules keep for it. */
  const removeFiles = (ledgerId: string, uploads: string[]) => {
    for (const f of uploads) {
      try {
        unlinkSync(f);
      } catch {
        /* already gone */
      }
    }
    for (const owner of d.owners ?? []) owner.removeFiles(ledgerId);
  };

  const runners: Record<string, Runner> = {
    [PURGE_LEDGER]: {
      pruneFinishedAfterMs: FINISHED_JOB_RETENTION_MS,
      async run(lease, ctl) {
        const { ledgerId } = JSON.parse(lease.job.payload ?? '{}') as { ledgerId: string };
        const files = d.imports.listFilesOfLedger(ledgerId);
        if (!(await purgeLedgerRows(ledgerId, () => lease.checkpoint(), () => ctl.stopping))) return 'stopped';
        d.db.tx(() => {
          d.ledgers.purgeLedger(ledgerId);
          lease.complete();
        });
        removeFiles(ledgerId, files);
        return 'done';
      },
    },
    [PURGE_ORG]: {
      pruneFinishedAfterMs: FINISHED_JOB_RETENTION_MS,
      async run(lease, ctl) {
        const { orgId } = JSON.parse(lease.job.payload ?? '{}') as { orgId: string };
        for (const ledgerId of d.ledgers.listAllLedgerIdsOfOrg(orgId)) {
          const files = d.imports.listFilesOfLedger(ledgerId);
          d.db.tx(() => d.ledgers.markLedgerDeleted(ledgerId, d.clock.now()));
          if (!(await purgeLedgerRows(ledgerId, () => lease.checkpoint(), () => ctl.stopping))) return 'stopped';
          d.db.tx(() => d.ledgers.purgeLedger(ledgerId));
          removeFiles(ledgerId, files);
        }
        if (!(await purgeOrgRows(orgId, () => lease.checkpoint(), () => ctl.stopping))) return 'stopped';
        d.db.tx(() => {
          d.orgs.purgeOrg(orgId);
          lease.complete();
        });
        return 'done';
      },
    },
  };

  return {
    runners,
    requireLedger,
    /** Called inside the transaction that deletes an organization. */
    scheduleOrgPurge(orgId: string): void {
      d.ledgers.markOrgLedgersDeleted(orgId, d.clock.now());
      d.queue.enqueue(newId('job'), PURGE_ORG, { payload: { orgId }, maxAttempts: 100 });
      setImmediate(d.kick);
    },
    list(orgId: string, limit: number, cursor?: string): Page<Ledger> {
      const list = `ledgers:${orgId}`;
      return d.cursors.toPage(d.ledgers.listLedgers(orgId, limit, d.cursors.decodeKeyset(cursor, list)), limit, list, (l) => [l.createdAt, l.id]);
    },
    get: requireLedger,
    create(by: Caller, orgId: string, input: { name: string; description?: string | null }): Ledger {
      return d.db.tx(() => {
        const now = d.clock.now();
        const ledger: Ledger = { id: newId('l'), orgId, name: input.name, description: input.description ?? '', contactCount: 0, createdAt: now, updatedAt: now };
        d.ledgers.insertLedger(ledger);
        d.audit.record(by, { orgId, action: 'ledger.created', target: { type: 'ledger', id: ledger.id }, data: { name: ledger.name } });
        return ledger;
      });
    },
    update(by: Caller, orgId: string, ledgerId: string, patch: { name?: string; description?: string | null }): Ledger {
      return d.db.tx(() => {
        const l = requireLedger(orgId, ledgerId);
        const next = { ...l, name: patch.name ?? l.name, description: patch.description === null ? '' : (patch.description ?? l.description), updatedAt: d.clock.now() };
        if (next.name === l.name && next.description === l.description) return l; // nothing changes: not updated, nothing audited
        d.ledgers.updateLedger(next);
        d.audit.record(by, { orgId, action: 'ledger.updated', target: { type: 'ledger', id: ledgerId }, data: { ...(patch.name !== undefined ? { name: { from: l.name, to: next.name } } : {}), ...(patch.description !== undefined ? { description: { from: l.description, to: next.description } } : {}) } });
        return next;
      });
    },
    /** Hidden at once (404 from now on); contacts, imports and changes are purged in the background. */
    remove(by: Caller, orgId: string, ledgerId: string): void {
      d.db.tx(() => {
        const l = requireLedger(orgId, ledgerId);
        d.ledgers.markLedgerDeleted(ledgerId, d.clock.now());
        d.queue.enqueue(newId('job'), PURGE_LEDGER, { payload: { ledgerId }, maxAttempts: 100 });
        d.audit.record(by, { orgId, action: 'ledger.deleted', target: { type: 'ledger', id: ledgerId }, data: { name: l.name, contactCount: l.contactCount } });
        for (const r of d.referrers ?? []) r.forgetLedger(by, orgId, ledgerId);
      });
      d.kick();
    },
  };
}
