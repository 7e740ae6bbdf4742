import { z } from 'zod';
import { isoZ, isoZOrNull } from '../clock.ts';
import { countOf, idOf, isoTime, pageSchema } from '../http/common-schemas.ts';
import { ContactAnswer, ImportJobAnswer } from '../ledger/presenters.ts';
import { ChangeAnswer } from '../tracking/presenters.ts';
import { DELIVERY_STATUSES, WEBHOOK_EVENTS, type ShownDelivery, type Webhook } from './model.ts';

/**
 * Wire shapes of webhooks and deliveries (SPEC §6): never the secret, never the token. The
 * presenters, and the zod schemas of what they answer (the OpenAPI document's answer schemas,
 * checked against every answer under the tests).
 */

export const WebhookAnswer = z
  .strictObject({
    id: idOf('wh'),
    orgId: idOf('o'),
    url: z.url(),
    events: z.array(z.enum(WEBHOOK_EVENTS)),
    ledgerIds: z.array(idOf('l')).nullable().meta({ description: 'null: every ledger of the organization' }),
    hasToken: z.boolean().meta({ description: 'Whether deliveries carry an X-Ledger-Token (the token itself is never shown)' }),
    enabled: z.boolean(),
    disabledReason: z.string().nullable(),
    disabledAt: isoTime.nullable(),
    failingSince: isoTime.nullable().meta({ description: 'The first failed attempt since the last success; null while healthy' }),
    lastSuccessAt: isoTime.nullable(),
    createdAt: isoTime,
    updatedAt: isoTime,
  })
  .meta({ id: 'Webhook' });

/** A new webhook, or one whose secret was rotated: with its signing secret, shown only then. */
export const WebhookWithSecretAnswer = WebhookAnswer.extend({ secret: z.string().meta({ description: 'The signing secret (X-Ledger-Signature), shown only in this answer' }) }).meta({ id: 'WebhookWithSecret' });

export const WebhookPage = pageSchema('webhooks', WebhookAnswer);

const eventBase = { id: idOf('evt'), createdAt: isoTime, orgId: idOf('o') };

/** The body of a delivery, as it is sent (SPEC §6). */
export const WebhookEventAnswer = z
  .discriminatedUnion('type', [
    z.strictObject({ ...eventBase, type: z.enum(['contact.job_changed', 'contact.info_changed']), ledgerId: idOf('l'), data: z.strictObject({ contact: ContactAnswer, change: ChangeAnswer }) }),
    z.strictObject({ ...eventBase, type: z.literal('import.completed'), ledgerId: idOf('l'), data: z.strictObject({ import: ImportJobAnswer }) }),
    z.strictObject({
      ...eventBase,
      type: z.literal('ping'),
      ledgerId: z.null(),
      data: z.strictObject({ webhook: z.strictObject({ id: idOf('wh'), events: z.array(z.enum(WEBHOOK_EVENTS)), ledgerIds: z.array(idOf('l')).nullable() }) }),
    }),
  ])
  .meta({ id: 'WebhookEvent' });

export const DeliveryAnswer = z
  .strictObject({
    id: idOf('dlv'),
    webhookId: idOf('wh'),
    eventId: idOf('evt'),
    type: z.enum([...WEBHOOK_EVENTS, 'ping']),
    status: z.enum(DELIVERY_STATUSES),
    attempts: countOf,
    maxAttempts: countOf,
    responseStatus: z.int().nullable().meta({ description: 'The HTTP status of the last attempt; null when there was no answer' }),
    error: z.string().nullable().meta({ description: 'What went wrong in the last attempt' }),
    createdAt: isoTime,
    lastAttemptAt: isoTime.nullable(),
    nextAttemptAt: isoTime.nullable().meta({ description: 'Set while pending; while `held`, the attempt waits for the webhook to be enabled again (then it goes out at this time, or at once when the time has passed)' }),
    held: z.boolean().meta({ description: 'Pending, and not attempted while its webhook is disabled (pings aside); enabling the webhook sends it at once (its retry brought forward)' }),
    deliveredAt: isoTime.nullable(),
    failedAt: isoTime.nullable(),
    attemptLog: z.array(
      z.strictObject({
        at: isoTime,
        responseStatus: z.int().nullable(),
        error: z.string().nullable(),
        durationMs: z.number().min(0),
      }),
    ),
  })
  .meta({ id: 'Delivery' });

/** One delivery, with the body exactly as it is sent. */
export const DeliveryWithPayloadAnswer = DeliveryAnswer.extend({ payload: WebhookEventAnswer }).meta({ id: 'DeliveryWithPayload' });

export const DeliveryPage = pageSchema('deliveries', DeliveryAnswer);

export const presentWebhook = (w: Webhook): z.output<typeof WebhookAnswer> => ({
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
export const presentDelivery = (x: ShownDelivery, withPayload = false) => ({
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
  held: x.held,
  deliveredAt: x.status === 'delivered' ? isoZOrNull(x.finishedAt) : null,
  failedAt: x.status === 'failed' ? isoZOrNull(x.finishedAt) : null,
  attemptLog: x.attemptLog.map((a) => ({ at: isoZ(a.at), responseStatus: a.status, error: a.error, durationMs: a.ms })),
  ...(withPayload ? { payload: JSON.parse(x.payload) as unknown } : {}),
});
