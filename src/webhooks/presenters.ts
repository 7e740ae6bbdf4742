import { isoZ, isoZOrNull } from '../clock.ts';
import type { Delivery, Webhook } from './model.ts';

/** Wire shapes of webhooks and deliveries (SPEC §6): never the secret, never the token. */

export const presentWebhook = (w: Webhook) => ({
  id: w.id,
  orgId: w.orgId,
  url: w.url,
  events: w.events,
  ledgerIds: w.ledgerIds,
  hasToken: w.token !== null,
  enabled: w.enabled,
  disabledReason: w.disabledReason,
  disabledAt: isoZOrNull(w.disabledAt),
  failingSince: isoZOrNull(w.failingSince),
  lastSuccessAt: isoZOrNull(w.lastSuccessAt),
  createdAt: isoZ(w.createdAt),
  updatedAt: isoZ(w.updatedAt),
});

/** A delivery and its attempt log; `withPayload` adds the body exactly as it is sent. */
export const presentDelivery = (x: Delivery, withPayload = false) => ({
  id: x.id,
  webhookId: x.webhookId,
  eventId: x.eventId,
  type: x.type,
  status: x.status,
  attempts: x.attempts,
  maxAttempts: x.maxAttempts,
  responseStatus: x.lastStatus,
  error: x.lastError,
  createdAt: isoZ(x.createdAt),
  lastAttemptAt: isoZOrNull(x.lastAttemptAt),
  nextAttemptAt: x.status === 'pending' ? isoZ(x.nextAt) : null,
  deliveredAt: x.status === 'delivered' ? isoZOrNull(x.finishedAt) : null,
  failedAt: x.status === 'failed' ? isoZOrNull(x.finishedAt) : null,
  attemptLog: x.attemptLog.map((a) => ({ at: isoZ(a.at), responseStatus: a.status, error: a.error, durationMs: a.ms })),
  ...(withPayload ? { payload: JSON.parse(x.payload) as unknown } : {}),
});
