import type { Clock } from '../clock.ts';
import type { Cursors, Page } from '../cursor.ts';
import { AppError, conflict, invalid, notFound } from '../errors.ts';
import type { Audit } from '../identity/audit.ts';
import type { Caller } from '../identity/model.ts';
import { newId } from '../ids.ts';
import type { Queue } from '../jobs/queue.ts';
import type { LedgersRepo } from '../ledger/ledgers-repo.ts';
import type { Db } from '../storage/db.ts';
import type { Delivery, DeliveryStatus, ShownDelivery, Webhook, WebhookEvent } from './model.ts';
import type { Outbox } from './outbox.ts';
import { newSigningSecret } from './signing.ts';
import { checkWebhookUrl, withoutQuery } from './url-policy.ts';
import type { WebhooksRepo } from './webhooks-repo.ts';

/** The job that deletes a deleted webhook's deliveries in chunks, then its row (src/webhooks/index.ts). */
export const PURGE_WEBHOOK = 'webhook.purge';

/**
 * The job that brings a webhook's retries forward once its URL or token changed or it was enabled
 * again: the attempts that failed were made against what was wrong (src/webhooks/index.ts).
 */
export const RETRIES_FORWARD = 'webhook.retries_forward';

/** The delivery as shown: held while its webhook is disabled (pings are sent anyway). */
const shown = (w: Webhook, x: Delivery): ShownDelivery => ({ ...x, held: !w.enabled && x.status === 'pending' && x.type !== 'ping' });

/** Webhooks one organization may have (each change fans out to every one of them). */
export const MAX_WEBHOOKS_PER_ORG = 50;

export interface WebhookInput {
  url: string;
  events: WebhookEvent[];
  ledgerIds?: string[] | null;
  token?: string | null;
  enabled?: boolean;
}

export type WebhookPatch = Partial<WebhookInput>;

/** A webhook together with its signing secret, which exists only in this answer. */
export interface WebhookWithSecret {
  webhook: Webhook;
  secret: string;
}

export type WebhookService = ReturnType<typeof createWebhookService>;

/** Webhook administration (SPEC §6): CRUD, secret rotation, test pings and the delivery log. */
export function createWebhookService(d: {
  db: Db;
  clock: Clock;
  repo: WebhooksRepo;
  ledgers: LedgersRepo;
  audit: Audit;
  outbox: Outbox;
  queue: Queue;
  kick: () => void;
  allowHosts: readonly string[];
  allowLocal: boolean;
  cursors: Cursors;
  /** A webhook's URL or token changed, or it was enabled again (the dispatcher retries its attempts in flight at once). */
  onMended?: (webhookId: string) => void;
}) {
  /** 404 unless the webhook exists and belongs to the organization of the path. */
  const requireWebhook = (orgId: string, id: string): Webhook => {
    const w = d.repo.findWebhook(id);
    if (!w || w.orgId !== orgId) throw notFound('webhook', id);
    return w;
  };

  const checkUrl = (url: string): string => {
    const v = checkWebhookUrl(url, d.allowHosts, d.allowLocal);
    if (!v.ok) {
      const message = `url ${v.reason}`;
      throw new AppError(422, v.code === 'host_not_allowed' ? 'webhook_host_not_allowed' : 'validation_failed', `${message}.`, { errors: [{ path: 'url', message: v.reason }] });
    }
    return v.url;
  };

  /** A webhook that would be enabled naming no ledger: it would report nothing (422). */
  const noLedger = () =>
    invalid('ledgerIds must name at least one ledger, or be null for every ledger ([] only while the webhook is disabled).', [{ path: 'ledgerIds', message: 'must name at least one ledger (or be null for every ledger)' }]);

  /** Every id must name a live ledger of the organization (422 naming the bad ones). */
  const checkLedgers = (orgId: string, ids: string[] | null | undefined): string[] | null => {
    if (ids === undefined || ids === null) return null;
    const errors = ids.flatMap((id, i) => (d.ledgers.findLedger(orgId, id) ? [] : [{ path: `ledgerIds.${i}`, message: `no ledger ${id} in this organization` }]));
    if (errors.length) throw invalid(`ledgerIds: ${errors.map((e) => e.message).join('; ')}.`, errors);
    return [...new Set(ids)];
  };

  /** The audit entry of a webhook change: each field that changed, from and to (a replaced token only as "replaced"). */
  const recordUpdate = (by: Caller, w: Webhook, next: Webhook, tokenReplaced: boolean) => {
    const before = auditView(w);
    const after = auditView(next);
    const changes: Record<string, unknown> = {};
    for (const k of Object.keys(after) as (keyof typeof after)[]) {
      if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) changes[k] = { from: before[k], to: after[k] };
    }
    // a change of the query alone: the URL changed, though both read the same with their queries left out
    if (w.url !== next.url && !changes.url) changes.url = { from: before.url, to: after.url, queryChanged: true };
    if (tokenReplaced) changes.token = 'replaced';
    d.audit.record(by, { orgId: w.orgId, action: 'webhook.updated', target: { type: 'webhook', id: w.id }, data: changes });
  };

  const who = (by: Caller) => (by.actor.type === 'user' ? by.actor.email : by.actor.name);

  /**
   * What the audit log says about a webhook: never its token or secret, nor its URL's query, where
   * receivers often take their credential (`?key=…`, a security tester's case): the audit log keeps
   * the URL after the webhook changed or went, for every admin to read. `?…` says there was one.
   */
  const auditView = (w: Webhook) => ({ url: withoutQuery(w.url), events: w.events, ledgerIds: w.ledgerIds, enabled: w.enabled, hasToken: w.token !== null });

  return {
    requireWebhook,
    list(orgId: string, limit: number, cursor?: string): Page<Webhook> {
      const list = `webhooks:${orgId}`;
      return d.cursors.toPage(d.repo.listWebhooks(orgId, limit, d.cursors.decodeKeyset(cursor, list)), limit, list, (w) => [w.createdAt, w.id]);
    },
    get: requireWebhook,
    create(by: Caller, orgId: string, input: WebhookInput): WebhookWithSecret {
      const url = checkUrl(input.url);
      const out = d.db.tx(() => {
        const ledgerIds = checkLedgers(orgId, input.ledgerIds);
        if (d.repo.countWebhooksOfOrg(orgId) >= MAX_WEBHOOKS_PER_ORG) throw conflict('too_many_webhooks', `An organization can have at most ${MAX_WEBHOOKS_PER_ORG} webhooks; delete one first.`);
        const now = d.clock.now();
        const enabled = input.enabled ?? true;
        if (enabled && ledgerIds?.length === 0) throw noLedger();
        const secret = newSigningSecret();
        const w: Webhook = {
          id: newId('wh'),
          orgId,
          url,
          events: [...new Set(input.events)],
          ledgerIds,
          token: input.token ?? null,
          secret,
          enabled,
          disabledReason: enabled ? null : `disabled by ${who(by)}`,
          disabledAt: enabled ? null : now,
          failingSince: null,
          lastSuccessAt: null,
          createdBy: by.actor.id,
          createdAt: now,
          updatedAt: now,
        };
        d.repo.insertWebhook(w);
        d.audit.record(by, { orgId, action: 'webhook.created', target: { type: 'webhook', id: w.id }, data: auditView(w) });
        return { webhook: w, secret };
      });
      d.outbox.refresh();
      return out;
    },
    update(by: Caller, orgId: string, id: string, patch: WebhookPatch): Webhook {
      const url = patch.url === undefined ? undefined : checkUrl(patch.url);
      const out = d.db.tx(() => {
        const w = requireWebhook(orgId, id);
        const now = d.clock.now();
        const next: Webhook = { ...w, updatedAt: now };
        if (url !== undefined) next.url = url;
        if (patch.events !== undefined) next.events = [...new Set(patch.events)];
        if (patch.ledgerIds !== undefined) next.ledgerIds = checkLedgers(orgId, patch.ledgerIds);
        if (patch.token !== undefined) next.token = patch.token;
        if (patch.enabled === true && !w.enabled) {
          // a fresh start: held deliveries go out again, and the failure clock starts over
          Object.assign(next, { enabled: true, disabledReason: null, disabledAt: null, failingSince: null });
        } else if (patch.enabled === false && w.enabled) {
          Object.assign(next, { enabled: false, disabledReason: `disabled by ${who(by)}`, disabledAt: now });
        }
        if (next.enabled && next.ledgerIds?.length === 0) {
          if (patch.ledgerIds !== undefined) throw noLedger();
          throw invalid('ledgerIds: every ledger this webhook reported on was deleted; give the ledgers it should report on, or null for every ledger.', [{ path: 'ledgerIds', message: 'names no ledger (they were deleted)' }]);
        }
        d.repo.updateWebhook(next);
        recordUpdate(by, w, next, patch.token !== undefined && patch.token !== null && w.token !== null);
        // what made its retries fail may be mended: they go now, not hours later on their schedule
        const mended = next.url !== w.url || (patch.token !== undefined && patch.token !== w.token) || (next.enabled && !w.enabled);
        // express: short chunks that must not wait behind long imports and feeds
        if (mended && next.enabled) d.queue.enqueue(newId('job'), RETRIES_FORWARD, { payload: { webhookId: id, since: now }, maxAttempts: 100, lane: 'express' });
        return { webhook: next, mended };
      });
      d.outbox.refresh();
      if (out.mended) {
        d.onMended?.(id);
        d.kick();
      }
      return out.webhook;
    },
    /**
     * Deletes the webhook: gone at once (404, not counted in the limit, no new deliveries, none of
     * its pending ones sent); its delivery log is deleted in the background, in chunks, by a purge
     * job enqueued in the same transaction — a busy webhook has hundreds of thousands of
     * deliveries, too many for one request's transaction (docs/webhooks.md).
     */
    /**
     * A ledger of the organization is being deleted (inside that transaction, ledger-service.ts):
     * the webhooks naming it stop naming it, so that its id is not kept (a PATCH sending the list
     * back was refused for naming a deleted ledger). One left naming no ledger is disabled, saying
     * why (one disabled already says it too, before its earlier reason): enabled it would hear nothing, and null (every ledger) would widen what it hears. The
     * outbox is not refreshed: a webhook fewer enabled leaves its "any enabled" at a stale true,
     * which costs a query, never an event.
     */
    forgetLedger(by: Caller, orgId: string, ledgerId: string): void {
      const now = d.clock.now();
      for (const w of d.repo.listWebhooksNamingLedger(orgId, ledgerId)) {
        const next: Webhook = { ...w, ledgerIds: w.ledgerIds!.filter((id) => id !== ledgerId), updatedAt: now };
        if (next.ledgerIds!.length === 0) {
          const gone = `every ledger it reported on was deleted (the last: ${ledgerId})`;
          // one disabled before keeps when, and its reason after this one (enabling it asks for ledgers: a tester's case)
          Object.assign(next, w.enabled ? { enabled: false, disabledReason: gone, disabledAt: now } : { disabledReason: w.disabledReason ? `${gone}; before that: ${w.disabledReason}` : gone });
        }
        d.repo.updateWebhook(next);
        recordUpdate(by, w, next, false);
      }
    },
    remove(by: Caller, orgId: string, id: string): void {
      d.db.tx(() => {
        const w = requireWebhook(orgId, id);
        d.repo.markWebhookDeleted(id, d.clock.now());
        d.queue.enqueue(newId('job'), PURGE_WEBHOOK, { payload: { webhookId: id }, maxAttempts: 100 });
        d.audit.record(by, { orgId, action: 'webhook.deleted', target: { type: 'webhook', id }, data: auditView(w) });
      });
      d.outbox.refresh();
      d.kick();
    },
    /** A new signing secret, shown once; every attempt from now on is signed with it. */
    rotateSecret(by: Caller, orgId: string, id: string): WebhookWithSecret {
      return d.db.tx(() => {
        const w = requireWebhook(orgId, id);
        const next: Webhook = { ...w, secret: newSigningSecret(), updatedAt: d.clock.now() };
        d.repo.updateWebhook(next);
        d.audit.record(by, { orgId, action: 'webhook.secret_rotated', target: { type: 'webhook', id } });
        return { webhook: next, secret: next.secret };
      });
    },
    /** Queues a ping through the delivery path (even while the webhook is disabled). */
    ping(orgId: string, id: string): ShownDelivery {
      return d.db.tx(() => {
        const w = requireWebhook(orgId, id);
        return shown(w, d.repo.findDelivery(w.id, d.outbox.ping(w))!);
      });
    },
    deliveries(orgId: string, id: string, opts: { limit: number; cursor?: string; status?: DeliveryStatus }): Page<ShownDelivery> {
      const w = requireWebhook(orgId, id);
      const key = `deliveries:${w.id}:${opts.status ?? ''}`;
      const before = opts.cursor === undefined ? undefined : (d.cursors.decode(opts.cursor, key, ['n'])[0] as number);
      const rows = d.repo.listDeliveries(w.id, opts.limit, before, opts.status).map((x) => shown(w, x));
      return d.cursors.toPage(rows, opts.limit, key, (x) => [x.seq]);
    },
    delivery(orgId: string, id: string, deliveryId: string): ShownDelivery {
      const w = requireWebhook(orgId, id);
      const x = d.repo.findDelivery(w.id, deliveryId);
      if (!x) throw notFound('delivery', deliveryId);
      return shown(w, x);
    },
  };
}
