import type { Keyset } from '../cursor.ts';
import type { Db } from '../storage/db.ts';
import type { Attempt, ClaimedDelivery, Delivery, DeliveryStatus, DeliveryType, Webhook, WebhookEvent } from './model.ts';

interface WebhookRow {
  id: string;
  org_id: string;
  url: string;
  events: string;
  ledger_ids: string | null;
  token: string | null;
  secret: string;
  enabled: 0 | 1;
  disabled_reason: string | null;
  disabled_at: number | null;
  failing_since: number | null;
  last_success_at: number | null;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  orgId: r.org_id,
  url: r.url,
  events: JSON.parse(r.events) as WebhookEvent[],
  ledgerIds: r.ledger_ids === null ? null : (JSON.parse(r.ledger_ids) as string[]),
  token: r.token,
  secret: r.secret,
  enabled: r.enabled === 1,
  disabledReason: r.disabled_reason,
  disabledAt: r.disabled_at,
  failingSince: r.failing_since,
  lastSuccessAt: r.last_success_at,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toWebhookRow = (w: Webhook): WebhookRow => ({
  id: w.id,
  org_id: w.orgId,
  url: w.url,
  events: JSON.stringify(w.events),
  ledger_ids: w.ledgerIds === null ? null : JSON.stringify(w.ledgerIds),
  token: w.token,
  secret: w.secret,
  enabled: w.enabled ? 1 : 0,
  disabled_reason: w.disabledReason,
  disabled_at: w.disabledAt,
  failing_since: w.failingSince,
  last_success_at: w.lastSuccessAt,
  created_by: w.createdBy,
  created_at: w.createdAt,
  updated_at: w.updatedAt,
});

interface DeliveryRow {
  seq: number;
  id: string;
  webhook_id: string;
  event_id: string;
  type: DeliveryType;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  max_attempts: number;
  next_at: number;
  last_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  attempt_log: string;
  created_at: number;
  finished_at: number | null;
}

/** A pending delivery as the walks over them read it (retriesForward, sweepPending). */
type PendingRow = { seq: number; next_at: number; attempts: number; last_attempt_at: number | null; type: DeliveryType; payload: string };

const DELIVERY_COLUMNS =
  'seq, id, webhook_id, event_id, type, payload, status, attempts, max_attempts, next_at, last_attempt_at, last_status, last_error, attempt_log, created_at, finished_at';

const toDelivery = (r: DeliveryRow): Delivery => ({
  seq: r.seq,
  id: r.id,
  webhookId: r.webhook_id,
  eventId: r.event_id,
  type: r.type,
  payload: r.payload,
  status: r.status,
  attempts: r.attempts,
  maxAttempts: r.max_attempts,
  nextAt: r.next_at,
  lastAttemptAt: r.last_attempt_at,
  lastStatus: r.last_status,
  lastError: r.last_error,
  attemptLog: JSON.parse(r.attempt_log) as Attempt[],
  createdAt: r.created_at,
  finishedAt: r.finished_at,
});

export interface NewDelivery {
  id: string;
  webhookId: string;
  eventId: string;
  type: DeliveryType;
  payload: string;
  maxAttempts: number;
  now: number;
}

/** A webhook with something due: whose it is, where it goes and how it fares (the dispatcher's fairness limits). */
export interface DueWebhook {
  id: string;
  orgId: string;
  url: string;
  enabled: boolean;
  /** In good standing: it has delivered, and no attempt failed since its last success or its re-enabling (pings aside). */
  healthy: boolean;
}

export type WebhooksRepo = ReturnType<typeof createWebhooksRepo>;

/** Webhooks and their delivery outbox (SPEC §6). */
export function createWebhooksRepo(db: Db) {
  const q = {
    insert: db.raw.prepare(
      `INSERT INTO webhooks (id, org_id, url, events, ledger_ids, token, secret, enabled, disabled_reason, disabled_at, failing_since, last_success_at, created_by, created_at, updated_at)
       VALUES (@id, @org_id, @url, @events, @ledger_ids, @token, @secret, @enabled, @disabled_reason, @disabled_at, @failing_since, @last_success_at, @created_by, @created_at, @updated_at)`,
    ),
    update: db.raw.prepare(
      `UPDATE webhooks SET url = @url, events = @events, ledger_ids = @ledger_ids, token = @token, secret = @secret, enabled = @enabled,
              disabled_reason = @disabled_reason, disabled_at = @disabled_at, failing_since = @failing_since, updated_at = @updated_at
       WHERE id = @id`,
    ),
    // A deleted webhook (deleted_at set) is gone for every reader below; its purge job deletes its
    // deliveries in chunks, then the row (migration 0012).
    markDeleted: db.raw.prepare<[number, number, string]>('UPDATE webhooks SET deleted_at = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL'),
    remove: db.raw.prepare<[string]>('DELETE FROM webhooks WHERE id = ? AND deleted_at IS NOT NULL'),
    byId: db.raw.prepare<[string], WebhookRow>('SELECT * FROM webhooks WHERE id = ? AND deleted_at IS NULL'),
    first: db.raw.prepare<[string, number], WebhookRow>('SELECT * FROM webhooks WHERE org_id = ? AND deleted_at IS NULL ORDER BY created_at, id LIMIT ?'),
    after: db.raw.prepare<[string, number, number, string, number], WebhookRow>(
      'SELECT * FROM webhooks WHERE org_id = ? AND deleted_at IS NULL AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?',
    ),
    namingLedger: db.raw.prepare<[string, string], WebhookRow>(
      'SELECT * FROM webhooks WHERE org_id = ? AND deleted_at IS NULL AND ledger_ids IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(webhooks.ledger_ids) WHERE value = ?) ORDER BY created_at, id',
    ),
    countOfOrg: db.raw.prepare<[string], number>('SELECT count(*) FROM webhooks WHERE org_id = ? AND deleted_at IS NULL').pluck(),
    countEnabled: db.raw.prepare<[], number>('SELECT count(*) FROM webhooks WHERE enabled = 1 AND deleted_at IS NULL').pluck(),
    // The enabled webhooks that may hear about a live ledger of a live organization.
    ofLedger: db.raw.prepare<[string], WebhookRow>(
      `SELECT w.* FROM ledgers l JOIN orgs o ON o.id = l.org_id JOIN webhooks w ON w.org_id = l.org_id
       WHERE l.id = ? AND l.deleted_at IS NULL AND o.deleted_at IS NULL AND w.enabled = 1 AND w.deleted_at IS NULL`,
    ),
    succeeded: db.raw.prepare<[number, string]>('UPDATE webhooks SET failing_since = NULL, last_success_at = ? WHERE id = ? AND deleted_at IS NULL'),
    failed: db.raw.prepare<{ now: number; gap: number; id: string }, { failing_since: number; enabled: 0 | 1 }>(
      // A quiet spell ends a streak, unless an event's delivery failed for good in it before the
      // spell (every retry, ~17 hours): that says the receiver is down, not that it was once unlucky.
      `UPDATE webhooks SET failing_since = CASE
                WHEN failing_since IS NULL OR last_failed_at IS NULL THEN @now
                WHEN @now - last_failed_at > @gap AND NOT EXISTS (
                  SELECT 1 FROM webhook_deliveries d
                  WHERE d.webhook_id = webhooks.id AND d.status = 'failed' AND d.type <> 'ping'
                    AND d.finished_at BETWEEN webhooks.failing_since AND webhooks.last_failed_at) THEN @now
                ELSE failing_since END,
              last_failed_at = @now
       WHERE id = @id AND deleted_at IS NULL RETURNING failing_since, enabled`,
    ),
    lastFailedAt: db.raw.prepare<[string], number | null>('SELECT last_failed_at FROM webhooks WHERE id = ?').pluck(),
    disable: db.raw.prepare<[string, number, number, string]>(
      'UPDATE webhooks SET enabled = 0, disabled_reason = ?, disabled_at = ?, updated_at = ? WHERE id = ? AND enabled = 1 AND deleted_at IS NULL',
    ),

    insertDelivery: db.raw.prepare(
      `INSERT INTO webhook_deliveries (id, webhook_id, event_id, type, payload, status, max_attempts, next_at, created_at)
       VALUES (@id, @webhookId, @eventId, @type, @payload, 'pending', @maxAttempts, @now, @now)`,
    ),
    // Webhooks of live organizations with a delivery that is due and not held by anyone: any
    // delivery of an enabled webhook, only pings of a disabled one (its other deliveries are held).
    // Healthy: it has delivered, and is not failing now (failing_since, cleared by a success and by
    // re-enabling, which starts over; it says which of a success and a failure was recorded last
    // even when both have the same millisecond).
    dueWebhooks: db.raw.prepare<{ now: number }, { id: string; org_id: string; url: string; enabled: 0 | 1; healthy: 0 | 1 }>(
      `SELECT w.id, w.org_id, w.url, w.enabled,
              (w.last_success_at IS NOT NULL AND w.failing_since IS NULL) AS healthy
       FROM webhooks w JOIN orgs o ON o.id = w.org_id
       WHERE o.deleted_at IS NULL AND w.deleted_at IS NULL AND (
         (w.enabled = 1 AND EXISTS (SELECT 1 FROM webhook_deliveries d
            WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_at <= @now AND (d.lease_until IS NULL OR d.lease_until < @now)))
         OR EXISTS (SELECT 1 FROM webhook_deliveries p
            WHERE p.webhook_id = w.id AND p.status = 'pending' AND p.type = 'ping' AND p.next_at <= @now AND (p.lease_until IS NULL OR p.lease_until < @now)))`,
    ),
    // The webhook's next due delivery nobody holds, skipping those this process is sending.
    firstDue: db.raw.prepare<{ webhookId: string; now: number; skip: string }, string>(
      `SELECT id FROM webhook_deliveries
       WHERE webhook_id = @webhookId AND status = 'pending' AND next_at <= @now AND (lease_until IS NULL OR lease_until < @now)
         AND id NOT IN (SELECT value FROM json_each(@skip))
       ORDER BY next_at LIMIT 1`,
    ).pluck(),
    firstDuePing: db.raw.prepare<{ webhookId: string; now: number; skip: string }, string>(
      `SELECT id FROM webhook_deliveries
       WHERE webhook_id = @webhookId AND status = 'pending' AND type = 'ping' AND next_at <= @now AND (lease_until IS NULL OR lease_until < @now)
         AND id NOT IN (SELECT value FROM json_each(@skip))
       ORDER BY next_at LIMIT 1`,
    ).pluck(),
    claim: db.raw.prepare<{ id: string; now: number; until: number }, { id: string; webhook_id: string; type: DeliveryType; payload: string; attempts: number; max_attempts: number; lease_token: number }>(
      `UPDATE webhook_deliveries SET lease_until = @until, lease_token = lease_token + 1
       WHERE id = @id AND status = 'pending' AND next_at <= @now AND (lease_until IS NULL OR lease_until < @now)
       RETURNING id, webhook_id, type, payload, attempts, max_attempts, lease_token`,
    ),
    delivered: db.raw.prepare<{ id: string; token: number; now: number; finished: number; status: number; entry: string }>(
      `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_attempt_at = @now, last_status = @status,
              last_error = NULL, lease_until = NULL, finished_at = @finished, attempt_log = json_insert(attempt_log, '$[#]', json(@entry))
       WHERE id = @id AND lease_token = @token AND status = 'pending'`,
    ),
    attemptFailed: db.raw.prepare<{ id: string; token: number; now: number; finished: number; status: number | null; error: string; nextAt: number; entry: string }, { status: DeliveryStatus }>(
      `UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = @now, last_status = @status, last_error = @error, lease_until = NULL,
              status = CASE WHEN attempts + 1 >= max_attempts THEN 'failed' ELSE 'pending' END,
              finished_at = CASE WHEN attempts + 1 >= max_attempts THEN @finished END,
              next_at = @nextAt, attempt_log = json_insert(attempt_log, '$[#]', json(@entry))
       WHERE id = @id AND lease_token = @token AND status = 'pending'
       RETURNING status`,
    ),
    drop: db.raw.prepare<[string, number]>("DELETE FROM webhook_deliveries WHERE id = ? AND lease_token = ? AND status = 'pending'"),
    release: db.raw.prepare<[string, number]>("UPDATE webhook_deliveries SET lease_until = NULL WHERE id = ? AND lease_token = ? AND status = 'pending'"),
    expireAll: db.raw.prepare("UPDATE webhook_deliveries SET lease_until = NULL WHERE status = 'pending' AND lease_until IS NOT NULL"),
    deliveriesFirst: db.raw.prepare<[string, number], DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? ORDER BY seq DESC LIMIT ?`),
    deliveriesBefore: db.raw.prepare<[string, number, number], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
    ),
    deliveriesByStatusFirst: db.raw.prepare<[string, DeliveryStatus, number], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries INDEXED BY webhook_deliveries_by_status WHERE webhook_id = ? AND status = ? ORDER BY seq DESC LIMIT ?`,
    ),
    deliveriesByStatusBefore: db.raw.prepare<[string, DeliveryStatus, number, number], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries INDEXED BY webhook_deliveries_by_status WHERE webhook_id = ? AND status = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
    ),
    delivery: db.raw.prepare<[string, string], DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? AND id = ?`),
    // a webhook's pending deliveries after a point, in the order of the due index (retriesForward,
    // sweepPending): the rest of the point's due time, then the later ones — as two seeks, since
    // SQLite seeks a row value (next_at, seq) > (?, ?) by next_at alone and filters seq row by row
    // (a backlog brought forward shares one due time: every chunk read it all again, a reviewer measured)
    pendingAtAfter: db.raw.prepare<[string, number, number, number], PendingRow>(
      `SELECT seq, next_at, attempts, last_attempt_at, type, payload FROM webhook_deliveries INDEXED BY webhook_deliveries_due
       WHERE webhook_id = ? AND status = 'pending' AND next_at = ? AND seq > ? ORDER BY seq LIMIT ?`,
    ),
    pendingAfter: db.raw.prepare<[string, number, number], PendingRow>(
      `SELECT seq, next_at, attempts, last_attempt_at, type, payload FROM webhook_deliveries INDEXED BY webhook_deliveries_due
       WHERE webhook_id = ? AND status = 'pending' AND next_at > ? ORDER BY next_at, seq LIMIT ?`,
    ),
    dueAt: db.raw.prepare<[number, number, number]>("UPDATE webhook_deliveries SET next_at = ? WHERE seq = ? AND status = 'pending' AND next_at > ?"),
    // not one an attempt holds (in flight: it is sent, not dropped; the dispatcher's claim looks again)
    dropPending: db.raw.prepare<[number, number]>("DELETE FROM webhook_deliveries WHERE seq = ? AND status = 'pending' AND (lease_until IS NULL OR lease_until < ?)"),
    webhookIds: db.raw.prepare<[], string>('SELECT id FROM webhooks ORDER BY id').pluck(),
    prune: db.raw.prepare<[number, number]>(
      "DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE status <> 'pending' AND finished_at < ? LIMIT ?)",
    ),
    purgeOfWebhook: db.raw.prepare<[string, number]>('DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE webhook_id = ? LIMIT ?)'),
    purgeOfOrg: db.raw.prepare<[string, number]>(
      'DELETE FROM webhook_deliveries WHERE seq IN (SELECT d.seq FROM webhooks w JOIN webhook_deliveries d ON d.webhook_id = w.id WHERE w.org_id = ? LIMIT ?)',
    ),
  };

  /** Up to `n` pending deliveries of a webhook after `from` in the due index's order: the rest of its due time, then the later ones. */
  const pendingFrom = (webhookId: string, from: { nextAt: number; seq: number }, n: number): PendingRow[] => {
    const rows = q.pendingAtAfter.all(webhookId, from.nextAt, from.seq, n);
    return rows.length < n ? rows.concat(q.pendingAfter.all(webhookId, from.nextAt, n - rows.length)) : rows;
  };
  return {
    insertWebhook: (w: Webhook): void => void q.insert.run(toWebhookRow(w)),
    /** Writes the fields an update or a rotation may change. */
    updateWebhook: (w: Webhook): void => {
      const { org_id: _o, last_success_at: _l, created_by: _c, created_at: _a, ...row } = toWebhookRow(w);
      q.update.run(row);
    },
    /** Hides a webhook from every reader (API, limit, outbox, dispatcher) until its purge deletes it; false when it was gone already. */
    markWebhookDeleted: (id: string, now: number): boolean => q.markDeleted.run(now, now, id).changes === 1,
    /** Deletes a webhook marked deleted (its purge's last step, once its deliveries are gone). */
    deleteWebhook: (id: string): void => void q.remove.run(id),
    findWebhook: (id: string): Webhook | undefined => {
      const r = q.byId.get(id);
      return r && toWebhook(r);
    },
    /** Webhooks of an organization in creation order, `limit + 1` rows. */
    listWebhooks: (orgId: string, limit: number, from?: Keyset): Webhook[] =>
      (from ? q.after.all(orgId, from.at, from.at, from.id, limit + 1) : q.first.all(orgId, limit + 1)).map(toWebhook),
    /** The organization's webhooks whose ledgerIds name the ledger (an organization has a few: a scan of its own). */
    listWebhooksNamingLedger: (orgId: string, ledgerId: string): Webhook[] => q.namingLedger.all(orgId, ledgerId).map(toWebhook),
    countWebhooksOfOrg: (orgId: string): number => q.countOfOrg.get(orgId) ?? 0,
    countEnabledWebhooks: (): number => q.countEnabled.get() ?? 0,
    /** Enabled webhooks of the ledger's organization while ledger and organization are live. */
    listEnabledForLedger: (ledgerId: string): Webhook[] => q.ofLedger.all(ledgerId).map(toWebhook),
    /** A delivery succeeded: the webhook is healthy again. */
    markWebhookSucceeded: (id: string, now: number): void => void q.succeeded.run(now, id),
    /**
     * A delivery attempt failed: returns since when the webhook has been failing — the start of the
     * current streak, which a pause of more than `streakGap` without failed attempts ends unless a
     * delivery failed for good before it — and whether this is the first failure after such a
     * pause (`afterPause`; also the first failure ever). Undefined: the webhook is gone.
     */
    markWebhookFailed: (id: string, now: number, streakGap: number): { failingSince: number; enabled: boolean; afterPause: boolean } | undefined => {
      const before = q.lastFailedAt.get(id);
      const r = q.failed.get({ now, gap: streakGap, id });
      return r && { failingSince: r.failing_since, enabled: r.enabled === 1, afterPause: before == null || now - before > streakGap };
    },
    /** Disables an enabled webhook; false when it was not enabled. */
    disableWebhook: (id: string, reason: string, now: number): boolean => q.disable.run(reason, now, now, id).changes === 1,

    insertDelivery: (d: NewDelivery): void => void q.insertDelivery.run(d),
    /** Webhooks with something to send now (pings only, for a disabled one). */
    listDueWebhooks: (now: number): DueWebhook[] =>
      q.dueWebhooks.all({ now }).map((r) => ({ id: r.id, orgId: r.org_id, url: r.url, enabled: r.enabled === 1, healthy: r.healthy === 1 })),
    /** The id of the webhook's next delivery to send (only pings when `pingsOnly`), or undefined. */
    firstDueDelivery: (webhookId: string, pingsOnly: boolean, now: number, skipIds: string[]): string | undefined =>
      (pingsOnly ? q.firstDuePing : q.firstDue).get({ webhookId, now, skip: JSON.stringify(skipIds) }),
    /** Leases a due delivery until `until`; undefined when it is no longer due or someone holds it. */
    claimDelivery: (id: string, now: number, until: number): ClaimedDelivery | undefined => {
      const r = q.claim.get({ id, now, until });
      return r && { id: r.id, webhookId: r.webhook_id, type: r.type, payload: r.payload, attempts: r.attempts, maxAttempts: r.max_attempts, token: r.lease_token };
    },
    /** Records a successful attempt; false when the lease was lost (fencing). */
    recordDelivered: (id: string, token: number, a: Attempt & { status: number }, finishedAt: number): boolean =>
      q.delivered.run({ id, token, now: a.at, finished: finishedAt, status: a.status, entry: JSON.stringify(a) }).changes === 1,
    /** Records a failed attempt: pending again at `nextAt`, or failed (at `finishedAt`) after the last attempt. */
    recordAttemptFailed: (id: string, token: number, a: Attempt & { error: string }, nextAt: number, finishedAt: number): DeliveryStatus | undefined =>
      q.attemptFailed.get({ id, token, now: a.at, finished: finishedAt, status: a.status, error: a.error, nextAt, entry: JSON.stringify(a) })?.status,
    /** Deletes a claimed delivery, never sent (what it is about was deleted: webhooks/index.ts aboutDeleted). */
    dropDelivery: (id: string, token: number): void => void q.drop.run(id, token),
    /** Gives a delivery back without an attempt (shutdown): due again at once. */
    releaseDelivery: (id: string, token: number): void => void q.release.run(id, token),
    /** At start: every delivery lease belongs to a process that is gone (the data folder lock proves it). */
    expireDeliveryLeases: (): number => q.expireAll.run().changes,
    /** A webhook's deliveries, newest first, `limit + 1` rows before `beforeSeq`. */
    listDeliveries: (webhookId: string, limit: number, beforeSeq?: number, status?: DeliveryStatus): Delivery[] =>
      (status === undefined
        ? beforeSeq === undefined
          ? q.deliveriesFirst.all(webhookId, limit + 1)
          : q.deliveriesBefore.all(webhookId, beforeSeq, limit + 1)
        : beforeSeq === undefined
          ? q.deliveriesByStatusFirst.all(webhookId, status, limit + 1)
          : q.deliveriesByStatusBefore.all(webhookId, status, beforeSeq, limit + 1)
      ).map(toDelivery),
    /** The query plans of the delivery log's pages, unfiltered and filtered by status (tests: each one a seek, no sort). */
    explainDeliveries: (): string[][] =>
      [q.deliveriesFirst, q.deliveriesBefore, q.deliveriesByStatusFirst, q.deliveriesByStatusBefore].map((st) => {
        const params: unknown[] = st.source.includes('status = ?') ? ['wh_x', 'failed'] : ['wh_x'];
        if (st.source.includes('seq < ?')) params.push(5);
        return db.queryPlan(st.source, ...params, 101);
      }),
    findDelivery: (webhookId: string, id: string): Delivery | undefined => {
      const r = q.delivery.get(webhookId, id);
      return r && toDelivery(r);
    },
    /**
     * A webhook's retries scheduled by attempts made up to `since` (its URL or token changed, or it
     * was enabled again; an attempt of the same millisecond may have used the old URL), brought
     * forward to be due at `since`, as a step of chunk-pacing.ts deleteInChunks: each call walks up to `n` pending deliveries due after `since`, in the due
     * index's order from where the last call stopped, and returns how many it walked (0: done);
     * `moved` counts those brought forward. A delivery attempted since keeps the schedule that
     * attempt gave it.
     */
    retriesForward(webhookId: string, since: number): { step: (n: number) => number; moved: () => number } {
      let from = { nextAt: since, seq: Number.MAX_SAFE_INTEGER };
      let moved = 0;
      return {
        step: (n) => {
          const rows = pendingFrom(webhookId, from, n);
          for (const r of rows) {
            if (r.attempts > 0 && r.last_attempt_at !== null && r.last_attempt_at <= since) moved += q.dueAt.run(since, r.seq, since).changes;
          }
          if (rows.length) from = { nextAt: rows.at(-1)!.next_at, seq: rows.at(-1)!.seq };
          return rows.length;
        },
        moved: () => moved,
      };
    },
    /**
     * The pending deliveries of every webhook that `drop` says go (their contact or ledger was
     * deleted), deleted, as a step of chunk-pacing.ts deleteInChunks: each call walks up to `n`,
     * webhook by webhook in the due index's order from where the last call stopped, and returns how
     * many it walked (0: done); `dropped` counts those deleted.
     */
    sweepPending(drop: (d: { type: DeliveryType; payload: string }) => boolean, now: number): { step: (n: number) => number; dropped: () => number } {
      const webhooks = q.webhookIds.all();
      let w = 0;
      let from = { nextAt: Number.MIN_SAFE_INTEGER, seq: 0 };
      let dropped = 0;
      return {
        step: (n) => {
          while (w < webhooks.length) {
            const rows = pendingFrom(webhooks[w]!, from, n);
            for (const r of rows) if (drop(r)) dropped += q.dropPending.run(r.seq, now).changes;
            if (rows.length) {
              from = { nextAt: rows.at(-1)!.next_at, seq: rows.at(-1)!.seq };
              return rows.length;
            }
            w++;
            from = { nextAt: Number.MIN_SAFE_INTEGER, seq: 0 };
          }
          return 0;
        },
        dropped: () => dropped,
      };
    },
    /** The plans of the pending deliveries' walk (tests: each a seek in the due index, no sort). */
    explainPendingWalk: (): string[][] => [db.queryPlan(q.pendingAtAfter.source, 'wh_x', 0, 0, 100), db.queryPlan(q.pendingAfter.source, 'wh_x', 0, 100)],
    /** Deletes up to `n` delivered or failed deliveries finished before `before`. */
    pruneDeliveries: (before: number, n: number): number => q.prune.run(before, n).changes,
    /** Deletes up to `n` deliveries of one webhook (its purge, before its row goes). */
    purgeWebhookDeliveries: (webhookId: string, n: number): number => q.purgeOfWebhook.run(webhookId, n).changes,
    /** Deletes up to `n` deliveries of an organization's webhooks (its purge, before the webhooks go by cascade). */
    purgeOrgDeliveries: (orgId: string, n: number): number => q.purgeOfOrg.run(orgId, n).changes,
  };
}
