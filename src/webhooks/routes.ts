import { pageOf, pageQuery } from '../http/common-schemas.ts';
import type { ApiRouter } from '../http/route.ts';
import { DeliveryAnswer, DeliveryPage, DeliveryWithPayloadAnswer, presentDelivery, presentWebhook, WebhookAnswer, WebhookPage, WebhookWithSecretAnswer } from './presenters.ts';
import * as S from './schemas.ts';
import type { WebhookService, WebhookWithSecret } from './webhook-service.ts';

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
