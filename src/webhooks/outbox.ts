import { isoZ } from '../clock.ts';
import { newId } from '../ids.ts';
import type { Contact, ImportJob } from '../ledger/model.ts';
import { ledgerUrl, presentContact, presentImport } from '../ledger/presenters.ts';
import type { Change } from '../tracking/model.ts';
import { presentChange } from '../tracking/presenters.ts';
import type { Clock } from '../clock.ts';
import type { DeliveryType, Webhook, WebhookEvent } from './model.ts';
import type { WebhooksRepo } from './webhooks-repo.ts';

/** Attempts of an event delivery: the first one and the six retries of RETRY_DELAYS_MS. */
export const MAX_ATTEMPTS = 7;
/** A ping is tried once: it answers "does the receiver work now?". */
export const PING_ATTEMPTS = 1;

export type Outbox = ReturnType<typeof createOutbox>;

/**
 * The outbox (SPEC §6): a delivery row per (event, matching webhook), written inside the
 * transaction of the change or of the import's completion, so that an event exists exactly when
 * its cause was committed. Sending is the dispatcher's job; `kick` wakes it after the commit.
 */
export function createOutbox(d: {
  repo: WebhooksRepo;
  clock: Clock;
  baseUrl: string;
  kick: () => void;
  /**
   * For an outbox on a connection whose thread does not change webhooks (the bulk thread's, while
   * the main thread's service changes them): the number of the transaction running now
   * (`Db.writes`). Whether any webhook is enabled is then read again once in each transaction that
   * writes an event, instead of when the service calls refresh().
   */
  currentTx?: () => number;
}) {
  // Most installations have no webhook: then a change costs one boolean test. Refreshed by the
  // service after every change to webhooks; a stale `true` only costs a query.
  let anyEnabled = d.repo.countEnabledWebhooks() > 0;
  let readInTx = d.currentTx?.();
  let kickPending = false;

  /** Wakes the dispatcher once the current (synchronous) transaction has committed. */
  function kickAfterCommit(): void {
    if (kickPending) return;
    kickPending = true;
    setImmediate(() => {
      kickPending = false;
      d.kick();
    });
  }

  /**
   * Writes one event for every enabled webhook of the ledger's organization that wants it. `at` is
   * the event's time (its `createdAt`): a change's `detectedAt`, an import's `finishedAt`, so that
   * a receiver may take either for when it happened (a feed chunk's changes share one detection
   * time, which the event used to miss by up to the chunk's length); now when left out.
   */
  function emit(ledgerId: string, type: WebhookEvent, data: () => Record<string, unknown>, at?: number): void {
    if (d.currentTx && readInTx !== d.currentTx()) {
      readInTx = d.currentTx();
      anyEnabled = d.repo.countEnabledWebhooks() > 0;
    }
    if (!anyEnabled) return;
    const targets = d.repo.listEnabledForLedger(ledgerId).filter((w) => w.events.includes(type) && (w.ledgerIds === null || w.ledgerIds.includes(ledgerId)));
    if (!targets.length) return;
    const now = d.clock.now();
    const eventId = newId('evt');
    const payload = JSON.stringify({ id: eventId, type, createdAt: isoZ(at ?? now), orgId: targets[0]!.orgId, ledgerId, data: data() });
    for (const w of targets) d.repo.insertDelivery({ id: newId('dlv'), webhookId: w.id, eventId, type, payload, maxAttempts: MAX_ATTEMPTS, now });
    kickAfterCommit();
  }

  return {
    /** Re-reads whether any webhook is enabled (after webhooks were changed). */
    refresh(): void {
      anyEnabled = d.repo.countEnabledWebhooks() > 0;
    },
    /** A tracking ChangeListener: `contact.job_changed` / `contact.info_changed`, inside the change's transaction. */
    changed(change: Change, contact: Contact): void {
      emit(change.ledgerId, change.type === 'job' ? 'contact.job_changed' : 'contact.info_changed', () => ({ contact: presentContact(contact), change: presentChange(change) }), change.detectedAt);
    },
    /** An import listener: `import.completed` (completed or failed), inside the job's last transaction. */
    importFinished(imp: ImportJob): void {
      emit(imp.ledgerId, 'import.completed', () => ({ import: presentImport(imp, ledgerUrl(d.baseUrl, imp.orgId, imp.ledgerId)) }), imp.finishedAt ?? undefined);
    },
    /** A test ping for one webhook (sent even while it is disabled); returns the delivery id. */
    ping(w: Webhook): string {
      const now = d.clock.now();
      const id = newId('dlv');
      const eventId = newId('evt');
      const type: DeliveryType = 'ping';
      const payload = JSON.stringify({ id: eventId, type, createdAt: isoZ(now), orgId: w.orgId, ledgerId: null, data: { webhook: { id: w.id, events: w.events, ledgerIds: w.ledgerIds } } });
      d.repo.insertDelivery({ id, webhookId: w.id, eventId, type, payload, maxAttempts: PING_ATTEMPTS, now });
      kickAfterCommit();
      return id;
    },
  };
}
