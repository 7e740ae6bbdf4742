import { z } from 'zod';
import { cursorParam, limitParam } from '../http/common-schemas.ts';
import { DELIVERY_STATUSES, WEBHOOK_EVENTS } from './model.ts';

/** Request schemas of the webhook routes; they validate requests and feed the OpenAPI document. */

const url = z.string().trim().min(1, 'must not be empty').max(2048, 'must be at most 2048 characters').meta({ description: 'http:// or https:// URL the deliveries are POSTed to.' });

const events = z
  .array(z.enum(WEBHOOK_EVENTS, { error: `must be one of ${WEBHOOK_EVENTS.join(', ')}` }))
  .min(1, 'must name at least one event')
  .max(WEBHOOK_EVENTS.length * 2, 'has too many items')
  .meta({ description: `Events to deliver: ${WEBHOOK_EVENTS.join(', ')}.` });

const ledgerIds = z
  .array(z.string().max(64, 'must be a ledger id'))
  .max(100, 'at most 100 ledgers')
  .nullable()
  .optional()
  .meta({ description: 'Only events of these ledgers; null or absent = every ledger of the organization. [] (no ledger) only with the webhook disabled: what deleting its last ledger leaves, so that a webhook read can be sent back as it is.' });

// Sent as a header value: printable ASCII, no line breaks, no surrounding spaces.
const token = z
  .string()
  .min(1, 'must not be empty')
  .max(512, 'must be at most 512 characters')
  .regex(/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/, 'must be printable ASCII without line breaks or surrounding spaces')
  .nullable()
  .optional()
  .meta({ description: 'Sent as X-Ledger-Token with every delivery; null removes it. Never returned.' });

const enabled = z.boolean({ error: 'must be true or false' }).optional();

export const NewWebhook = z.strictObject({ url, events, ledgerIds, token, enabled });

export const WebhookPatch = z
  .strictObject({ url: url.optional(), events: events.optional(), ledgerIds, token, enabled })
  .refine((p) => Object.keys(p).length > 0, 'give at least one of url, events, ledgerIds, token, enabled');

export const DeliveriesQuery = z.strictObject({
  status: z.enum(DELIVERY_STATUSES, { error: 'must be pending, delivered or failed' }).optional(),
  limit: limitParam,
  cursor: cursorParam,
});
