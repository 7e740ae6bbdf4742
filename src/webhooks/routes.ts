import { pageOf, pageQuery } from '../http/common-schemas.ts';
import type { OutgoingRequest } from '../http/openapi.ts';
import type { ApiRouter } from '../http/route.ts';
import { RETRY_DELAYS_MS } from './dispatcher.ts';
import { DeliveryAnswer, DeliveryPage, DeliveryWithPayloadAnswer, presentDelivery, presentWebhook, WebhookAnswer, WebhookEventAnswer, WebhookPage, WebhookWithSecretAnswer } from './presenters.ts';
import * as S from './schemas.ts';
import type { WebhookService, WebhookWithSecret } from './webhook-service.ts';

/** 5 s, 1 min, 1 h: a retry delay as the document says it. */
const duration = (ms: number) => (ms < 60_000 ? `${ms / 1000} s` : ms < 3_600_000 ? `${ms / 60_000} min` : `${ms / 3_600_000} h`);

/** What a webhook receives (docs/webhooks.md), for the `webhooks` of the ledger service's OpenAPI document. */
export const WEBHOOK_DELIVERY: OutgoingRequest = {
  summary: 'A delivery: one event POSTed to a webhook\'s url',
  description:
    'Sent for contact.job_changed, contact.info_changed and import.completed events the webhook subscribes to, and for a ping from POST …/webhooks/{webhookId}/test. ' +
    'Verify X-Ledger-Signature before trusting the body; deduplicate by X-Ledger-Delivery: a retry, or a resend after a restart, carries the same id and body (docs/webhooks.md).',
  body: WebhookEventAnswer,
  headers: {
    'X-Ledger-Delivery': { description: 'The delivery id (dlv_…), the same on every attempt', required: true },
    'X-Ledger-Signature': { description: 't=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>', required: true },
    'X-Ledger-Token': { description: "The webhook's token, when it has one (compare in constant time)", required: false },
  },
  responses: {
    '2XX': 'Delivered',
    default: `A failed attempt (also no answer within WEBHOOK_TIMEOUT_MS, or a redirect, which is not followed): retried ${RETRY_DELAYS_MS.map(duration).join(', ')} later, then failed`,
  },
};

export interface WebhookRouteOptions {
  baseUrl: string;
  prefix: string;
}

/** Webhooks of an organization (SPEC §6), all for its admins. */
export function registerWebhookRoutes(r: ApiRouter, svc: WebhookService, opts: WebhookRouteOptions): void {
  const W = '/orgs/:orgId/webhooks';
  const ONE = `${W}/:webhookId`;
  const url = (orgId: string, id: string) => `${opts.baseUrl}${opts.prefix}/orgs/${orgId}/webhooks/${id}`;
  const withSecret = (x: WebhookWithSecret) => ({ ...presentWebhook(x.webhook), secret: x.secret });
  const admin = { org: 'admin' } as const;

  r.add({ method: 'get', path: W, access: admin, query: pageQuery, summary: 'Webhooks of the organization', responses: { 200: { description: 'A page of webhooks', schema: WebhookPage } } }, (ctx, { params, query }) => {
    ctx.body = pageOf('webhooks', svc.list(params.orgId!, query.limit ?? 100, query.cursor), presentWebhook);
  });
  r.add(
    {
      method: 'post',
      path: W,
      access: admin,
      body: S.NewWebhook,
      summary: 'Create a webhook; the answer holds its signing secret, shown only here',
      responses: { 201: { description: 'The webhook and its `secret` (Location: its URL)', schema: WebhookWithSecretAnswer }, 409: { description: 'Too many webhooks' }, 422: { description: 'Invalid URL, host not allowed, unknown ledger' } },
    },
    (ctx, { caller, params, body }) => {
      const created = svc.create(caller, params.orgId!, body);
      ctx.status = 201;
      ctx.set('Location', url(params.orgId!, created.webhook.id));
      ctx.set('Cache-Control', 'no-store');
      ctx.body = withSecret(created);
    },
  );
  r.add({ method: 'get', path: ONE, access: admin, summary: 'A webhook (with disabledReason when it was disabled)', responses: { 200: { description: 'The webhook', schema: WebhookAnswer } } }, (ctx, { params }) => {
    ctx.body = presentWebhook(svc.get(params.orgId!, params.webhookId!));
  });
  r.add(
    {
      method: 'patch',
      path: ONE,
      access: admin,
      body: S.WebhookPatch,
      summary: 'Change a webhook; enabled:true re-enables a disabled one',
      responses: { 200: { description: 'The webhook as updated', schema: WebhookAnswer }, 422: { description: 'Invalid URL, host not allowed, unknown ledger' } },
    },
    (ctx, { caller, params, body }) => {
      ctx.body = presentWebhook(svc.update(caller, params.orgId!, params.webhookId!, body));
    },
  );
  r.add({ method: 'delete', path: ONE, access: admin, summary: 'Delete a webhook with its delivery log', responses: { 204: { description: 'Deleted' } } }, (ctx, { caller, params }) => {
    svc.remove(caller, params.orgId!, params.webhookId!);
    ctx.status = 204;
  });
  r.add({ method: 'post', path: `${ONE}/rotate`, access: admin, summary: 'Replace the signing secret; the new one is shown only here', responses: { 200: { description: 'The webhook and its new `secret`', schema: WebhookWithSecretAnswer } } }, (ctx, { caller, params }) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = withSecret(svc.rotateSecret(caller, params.orgId!, params.webhookId!));
  });
  r.add(
    {
      method: 'post',
      path: `${ONE}/test`,
      access: admin,
      summary: 'Send a ping through the delivery path',
      description: 'Answers 202 with the queued delivery (Location: the delivery); poll it to see the outcome. A ping is tried once, also while the webhook is disabled.',
      responses: { 202: { description: 'The ping delivery (Location: its URL)', schema: DeliveryAnswer, headers: { Location: { description: 'The URL of the delivery' } } } },
    },
    (ctx, { params }) => {
      const x = svc.ping(params.orgId!, params.webhookId!);
      ctx.status = 202;
      ctx.set('Location', `${url(params.orgId!, x.webhookId)}/deliveries/${x.id}`);
      ctx.body = presentDelivery(x);
    },
  );
  r.add(
    { method: 'get', path: `${ONE}/deliveries`, access: admin, query: S.DeliveriesQuery, summary: 'Deliveries and their attempts, newest first', responses: { 200: { description: 'A page of deliveries', schema: DeliveryPage } } },
    (ctx, { params, query }) => {
      ctx.body = pageOf('deliveries', svc.deliveries(params.orgId!, params.webhookId!, { limit: query.limit ?? 100, cursor: query.cursor, status: query.status }), (x) => presentDelivery(x));
    },
  );
  r.add({ method: 'get', path: `${ONE}/deliveries/:deliveryId`, access: admin, summary: 'One delivery with its attempts and payload', responses: { 200: { description: 'The delivery and its payload', schema: DeliveryWithPayloadAnswer } } }, (ctx, { params }) => {
    ctx.body = presentDelivery(svc.delivery(params.orgId!, params.webhookId!, params.deliveryId!), true);
  });
}
