import { isoZ, type Clock } from '../clock.ts';
import type { Audit } from '../identity/audit.ts';
import type { RunControl } from '../jobs/scheduler.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import type { Attempt, ClaimedDelivery, DeliveryType, Webhook } from './model.ts';
import type { Sender, SendResult } from './sender.ts';
import { signatureHeader } from './signing.ts';
import { bare, checkWebhookUrl } from './url-policy.ts';
import type { DueWebhook, WebhooksRepo } from './webhooks-repo.ts';

/** Waits after the 1st, 2nd, … failed attempt; after the last one the delivery is `failed`. */
export const RETRY_DELAYS_MS = [5_000, 60_000, 600_000, 3_600_000, 4 * 3_600_000, 12 * 3_600_000] as const;
/** A webhook with no successful delivery for this long, and a failure now (not the first after a pause), is disabled. */
export const DISABLE_AFTER_MS = 3 * 86_400_000;
/**
 * A failure streak ends after this long without a failed attempt (longer than the longest retry
 * delay) — unless a delivery failed for good in it (webhooks-repo.ts `failed`).
 */
export const STREAK_GAP_MS = 86_400_000;
/**
 * Deliveries in flight at once: in all, per organization, per destination host name and per
 * webhook. An attempt in flight is only a socket and a promise, so the total is generous; the
 * per-organization and per-host limits are well below it, so hanging receivers of one organization
 * (or one host every organization calls) cannot take the slots other organizations need.
 */
export const MAX_IN_FLIGHT = 64;
export const MAX_IN_FLIGHT_PER_ORG = 8;
export const MAX_IN_FLIGHT_PER_HOST = 16;
export const MAX_IN_FLIGHT_PER_WEBHOOK = 2;
/**
 * Of MAX_IN_FLIGHT, the slots only webhooks in good standing (they have delivered, and no attempt
 * failed since) may take: the hanging receivers of several organizations — failing, or never yet
 * successful — share the other 48 and cannot hold up every other organization until their
 * deadlines free a slot.
 */
export const MAX_IN_FLIGHT_RESERVED_FOR_HEALTHY = 16;
/**
 * The same within an organization: of its MAX_IN_FLIGHT_PER_ORG, as many as one webhook may use
 * are kept for its webhooks in good standing, so that its own hanging receivers (failing, or never
 * yet successful) do not hold up its healthy webhook until their deadlines (a tester's case: six
 * hanging webhooks made a healthy one of their organization wait a deadline for each delivery).
 */
export const MAX_IN_FLIGHT_PER_ORG_RESERVED_FOR_HEALTHY = MAX_IN_FLIGHT_PER_WEBHOOK;
/**
 * A webhook whose last attempt took this long or longer is not in good standing for the reserved
 * slots, however it ended, until an attempt is quick again: receivers that answer 2xx after
 * seconds, in enough organizations, took every slot, the reserved ones too, and a fast webhook of
 * another organization waited 6–16 s (a tester's case). Kept in memory: after a restart a webhook
 * is judged by its next attempt.
 */
export const SLOW_ATTEMPT_MS = 1_000;
/** A claim outlives the attempt's deadline by this much; only a dead process lets it expire. */
const LEASE_MARGIN_MS = 60_000;
/** Deliveries about deleted contacts or ledgers dropped in one pass's transaction at most (a deleted ledger's backlog goes in several). */
const MAX_DROPS_PER_PASS = 500;
/** How often the dispatcher looks for due deliveries when nothing woke it. */
const IDLE_WAKE_MS = 250;
/**
 * How long an attempt's outcome waits for others to be recorded with it, in one transaction. Each
 * transaction is a synchronous commit (fsync) on the event loop: one for every claim and one for
 * every outcome kept the loop so busy during a burst of deliveries that every organization's bulk
 * uploads were shed with 503 for 30–60 s, at 30–65 % CPU (a tester's case).
 */
const RECORD_BATCH_MS = 10;

export interface DispatcherDeps {
  db: Db;
  repo: WebhooksRepo;
  clock: Clock;
  log: Logger;
  audit: Audit;
  sender: Sender;
  timeoutMs: number;
  allowHosts: readonly string[];
  /** WEBHOOK_ALLOW_LOCAL: receivers on this machine (loopback, its own addresses) and link-local ones allowed. */
  allowLocal: boolean;
  /** Called after a webhook was disabled (the outbox stops writing for it). */
  onDisabled: () => void;
  /** Called after each recorded attempt (metrics): delivered, or failed with a retry to come, or failed for good; `dropped`: not sent, its subject was deleted. */
  onAttempt?: (outcome: 'delivered' | 'retry' | 'failed' | 'dropped') => void;
  /**
   * Whether what a delivery's event is about was deleted since it was written: its ledger, or its
   * contact (an erasure request must not be followed by the person's data going out). Such a
   * delivery is dropped when it comes due, never sent. Absent: every delivery is sent.
   */
  aboutDeleted?: (d: { type: DeliveryType; payload: string }) => boolean;
}

export type Dispatcher = ReturnType<typeof createDispatcher>;

const days = (ms: number) => `${Math.round((ms / 86_400_000) * 10) / 10} days`;

/**
 * Sends due deliveries (SPEC §6, RELIABILITY.md D4). A delivery is claimed with a lease (one
 * fenced UPDATE), sent, and its outcome recorded in one transaction that checks the lease token,
 * so two workers never both record it, and a delivery whose sender died is sent again — under the
 * same delivery id — once its lease expired or at the next start. Several deliveries are in flight
 * at once, each with its own deadline and within per-webhook, per-organization and per-host limits,
 * so slow or hanging receivers never hold up the deliveries of other organizations.
 */
export function createDispatcher(d: DispatcherDeps) {
  const inflight = new Map<string, { webhookId: string; orgId: string; host: string; healthy: boolean; stop: AbortController; done: Promise<void> }>();
  let wake: (() => void) | undefined;
  let recovered = false;
  /** Webhooks whose last attempt took SLOW_ATTEMPT_MS or more. */
  const slow = new Set<string>();
  /**
   * When each webhook was last mended (its URL or token changed, or it was enabled again), as the
   * count of mends then: an attempt that began before and fails after is retried at once, as the
   * retries waiting in the database are (RETRIES_FORWARD), not on the schedule. In memory, as
   * attempts in flight are. Counted, not timed: a millisecond cannot order a mend and an attempt's
   * start, and both happen on this thread, in order.
   */
  const mendedAt = new Map<string, number>();
  let mends = 0;

  /** The host name a webhook calls (the key of the per-host limit). */
  const hostOf = (url: string) => {
    try {
      return bare(new URL(url).hostname);
    } catch {
      return url;
    }
  };
  /**
   * True when another attempt of this webhook would exceed one of the limits. A webhook not in good
   * standing also counts the attempts in flight of every webhook not in good standing (as they
   * were when claimed) against the slots not reserved for healthy ones, in all and in its
   * organization.
   */
  const full = (w: DueWebhook, host: string, healthy: boolean) => {
    if (inflight.size >= MAX_IN_FLIGHT) return true;
    let webhook = 0;
    let org = 0;
    let sameHost = 0;
    let unhealthy = 0;
    let orgUnhealthy = 0;
    for (const f of inflight.values()) {
      if (f.webhookId === w.id) webhook++;
      if (f.orgId === w.orgId) org++;
      if (f.host === host) sameHost++;
      if (!f.healthy) {
        unhealthy++;
        if (f.orgId === w.orgId) orgUnhealthy++;
      }
    }
    if (!healthy && (unhealthy >= MAX_IN_FLIGHT - MAX_IN_FLIGHT_RESERVED_FOR_HEALTHY || orgUnhealthy >= MAX_IN_FLIGHT_PER_ORG - MAX_IN_FLIGHT_PER_ORG_RESERVED_FOR_HEALTHY)) return true;
    return webhook >= MAX_IN_FLIGHT_PER_WEBHOOK || org >= MAX_IN_FLIGHT_PER_ORG || sameHost >= MAX_IN_FLIGHT_PER_HOST;
  };
  /** Where the next round-robin pass starts, so that no webhook is always served first. */
  let turn = 0;

  /**
   * Claims due deliveries up to the limits and starts them, taking turns between the webhooks
   * that have something due (one webhook's backlog does not starve the others, and a webhook
   * whose organization or host is at its limit, or that is not in good standing while the shared
   * slots are taken, is passed over, not waited for). Standing is read afresh at every pass, so a
   * webhook whose delivery succeeds again has the reserved slots from its next claim on.
   */
  async function fill(ctl: RunControl): Promise<void> {
    if (inflight.size >= MAX_IN_FLIGHT) return;
    const due = d.repo.listDueWebhooks(d.clock.now());
    if (!due.length) return;
    turn = (turn + 1) % due.length;
    const order = [...due.slice(turn), ...due.slice(0, turn)];
    // every claim of the pass in one transaction; each holds its slot (in `inflight`, for the limits)
    // while the pass goes on, and is sent once the claims are committed
    const claimed: [ClaimedDelivery, DueWebhook, string, boolean][] = [];
    const dropped: string[] = []; // the webhooks of the deliveries dropped
    try {
      await d.db.txSoon(() => {
        let claimedAny = true;
        while (claimedAny && inflight.size < MAX_IN_FLIGHT && !ctl.stopping) {
          claimedAny = false;
          for (const w of order) {
            if (inflight.size >= MAX_IN_FLIGHT || ctl.stopping) return;
            const host = hostOf(w.url);
            const healthy = w.healthy && !slow.has(w.id);
            if (full(w, host, healthy)) continue;
            const now = d.clock.now();
            const id = d.repo.firstDueDelivery(w.id, !w.enabled, now, [...inflight.keys()]);
            if (!id) continue;
            const c = d.repo.claimDelivery(id, now, now + d.timeoutMs + LEASE_MARGIN_MS);
            if (!c) continue;
            if (d.aboutDeleted?.(c)) {
              // deleted since the event was written: its data does not go out (docs/webhooks.md)
              d.repo.dropDelivery(c.id, c.token);
              dropped.push(c.webhookId);
              if (dropped.length >= MAX_DROPS_PER_PASS) return; // a short transaction; the next pass goes on
              claimedAny = true;
              continue;
            }
            inflight.set(c.id, { webhookId: c.webhookId, orgId: w.orgId, host, healthy, stop: new AbortController(), done: Promise.resolve() });
            claimed.push([c, w, host, healthy]);
            claimedAny = true;
          }
        }
      });
    } catch (err) {
      for (const [c] of claimed) inflight.delete(c.id); // rolled back: not claimed
      throw err;
    }
    if (dropped.length) {
      // one line a pass, not one a delivery: a deleted ledger's backlog can be a million
      const webhooks: Record<string, number> = {};
      for (const id of dropped) webhooks[id] = (webhooks[id] ?? 0) + 1;
      d.log.info({ dropped: dropped.length, webhooks }, 'deliveries about deleted contacts or ledgers dropped, not sent');
      for (let i = 0; i < dropped.length; i++) d.onAttempt?.('dropped');
    }
    for (const [c, w, host, healthy] of claimed) start(c, w, host, healthy);
  }

  function start(claimed: ClaimedDelivery, w: DueWebhook, host: string, healthy: boolean): void {
    const stop = new AbortController();
    const done = attempt(claimed, stop.signal)
      .catch((err) => d.log.error({ err, deliveryId: claimed.id, webhookId: claimed.webhookId }, 'could not record a webhook delivery attempt'))
      .finally(() => {
        inflight.delete(claimed.id);
        wake?.();
      });
    inflight.set(claimed.id, { webhookId: claimed.webhookId, orgId: w.orgId, host, healthy, stop, done });
  }

  async function attempt(c: ClaimedDelivery, signal: AbortSignal): Promise<void> {
    const w = d.repo.findWebhook(c.webhookId);
    if (!w) return; // deleted meanwhile: its purge deletes the delivery
    const mendsBefore = mends; // the settings read above are those of every mend up to here
    const at = d.clock.now();
    const verdict = checkWebhookUrl(w.url, d.allowHosts, d.allowLocal);
    let r: SendResult;
    if (!verdict.ok) {
      r = { ok: false, status: null, error: `not sent: the URL ${verdict.reason}`, ms: 0 };
    } else {
      const body = Buffer.from(c.payload, 'utf8');
      const headers: Record<string, string> = {
        'Content-Type': 'application/json',
        'X-Ledger-Delivery': c.id,
        'X-Ledger-Signature': signatureHeader(w.secret, Math.floor(at / 1000), body),
      };
      if (w.token !== null) headers['X-Ledger-Token'] = w.token;
      r = await d.sender.send(verdict.url, headers, body, { timeoutMs: d.timeoutMs, signal });
      if (r.ms >= SLOW_ATTEMPT_MS) slow.add(w.id);
      else slow.delete(w.id);
    }
    if (!r.ok && signal.aborted) {
      // Interrupted by shutdown: not an attempt; the delivery is due again at the next start.
      d.db.tx(() => d.repo.releaseDelivery(c.id, c.token));
      return;
    }
    await inBatch(() => record(c, w, verdict.ok ? verdict.host : null, { at, status: r.status, error: r.error, ms: r.ms }, r.ok, mendsBefore));
  }

  /** Outcomes waiting for their transaction: each writes inside it and returns what to do once it is committed. */
  let batch: { write: () => () => void; done: () => void; failed: (err: unknown) => void }[] = [];
  /** Runs `write` in the next batch's transaction (RECORD_BATCH_MS), then what it returned. */
  function inBatch(write: () => () => void): Promise<void> {
    return new Promise((done, failed) => {
      if (!batch.length) setTimeout(() => void commitBatch(), RECORD_BATCH_MS);
      batch.push({ write, done, failed });
    });
  }
  async function commitBatch(): Promise<void> {
    const items = batch;
    batch = [];
    // each outcome in a savepoint of its own: one that cannot be written fails alone, not the
    // outcomes of the others (their deliveries would be sent again once their leases expired)
    let outcomes: ({ after: () => void } | { err: unknown })[];
    try {
      outcomes = await d.db.txSoon(() =>
        items.map((i) => {
          try {
            return { after: d.db.tx(i.write) };
          } catch (err) {
            return { err };
          }
        }),
      );
    } catch (err) {
      for (const i of items) i.failed(err); // the commit failed: the deliveries are sent again once their leases expire
      return;
    }
    items.forEach((i, n) => {
      const o = outcomes[n]!;
      if ('err' in o) return i.failed(o.err);
      i.done();
      // what follows the commit (metrics, logs, a disabled webhook's notice) must not stop the others, nor the process
      try {
        o.after();
      } catch (err) {
        d.log.error({ err }, 'could not finish recording a webhook delivery attempt');
      }
    });
  }

  /** Records an attempt's outcome (inside the batch's transaction); returns its logging and notices, for after the commit. */
  function record(c: ClaimedDelivery, w: Webhook, host: string | null, a: Attempt, ok: boolean, mendsBefore: number): () => void {
    const ctx = { webhookId: w.id, deliveryId: c.id, type: c.type, host, attempt: c.attempts + 1, status: a.status };
    let disabled: string | undefined;
    let recorded: 'delivered' | 'retry' | 'failed' | undefined;
    (() => {
      // when the attempt ended: deliveredAt and failedAt (the attempt's start is lastAttemptAt; a
      // slow receiver's 6 s answer was dated when it was sent, a tester saw)
      const now = d.clock.now();
      if (ok) {
        if (!d.repo.recordDelivered(c.id, c.token, { ...a, status: a.status! }, now)) return;
        recorded = 'delivered';
        if (c.type !== 'ping') d.repo.markWebhookSucceeded(w.id, now);
        return;
      }
      // mended since the attempt read its settings (up to this transaction): it went against what was wrong
      const mended = (mendedAt.get(w.id) ?? 0) > mendsBefore;
      const outcome = d.repo.recordAttemptFailed(c.id, c.token, { ...a, error: a.error! }, mended ? now : now + (RETRY_DELAYS_MS[c.attempts] ?? 0), now);
      if (outcome !== undefined) recorded = outcome === 'failed' ? 'failed' : 'retry';
      if (outcome === undefined || c.type === 'ping') return; // lease lost; pings do not count
      const health = d.repo.markWebhookFailed(w.id, now, STREAK_GAP_MS);
      // Not at the first failure after a pause: one more chance (the retry 5 s later) for a receiver
      // that may have recovered while there was nothing to send it.
      if (health?.enabled && !health.afterPause && now - health.failingSince >= DISABLE_AFTER_MS) {
        disabled = `no successful delivery for ${days(now - health.failingSince)} (failing since ${isoZ(health.failingSince)}); last error: ${a.error}`;
        d.repo.disableWebhook(w.id, disabled, now);
        d.audit.recordAnonymous(null, {
          orgId: w.orgId,
          action: 'webhook.disabled',
          actor: { type: 'system', id: null, label: 'webhook delivery' },
          target: { type: 'webhook', id: w.id },
          data: { reason: disabled },
        });
      }
    })();
    return () => {
      if (recorded) d.onAttempt?.(recorded);
      if (ok) d.log.debug(ctx, 'webhook delivered');
      else d.log.warn({ ...ctx, error: a.error }, 'webhook delivery failed');
      if (disabled) {
        d.log.warn({ webhookId: w.id, reason: disabled }, 'webhook disabled after persistent failures');
        d.onDisabled();
      }
    };
  }

  return {
    /** Looks for due deliveries now (after an event was written, or a test moved the clock). */
    kick(): void {
      wake?.();
    },
    /** The webhook was mended (webhook-service.ts): its attempts in flight that fail are retried at once. */
    mended(webhookId: string): void {
      mendedAt.set(webhookId, ++mends);
    },
    /**
     * The dispatcher loop, run by the scheduler as a background task: it lives until shutdown,
     * then interrupts the attempts in flight and hands their deliveries back.
     */
    async run(ctl: RunControl): Promise<void> {
      if (!recovered) {
        recovered = true;
        const n = d.db.tx(() => d.repo.expireDeliveryLeases());
        if (n) d.log.info({ deliveries: n }, 'webhook deliveries of a previous process are due again');
      }
      try {
        while (!ctl.stopping) {
          try {
            await fill(ctl);
          } catch (err) {
            d.log.error({ err }, 'could not claim webhook deliveries');
          }
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, IDLE_WAKE_MS);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
        }
      } finally {
        for (const f of inflight.values()) f.stop.abort();
        await Promise.allSettled([...inflight.values()].map((f) => f.done));
        if (ctl.stopping) d.sender.close();
      }
    },
    /** Deliveries in flight (tests, metrics). */
    inFlight: () => inflight.size,
  };
}
