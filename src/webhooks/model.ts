/** Webhook records (SPEC §6); timestamps in epoch ms. */

/** The events a webhook can subscribe to. */
export const WEBHOOK_EVENTS = ['contact.job_changed', 'contact.info_changed', 'import.completed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Delivery types: the events, and the test ping of POST …/webhooks/:id/test. */
export type DeliveryType = WebhookEvent | 'ping';

export interface Webhook {
  id: string;
  orgId: string;
  url: string;
  events: WebhookEvent[];
  /** null = every ledger of the organization. */
  ledgerIds: string[] | null;
  token: string | null;
  secret: string;
  enabled: boolean;
  disabledReason: string | null;
  disabledAt: number | null;
  /** The first failed attempt since the last success (null while healthy). */
  failingSince: number | null;
  lastSuccessAt: number | null;
  createdBy: string | null;
  createdAt: number;
  updatedAt: number;
}

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One attempt, as kept in a delivery's attempt log. */
export interface Attempt {
  at: number;
  /** HTTP status of the answer; null when there was none (refused, timed out…). */
  status: number | null;
  error: string | null;
  ms: number;
}

export interface Delivery {
  seq: number;
  id: string;
  webhookId: string;
  eventId: string;
  type: DeliveryType;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  maxAttempts: number;
  nextAt: number;
  lastAttemptAt: number | null;
  lastStatus: number | null;
  lastError: string | null;
  attemptLog: Attempt[];
  createdAt: number;
  finishedAt: number | null;
}

/**
 * A delivery as the API shows it: `held` while it waits for its disabled webhook to be enabled
 * again (pending, not a ping: pings are sent while a webhook is disabled).
 */
export interface ShownDelivery extends Delivery {
  held: boolean;
}

/** A delivery claimed for one attempt (lease held until it is recorded). */
export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  type: DeliveryType;
  payload: string;
  attempts: number;
  maxAttempts: number;
  token: number;
}
