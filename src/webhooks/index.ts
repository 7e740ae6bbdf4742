import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Cursors } from '../cursor.ts';
import type { Audit } from '../identity/audit.ts';
import { deleteInChunks } from '../jobs/chunk-pacing.ts';
import type { Queue } from '../jobs/queue.ts';
import { FINISHED_JOB_RETENTION_MS, type Runner, type Scheduler } from '../jobs/scheduler.ts';
import type { ContactsRepo } from '../ledger/contacts-repo.ts';
import type { LedgersRepo } from '../ledger/ledgers-repo.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import { registerWebhookMetrics, type MetricsRegistry } from '../ops/metrics.ts';
import { VERSION } from '../version.ts';
import { createDispatcher } from './dispatcher.ts';
import type { DeliveryType } from './model.ts';
import { createOutbox } from './outbox.ts';
import { createSender, type Sender } from './sender.ts';
import { createWebhookService, PURGE_WEBHOOK, RETRIES_FORWARD } from './webhook-service.ts';
import { createWebhooksRepo } from './webhooks-repo.ts';

/** Delivered and failed deliveries are kept this long in the delivery log. */
export const DELIVERY_RETENTION_MS = 30 * 86_400_000;

export type WebhooksModule = ReturnType<typeof createWebhooksModule>;

/**
 * Wires webhooks (SPEC §6): the outbox written inside the transactions of changes and import
 * completions, the dispatcher run by the scheduler, and the administration service.
 */
export function createWebhooksModule(d: {
  db: Db;
  clock: Clock;
  log: Logger;
  config: Config;
  cursors: Cursors;
  audit: Audit;
  ledgers: LedgersRepo;
  /** Whether a contact is still in its ledger (an event about one deleted since is not sent). */
  contacts: Pick<ContactsRepo, 'findContact'>;
  metrics: MetricsRegistry;
  queue: Queue;
  /** Wakes the scheduler (a purge job was enqueued). */
  kick: () => void;
  sender?: Sender;
}) {
  const metrics = registerWebhookMetrics(d.metrics);
  /**
   * Whether the ledger, or the contact in it, a delivery's event is about was deleted since (it is
   * dropped, never sent: by the dispatcher when it comes due, by the nightly sweep before). A ping
   * is about nothing.
   */
  const aboutDeleted = (x: { type: DeliveryType; payload: string }): boolean => {
    if (x.type === 'ping') return false;
    const p = JSON.parse(x.payload) as { ledgerId?: string; data?: { contact?: { id?: string } } };
    if (p.ledgerId === undefined) return false;
    const contactId = p.data?.contact?.id;
    return !d.ledgers.isLive(p.ledgerId) || (contactId !== undefined && d.contacts.findContact(p.ledgerId, contactId) === undefined);
  };
  const repo = createWebhooksRepo(d.db);
  const log = d.log.child({ component: 'webhooks' });
  let kick = () => {};
  const outbox = createOutbox({ repo, clock: d.clock, kick: () => kick(), baseUrl: d.config.baseUrl });
  const dispatcher = createDispatcher({
    db: d.db,
    repo,
    clock: d.clock,
    log,
    audit: d.audit,
    sender: d.sender ?? createSender(`contact-ledger/${VERSION} (webhooks)`, { allowLocal: d.config.webhookAllowLocal }),
    timeoutMs: d.config.webhookTimeoutMs,
    allowHosts: d.config.webhookAllowHosts,
    allowLocal: d.config.webhookAllowLocal,
    onDisabled: () => outbox.refresh(),
    onAttempt: (outcome) => metrics.deliveries.inc({ outcome }),
    aboutDeleted,
  });
  kick = () => dispatcher.kick();
  const service = createWebhookService({ db: d.db, clock: d.clock, cursors: d.cursors, repo, ledgers: d.ledgers, audit: d.audit, outbox, queue: d.queue, kick: d.kick, allowHosts: d.config.webhookAllowHosts, allowLocal: d.config.webhookAllowLocal, onMended: (id) => dispatcher.mended(id) });

  /**
   * Forgets delivered and failed deliveries older than DELIVERY_RETENTION_MS, in chunks sized by
   * their cost (jobs/chunk-pacing.ts). Returns how many went.
   */
  async function prune(ctl: { stopping: boolean }): Promise<number> {
    const before = d.clock.now() - DELIVERY_RETENTION_MS;
    return (await deleteInChunks(d.db, [(n) => repo.pruneDeliveries(before, n)], { stopping: () => ctl.stopping })).deleted;
  }

  /**
   * Pending deliveries about contacts or ledgers deleted since, dropped before they come due: those
   * of a disabled webhook never come due, and the others may wait up to 12 hours for their retry,
   * quoting an erased person meanwhile (a tester's case). The dispatcher drops the ones that come
   * due first. Returns how many went.
   */
  async function sweepPending(ctl: { stopping: boolean }): Promise<number> {
    const sweep = repo.sweepPending(aboutDeleted, d.clock.now());
    await deleteInChunks(d.db, [sweep.step], { stopping: () => ctl.stopping });
    if (sweep.dropped()) {
      log.info({ dropped: sweep.dropped() }, 'pending deliveries about deleted contacts or ledgers dropped, not sent');
      metrics.deliveries.inc({ outcome: 'dropped' }, sweep.dropped());
    }
    return sweep.dropped();
  }

  const runners: Record<string, Runner> = {
    /**
     * A deleted webhook's purge: its deliveries in chunks paced like the other purges (each chunk
     * checkpoints the lease, so a stale worker is fenced off), then its row. Stopped or killed, the
     * job is claimed again and goes on with what is left.
     */
    [PURGE_WEBHOOK]: {
      pruneFinishedAfterMs: FINISHED_JOB_RETENTION_MS,
      async run(lease, ctl) {
        const { webhookId } = JSON.parse(lease.job.payload ?? '{}') as { webhookId: string };
        const { done } = await deleteInChunks(d.db, [(n) => repo.purgeWebhookDeliveries(webhookId, n)], { inTx: () => lease.checkpoint(), stopping: () => ctl.stopping });
        if (!done) return 'stopped';
        d.db.tx(() => {
          repo.deleteWebhook(webhookId);
          lease.complete();
        });
        return 'done';
      },
    },
    /**
     * A webhook's retries brought forward (its URL or token changed, or it was enabled again), in
     * chunks paced like the purges; stopped or killed, it is claimed again and walks once more
     * (a delivery already brought forward is due, not walked again).
     */
    [RETRIES_FORWARD]: {
      pruneFinishedAfterMs: FINISHED_JOB_RETENTION_MS,
      async run(lease, ctl) {
        const { webhookId, since } = JSON.parse(lease.job.payload ?? '{}') as { webhookId: string; since: number };
        const walk = repo.retriesForward(webhookId, since);
        const { done } = await deleteInChunks(d.db, [walk.step], { inTx: () => lease.checkpoint(), stopping: () => ctl.stopping });
        if (walk.moved()) dispatcher.kick();
        if (!done) return 'stopped';
        d.db.tx(() => lease.complete());
        if (walk.moved()) log.info({ webhook: webhookId, moved: walk.moved() }, 'retries brought forward: the webhook was mended');
        return 'done';
      },
    },
  };

  return {
    repo,
    runners,
    outbox,
    dispatcher,
    service,
    /** Wakes the dispatcher (after a test moved the clock, for instance). */
    kick: () => dispatcher.kick(),
    /** The dispatcher lives as one background task (restarted by the tick should it ever end); old deliveries are pruned nightly. */
    schedule(s: Scheduler): void {
      s.onStart('webhook-deliveries', (ctl) => dispatcher.run(ctl));
      s.every({ seconds: 5 }, 'webhook-deliveries', (ctl) => dispatcher.run(ctl));
      s.every('20 0 * * *', 'webhook-prune', async (ctl) => {
        await prune(ctl);
        if (!ctl.stopping) await sweepPending(ctl);
      });
    },
    prune,
    sweepPending,
    /** An organization's deliveries, deleted in chunks by its purge before its webhooks (ledger/ledger-service.ts). */
    orgData: { purgeOrgRows: (orgId: string, n: number): number => repo.purgeOrgDeliveries(orgId, n) },
  };
}
