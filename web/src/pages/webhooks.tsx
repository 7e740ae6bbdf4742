import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, LEDGER, listAll, type ApiError } from '../api.ts';
import { navigate, setQuery, takeNotice, useLocation } from '../router.ts';
import { asApiError, Async, CursorPager, Confirm, Dialog, Empty, ErrorBox, Field, fieldErrors, FormError, Link, Loading, NotFoundState, Notice, PageHead, refocusWhenDone, SecretOnce, SecretStored, Time, useAction, useMounted, useOrgNameElsewhere, useReloadWhile, useRequest, useRole, useShowSecret, type Request } from '../ui.tsx';
import type { Ledger } from './ledgers.tsx';

// Webhooks of an organization (SPEC §6, docs/webhooks.md), on the real API of src/webhooks/routes.ts:
// a list of cards, a page per webhook with its delivery log, and the dialogs both share.

/** The wire shape of src/webhooks/presenters.ts presentWebhook. */
export interface Webhook {
  id: string;
  orgId: string;
  url: string;
  events: WebhookEvent[];
  /** null = every ledger, including ledgers created later. */
  ledgerIds: string[] | null;
  hasToken: boolean;
  enabled: boolean;
  disabledReason: string | null;
  disabledAt: string | null;
  failingSince: string | null;
  lastSuccessAt: string | null;
  createdAt: string;
  updatedAt: string;
}
type WithSecret = Webhook & { secret: string };
type WebhookEvent = 'contact.job_changed' | 'contact.info_changed' | 'import.completed';
type Status = 'pending' | 'delivered' | 'failed';
interface Attempt {
  at: string;
  responseStatus: number | null;
  error: string | null;
  durationMs: number;
}
/** presentDelivery; `payload` only from the single-delivery route. */
interface Delivery {
  id: string;
  webhookId: string;
  eventId: string;
  type: WebhookEvent | 'ping';
  status: Status;
  attempts: number;
  maxAttempts: number;
  responseStatus: number | null;
  error: string | null;
  createdAt: string;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  /** Pending while the webhook is disabled: not attempted until it is enabled again (pings aside). */
  held: boolean;
  deliveredAt: string | null;
  failedAt: string | null;
  attemptLog: Attempt[];
  payload?: unknown;
}

const EVENTS: { event: WebhookEvent; label: string }[] = [
  { event: 'contact.job_changed', label: 'A contact changed jobs' },
  { event: 'contact.info_changed', label: "A contact's information changed" },
  { event: 'import.completed', label: 'An import ended (completed or failed)' },
];
const TYPE_LABEL: Record<Delivery['type'], string> = { 'contact.job_changed': 'job changed', 'contact.info_changed': 'information changed', 'import.completed': 'import ended', ping: 'test ping' };
const STATUSES: { value: Status | undefined; label: string }[] = [
  { value: undefined, label: 'All' },
  { value: 'pending', label: 'Pending' },
  { value: 'delivered', label: 'Delivered' },
  { value: 'failed', label: 'Failed' },
];
/** How long the page waits for a test ping's single attempt (the server's deadline is 10 s by default). */
const PING_WAIT_MS = 30_000;
const SECRET_WHY = 'the server keeps it only to sign deliveries and never shows it again';

const webhooksPath = (orgId: string) => `${LEDGER}/orgs/${orgId}/webhooks`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const badgeClass = (s: Status) => (s === 'delivered' ? 'ok' : s === 'failed' ? 'bad' : '');
/** The last answer of a delivery, in words. */
const answer = (x: Delivery) => (x.attempts === 0 ? 'not tried yet' : (x.error ?? (x.responseStatus !== null ? `answered ${x.responseStatus}` : '—')));
/** Disabled by the server for failing deliveries (dispatcher.ts's reason), not by an admin or for its deleted ledgers. */
const systemDisabled = (w: Webhook) => !w.enabled && !!w.disabledReason && w.disabledReason.startsWith('no successful delivery');

function AdminOnly(props: { children: ComponentChildren; orgId: string }) {
  if (useRole(props.orgId) !== 'admin')
    return (
      <>
        <PageHead title="Webhooks" />
        <Empty>Webhooks are managed by the organization's admins.</Empty>
      </>
    );
  return <>{props.children}</>;
}

// ── the list ──────────────────────────────────────────────────────────────
/** Webhooks: the list, create (signing secret shown once), and every action on each card. */
export function Webhooks(props: { orgId: string }) {
  return (
    <AdminOnly orgId={props.orgId}>
      <WebhookList orgId={props.orgId} />
    </AdminOnly>
  );
}

function WebhookList(props: { orgId: string }) {
  const { orgId } = props;
  const path = webhooksPath(orgId);
  const req = useRequest(async (signal) => ({ webhooks: (await listAll<Webhook>(path, 'webhooks', { signal })).items }), [path]);
  const ledgers = useLedgers(orgId);
  const [creating, setCreating] = useState(false);
  // shown by the shell: also when the answer comes after this page was left (Back)
  const showSecret = useShowSecret();
  // the webhook page that deleted its webhook says so here (navigate's notice)
  const [notice, setNotice] = useState<string | undefined>(takeNotice);
  return (
    <>
      <PageHead title="Webhooks" sub="contact-ledger POSTs a signed JSON event to your URL when a contact changes jobs or information, or an import ends.">
        <button type="button" onClick={() => setCreating(true)}>
          New webhook
        </button>
      </PageHead>
      {notice && <Notice onDismiss={() => setNotice(undefined)}>{notice}</Notice>}
      <Async
        req={req}
        label="Loading webhooks…"
        empty={(d) => d.webhooks.length === 0}
        emptyText={
          <>
            <p>
              <strong>No webhooks yet.</strong>
            </p>
            <p>Create one to be told about changes as they happen, instead of polling the API.</p>
          </>
        }
      >
        {(d) => (
          <ul class="cards" aria-label="Webhooks">
            {d.webhooks.map((w) => (
              <li key={w.id} class="card webhook-card" aria-label={w.url}>
                <div class="section-head">
                  <h2 class="small-h break mono">
                    <Link href={`/orgs/${orgId}/webhooks/${w.id}`}>{w.url}</Link>
                  </h2>
                  <StateBadge w={w} />
                </div>
                <DisabledNote w={w} />
                <p class="meta">
                  <span>{w.events.map((e) => TYPE_LABEL[e]).join(' · ')}</span>
                  <span>{scopeText(w, ledgers.data)}</span>
                  <span>{w.hasToken ? 'with token' : 'no token'}</span>
                  <span>
                    {/* events only: a test ping is not counted, and "last delivered: never" under a delivered ping read as a contradiction */}
                    last event delivered: {w.lastSuccessAt ? <Time iso={w.lastSuccessAt} /> : 'never'}
                  </span>
                </p>
                <WebhookActions
                  w={w}
                  orgId={orgId}
                  ledgers={ledgers}
                  logLink
                  onChanged={(message) => {
                    setNotice(message);
                    req.reload();
                  }}
                  onDeleted={(message) => {
                    setNotice(message);
                    req.reload();
                  }}
                />
              </li>
            ))}
          </ul>
        )}
      </Async>
      {creating && (
        <WebhookForm
          orgId={orgId}
          ledgers={ledgers}
          onClose={() => setCreating(false)}
          onSaved={(w) => {
            setCreating(false);
            setNotice(undefined);
            showSecret((close) => <SecretDialog title="Webhook created" orgId={orgId} w={w as WithSecret} onClose={close} />);
            req.reload();
          }}
        />
      )}
    </>
  );
}

// ── one webhook and its delivery log ──────────────────────────────────────
/** A webhook: its settings, its state, the actions, and its delivery log with a status filter. */
export function WebhookPage(props: { orgId: string; webhookId: string }) {
  return (
    <AdminOnly orgId={props.orgId}>
      <WebhookDetail {...props} />
    </AdminOnly>
  );
}

function WebhookDetail(props: { orgId: string; webhookId: string }) {
  const { orgId, webhookId } = props;
  const path = `${webhooksPath(orgId)}/${webhookId}`;
  const req = useRequest((signal) => api<Webhook>('GET', path, { signal }), [path]);
  const ledgers = useLedgers(orgId);
  const [notice, setNotice] = useState<string>();
  const [logTick, setLogTick] = useState(0);
  const here = useMounted();
  const crumbs = [{ href: `/orgs/${orgId}/webhooks`, label: 'Webhooks' }];
  if (req.error?.status === 404)
    return (
      <>
        <PageHead title="Webhook not found" crumbs={crumbs} />
        <NotFoundState>
          <p>
            <strong>This webhook does not exist</strong> (it may have been deleted).
          </p>
          <p>
            <Link href={`/orgs/${orgId}/webhooks`}>Back to the webhooks</Link>
          </p>
        </NotFoundState>
      </>
    );
  const w = req.data;
  return (
    <>
      {/* the window's title names the webhook by its host: several open tabs were all "Webhook" */}
      <PageHead title="Webhook" docTitle={w ? `Webhook ${hostOf(w.url)}` : undefined} crumbs={crumbs} sub={w && <span class="mono break">{w.url}</span>} />
      {notice && <Notice onDismiss={() => setNotice(undefined)}>{notice}</Notice>}
      <Async req={req} label="Loading the webhook…">
        {(w) => (
          <section class="card settings" aria-label="Settings">
            <DisabledNote w={w} />
            <dl class="facts">
              <dt>State</dt>
              <dd>
                <StateBadge w={w} />
              </dd>
              <dt>Events</dt>
              <dd>{w.events.map((e) => EVENTS.find((x) => x.event === e)?.label ?? e).join('; ')}</dd>
              <dt>Ledgers</dt>
              <dd>{scopeText(w, ledgers.data, true)}</dd>
              <dt>Token</dt>
              <dd>{w.hasToken ? 'sent as X-Ledger-Token (not shown)' : 'none'}</dd>
              <dt>Last event delivered</dt>
              <dd>{w.lastSuccessAt ? <Time iso={w.lastSuccessAt} /> : <span class="muted">never</span>}</dd>
              {w.failingSince && (
                <>
                  <dt>Failing since</dt>
                  <dd>
                    <Time iso={w.failingSince} />
                  </dd>
                </>
              )}
              <dt>Created</dt>
              <dd>
                <Time iso={w.createdAt} />
              </dd>
            </dl>
            <WebhookActions
              w={w}
              orgId={orgId}
              ledgers={ledgers}
              onChanged={(message) => {
                setNotice(message);
                req.reload();
                setLogTick((n) => n + 1);
              }}
              onDeleted={(message) => {
                // not when Back left this page while the deletion was on its way
                if (here.current) navigate(`/orgs/${orgId}/webhooks`, { state: { notice: message } });
              }}
              onPinged={() => {
                req.reload();
                setLogTick((n) => n + 1);
              }}
            />
          </section>
        )}
      </Async>
      {w && <DeliveryLog path={path} tick={logTick} onGone={req.reload} />}
    </>
  );
}

/**
 * A webhook's deliveries; `tick` reloads the page shown (a test sent, the webhook changed).
 * `onGone`: the log answered 404, the webhook was deleted meanwhile (in another tab, by another
 * admin): no more following, and the page reads the webhook again, which says it does not exist
 * (the log asked every 2 s for good, "Could not refresh" under the old settings: a web tester's case).
 */
function DeliveryLog(props: { path: string; tick: number; onGone: () => void }) {
  const loc = useLocation();
  const raw = loc.query.get('status');
  const status = STATUSES.some((s) => s.value === raw) ? (raw as Status) : undefined;
  // the Older/Newer cursors belong to the status filter they were read under: another filter
  // starts at its first page from its first request, never with a cursor of the list before
  const [paging, setPaging] = useState<{ of: Status | undefined; cursors: string[] }>({ of: status, cursors: [] });
  const cursors = paging.of === status ? paging.cursors : [];
  const setCursors = (c: string[]) => setPaging({ of: status, cursors: c });
  const req = useRequest(
    (signal) => api<{ deliveries: Delivery[]; nextCursor: string | null }>('GET', `${props.path}/deliveries`, { query: { status, limit: 25, cursor: cursors.at(-1) }, signal }),
    [props.path, status, cursors.join()],
    props.tick, // a test sent or an action taken: the same page again, kept on screen meanwhile
  );
  const [open, setOpen] = useState<Delivery>();
  // while a delivery on this page is due within a minute, follow it (a retry waits 5 s, then 1 min, …)
  const due = req.data?.deliveries.some((x) => x.status === 'pending' && !x.held && x.nextAttemptAt && Date.parse(x.nextAttemptAt) - Date.now() < 60_000);
  const gone = req.error?.status === 404;
  useReloadWhile(req, Boolean(due) && !gone, 2000);
  useEffect(() => {
    if (gone) props.onGone();
  }, [gone]);
  const filtered = status ? STATUSES.find((s) => s.value === status)!.label.toLowerCase() : undefined;
  return (
    <section aria-labelledby="log-title">
      <div class="section-head log-head">
        <h2 id="log-title" class="section">
          Delivery log
        </h2>
        <button type="button" class="secondary small" onClick={req.reload} disabled={req.loading}>
          {req.loading ? 'Refreshing…' : 'Refresh'}
        </button>
      </div>
      <div class="quick" role="group" aria-label="Show deliveries">
        {STATUSES.map((s) => (
          <button key={s.label} type="button" class={`chip${s.value === status ? ' on' : ''}`} aria-pressed={s.value === status} onClick={() => setQuery({ status: s.value })}>
            {s.label}
          </button>
        ))}
      </div>
      <Async
        req={req}
        label="Loading deliveries…"
        empty={(d) => d.deliveries.length === 0 && cursors.length === 0}
        emptyText={filtered ? <p>No {filtered} deliveries.</p> : <p>Nothing was sent yet. Use “Send test” to try the receiver; events appear here as they happen.</p>}
      >
        {(d) => (
          <>
            <div class="table-wrap" tabIndex={0} role="region" aria-label="Deliveries">
              <table class="stack deliveries">
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Created</th>
                    <th scope="col">Status</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Last answer</th>
                    <th scope="col">Delivered / next try</th>
                    <th scope="col">
                      <span class="visually-hidden">Details</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.deliveries.map((x) => (
                    <tr key={x.id}>
                      <th scope="row" data-label="Event">
                        {TYPE_LABEL[x.type]} <code class="muted small">{x.type}</code>
                      </th>
                      <td data-label="Created">
                        <Time iso={x.createdAt} />
                      </td>
                      <td data-label="Status">
                        <span class={`badge ${badgeClass(x.status)}`}>{x.status}</span>
                      </td>
                      <td data-label="Attempts">
                        {x.attempts} of {x.maxAttempts}
                      </td>
                      <td data-label="Last answer" class="break">
                        {answer(x)}
                      </td>
                      <td data-label={x.status === 'pending' ? 'Next try' : x.status === 'delivered' ? 'Delivered' : 'Failed'}>
                        {x.held ? <span class="muted">held while disabled</span> : <Time iso={x.deliveredAt ?? x.failedAt ?? x.nextAttemptAt} />}
                      </td>
                      <td class="cell-actions">
                        <button type="button" class="secondary small" aria-label={`Details of the ${TYPE_LABEL[x.type]} delivery ${x.id}`} onClick={() => setOpen(x)}>
                          Details
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {(cursors.length > 0 || d.nextCursor) && (
              <CursorPager cursors={cursors} setCursors={setCursors} nextCursor={d.nextCursor} />
            )}
          </>
        )}
      </Async>
      {open && <DeliveryDetails path={`${props.path}/deliveries/${open.id}`} onClose={() => setOpen(undefined)} />}
    </section>
  );
}

/** One delivery: its attempts (when, answer, error, duration) and the payload exactly as sent. */
function DeliveryDetails(props: { path: string; onClose: () => void }) {
  const req = useRequest((signal) => api<Delivery>('GET', props.path, { signal }), [props.path]);
  return (
    <Dialog title="Delivery" onClose={props.onClose} wide>
      <Async req={req} label="Loading the delivery…">
        {(x) => (
          <div class="delivery">
            <dl class="facts">
              <dt>Event</dt>
              <dd>
                {TYPE_LABEL[x.type]} <code>{x.type}</code>
              </dd>
              <dt>Status</dt>
              <dd>
                <span class={`badge ${badgeClass(x.status)}`}>{x.status}</span>{' '}
                {x.status === 'pending' && x.nextAttemptAt && (
                  <span class="muted">
                    next try <Time iso={x.nextAttemptAt} />
                  </span>
                )}
                {x.deliveredAt && <Time iso={x.deliveredAt} />}
                {x.failedAt && <Time iso={x.failedAt} />}
              </dd>
              <dt>X-Ledger-Delivery</dt>
              <dd class="mono break">{x.id}</dd>
              <dt>Event id</dt>
              <dd class="mono break">{x.eventId}</dd>
              <dt>Created</dt>
              <dd>
                <Time iso={x.createdAt} />
              </dd>
            </dl>
            <h3>
              Attempts ({x.attempts} of {x.maxAttempts})
            </h3>
            {x.attemptLog.length === 0 ? (
              <p class="muted">Not tried yet.</p>
            ) : (
              <div class="table-wrap" tabIndex={0} role="region" aria-label="Attempts">
                <table class="attempts">
                  <thead>
                    <tr>
                      <th scope="col" class="num">
                        #
                      </th>
                      <th scope="col">When</th>
                      <th scope="col">Answer</th>
                      <th scope="col" class="num">
                        Took
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {x.attemptLog.map((a, i) => (
                      <tr key={a.at + i}>
                        <td class="num">{i + 1}</td>
                        <td>
                          <Time iso={a.at} />
                        </td>
                        <td class="break">
                          {a.error ? <span class="bad-text">{a.error}</span> : a.responseStatus !== null ? <span class="ok-text">answered {a.responseStatus}</span> : '—'}
                        </td>
                        <td class="num">{a.durationMs} ms</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <h3>Payload</h3>
            <pre class="code payload" tabIndex={0} aria-label="Payload">
              {JSON.stringify(x.payload, null, 2)}
            </pre>
          </div>
        )}
      </Async>
      <div class="actions">
        <button type="button" onClick={props.onClose}>
          Close
        </button>
      </div>
    </Dialog>
  );
}

// ── pieces shared by the list and the webhook page ────────────────────────
function useLedgers(orgId: string) {
  return useRequest(async (signal) => ({ ledgers: (await listAll<Ledger>(`${LEDGER}/orgs/${orgId}/ledgers`, 'ledgers', { signal })).items }), [orgId]);
}

/**
 * The ledgers a webhook reports on, in words; `bare`: without the "ledgers:" before them (the
 * webhook page's "Ledgers" says it). One whose ledgers were all deleted names none (the server
 * took them out of its list): it read "ledgers:" with nothing after (a tester's case).
 */
function scopeText(w: Webhook, ledgers: { ledgers: Ledger[] } | undefined, bare = false): string {
  if (!w.ledgerIds) return 'every ledger';
  if (w.ledgerIds.length === 0) return bare ? 'none: its ledgers were deleted' : 'no ledger: its ledgers were deleted';
  if (!ledgers) return w.ledgerIds.length === 1 ? '1 ledger' : `${w.ledgerIds.length} ledgers`;
  const names = w.ledgerIds.map((id) => ledgers?.ledgers.find((l) => l.id === id)?.name ?? 'a deleted ledger');
  return bare ? names.join(', ') : `${w.ledgerIds.length === 1 ? 'ledger' : 'ledgers'}: ${names.join(', ')}`;
}

/**
 * Why the webhook is disabled, as a sentence. The server names the ledger whose deletion left it
 * none by its id, "(the last: l_…)", for API clients; here that id tells nobody anything (the
 * ledger is gone), so it is left out.
 */
const reasonText = (reason: string) => {
  const r = reason.replace(/ \(the last: [^)]*\)/, '');
  return r.charAt(0).toUpperCase() + r.slice(1);
};

function StateBadge(props: { w: Webhook }) {
  const { w } = props;
  if (!w.enabled) return <span class="badge bad">disabled</span>;
  if (w.failingSince) return <span class="badge job">failing</span>;
  return <span class="badge ok">enabled</span>;
}

/** Why a webhook is disabled (the system's reason, or who disabled it), or since when it has been failing. */
function DisabledNote(props: { w: Webhook }) {
  const { w } = props;
  const held = <p class="small">No new events are recorded for it, and deliveries not yet made are held until it is enabled again. “Send test” still works, to check the receiver first.</p>;
  if (!w.enabled && systemDisabled(w))
    return (
      <div class="callout bad" role="note">
        <p>
          <strong>
            Disabled because deliveries kept failing{w.disabledAt && <> (<Time iso={w.disabledAt} />)</>}:
          </strong>
        </p>
        <p class="break">{w.disabledReason}</p>
        {held}
      </div>
    );
  if (!w.enabled)
    return (
      <div class="callout" role="note">
        <p>
          <strong class="break">{w.disabledReason ? reasonText(w.disabledReason) : 'Disabled'}</strong>
          {w.disabledAt && (
            <>
              {' '}
              on <Time iso={w.disabledAt} />
            </>
          )}
          .
        </p>
        {held}
      </div>
    );
  if (w.failingSince)
    return (
      <div class="callout" role="note">
        <p>
          Deliveries have been failing since <Time iso={w.failingSince} />. Each is retried for about 17 hours; after 3 days without a successful delivery the webhook is disabled.
        </p>
      </div>
    );
  return null;
}

/** Send test (and its outcome), delivery log, edit, enable/disable, rotate, delete: with their dialogs. */
function WebhookActions(props: {
  w: Webhook;
  orgId: string;
  ledgers: Request<{ ledgers: Ledger[] }>;
  logLink?: boolean;
  onChanged: (message: string) => void;
  onDeleted: (message: string) => void;
  onPinged?: () => void;
}) {
  const { w } = props;
  const path = `${webhooksPath(props.orgId)}/${w.id}`;
  const [editing, setEditing] = useState(false);
  const [rotating, setRotating] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const showSecret = useShowSecret();
  const here = useMounted();
  const ping = usePing(path, props.onPinged);
  const toggle = useAction(async () => {
    await api('PATCH', path, { body: { enabled: !w.enabled } });
    props.onChanged(w.enabled ? `Disabled ${w.url}; its deliveries are held.` : `Enabled ${w.url}; held deliveries go out now.`);
  });
  return (
    <>
      <div class="row-actions">
        <button type="button" class="secondary small" disabled={ping.busy} onClick={(e) => {
            refocusWhenDone(e.currentTarget);
            void ping.run(w.url);
          }} aria-label={`Send test to ${w.url}`}>
          {ping.busy ? 'Sending…' : 'Send test'}
        </button>
        {props.logLink && (
          <Link class="button secondary small" href={`/orgs/${props.orgId}/webhooks/${w.id}`} aria-label={`Delivery log of ${w.url}`}>
            Delivery log
          </Link>
        )}
        <button type="button" class="secondary small" onClick={() => setEditing(true)} aria-label={`Edit ${w.url}`}>
          Edit
        </button>
        <button type="button" class="secondary small" disabled={toggle.busy} onClick={(e) => {
            refocusWhenDone(e.currentTarget);
            void toggle.run();
          }} aria-label={`${w.enabled ? 'Disable' : systemDisabled(w) ? 'Enable again' : 'Enable'} ${w.url}`}>
          {w.enabled ? 'Disable' : systemDisabled(w) ? 'Enable again' : 'Enable'}
        </button>
        <button type="button" class="secondary small" onClick={() => setRotating(true)} aria-label={`Rotate secret of ${w.url}`}>
          Rotate secret
        </button>
        <button type="button" class="danger-outline small" onClick={() => setDeleting(true)} aria-label={`Delete ${w.url}`}>
          Delete
        </button>
      </div>
      {toggle.error && <ErrorBox error={toggle.error} title={w.enabled ? 'The webhook was not disabled.' : 'The webhook was not enabled.'} />}
      {/* the outcome of a ping to the URL shown: after an edit of the URL, the old one's "delivered" no longer says anything about it */}
      <PingOutcome state={ping.url === w.url ? ping.state : undefined} />
      {editing && (
        <WebhookForm
          orgId={props.orgId}
          ledgers={props.ledgers}
          webhook={w}
          onClose={() => setEditing(false)}
          onSaved={(saved, changed) => {
            setEditing(false);
            props.onChanged(changed ? `Saved ${saved.url}.` : 'Nothing was changed.');
          }}
        />
      )}
      {rotating && (
        <Confirm
          title="Rotate the signing secret?"
          confirm="Rotate secret"
          onClose={() => setRotating(false)}
          onConfirm={async () => {
            const rotated = await api<WithSecret>('POST', `${path}/rotate`);
            // shown by the shell, also after Back left this page meanwhile; the notice only here
            showSecret((close) => (
              <SecretDialog
                title="New signing secret"
                orgId={props.orgId}
                w={rotated}
                onClose={() => {
                  close();
                  if (here.current) props.onChanged(`Rotated the signing secret of ${w.url}.`);
                }}
              />
            ));
            return true;
          }}
        >
          <p>A new secret is made and shown once. Every attempt from now on, retries included, is signed with it: signatures made with the old secret stop at once, so update the receiver right after.</p>
        </Confirm>
      )}
      {deleting && (
        <Confirm
          title="Delete this webhook?"
          confirm="Delete webhook"
          danger
          onClose={() => setDeleting(false)}
          onConfirm={async () => {
            await api('DELETE', path);
            props.onDeleted(`Deleted the webhook for ${w.url}.`);
            return true;
          }}
        >
          <p class="break">
            No more events go to <span class="mono">{w.url}</span>. Its delivery log and any deliveries not yet made are deleted with it.
          </p>
        </Confirm>
      )}
    </>
  );
}

type PingState = { phase: 'sending' } | { phase: 'waiting' | 'delivered' | 'failed' | 'late'; delivery: Delivery } | { phase: 'error'; error: ApiError };

/** POST …/test, then polls the delivery it returns until its one attempt is recorded. */
function usePing(path: string, onDone?: () => void) {
  const [state, setState] = useState<PingState>();
  const [url, setUrl] = useState<string>();
  const alive = useRef(true);
  useEffect(
    () => () => {
      alive.current = false;
    },
    [],
  );
  const busy = state?.phase === 'sending' || state?.phase === 'waiting';
  const run = async (to: string) => {
    setUrl(to);
    setState({ phase: 'sending' });
    try {
      let x = await api<Delivery>('POST', `${path}/test`);
      const end = Date.now() + PING_WAIT_MS;
      for (let wait = 200; x.status === 'pending' && Date.now() < end; wait = Math.min(wait * 1.5, 1000)) {
        if (!alive.current) return;
        setState({ phase: 'waiting', delivery: x });
        await sleep(wait);
        x = await api<Delivery>('GET', `${path}/deliveries/${x.id}`);
      }
      if (!alive.current) return;
      setState({ phase: x.status === 'pending' ? 'late' : x.status, delivery: x });
      onDone?.();
    } catch (e) {
      if (alive.current) setState({ phase: 'error', error: asApiError(e) });
    }
  };
  return { state, url, busy, run };
}

function PingOutcome(props: { state: PingState | undefined }) {
  const s = props.state;
  let body: ComponentChildren = null;
  if (s?.phase === 'sending' || s?.phase === 'waiting') body = <Loading label={s.phase === 'sending' ? 'Sending a test ping…' : 'Test ping queued; waiting for the receiver to answer…'} />;
  else if (s?.phase === 'delivered') {
    const last = s.delivery.attemptLog.at(-1);
    body = (
      <p class="ping ok">
        <strong>Test ping delivered:</strong> the receiver answered {s.delivery.responseStatus}
        {last ? ` in ${last.durationMs} ms` : ''}.
      </p>
    );
  } else if (s?.phase === 'failed')
    body = (
      <p class="ping bad">
        <strong>Test ping failed:</strong> <span class="break">{answer(s.delivery)}</span>. Check the URL and that the receiver answers 2xx; redirects are not followed.
      </p>
    );
  else if (s?.phase === 'late') body = <p class="ping">The test ping has not been tried yet (the server is busy); its outcome will be in the delivery log.</p>;
  else if (s?.phase === 'error') return <ErrorBox error={s.error} title="The test ping was not sent." />;
  // the live region stays in the page so that screen readers announce the outcome
  return (
    <div role="status" class="ping-outcome">
      {body}
    </div>
  );
}

/** A webhook's new or rotated signing secret, shown once by the shell over any page: over one not of its organization, its title names the organization. */
function SecretDialog(props: { title: string; orgId: string; w: WithSecret; onClose: () => void }) {
  const org = useOrgNameElsewhere(props.orgId);
  return (
    <Dialog title={org ? `${props.title} in ${org}` : props.title} onClose={props.onClose} wide backCloses>
      <p class="muted break">
        Webhook <span class="mono">{props.w.url}</span>
      </p>
      <SecretOnce label="signing secret" value={props.w.secret} why={SECRET_WHY} />
      <details>
        <summary>How the receiver checks a delivery</summary>
        <p class="hint">
          Each delivery carries <code>X-Ledger-Signature: t=&lt;unix seconds&gt;,v1=&lt;hex&gt;</code>. Compute HMAC-SHA256 with the whole secret as the key over <code>t</code>, a dot and the raw body; compare in constant time, refuse old <code>t</code>, and
          deduplicate by <code>X-Ledger-Delivery</code>.
        </p>
        <pre class="code">{`const [, t, v1] = /^t=(\\d+),v1=([0-9a-f]{64})$/.exec(req.headers['x-ledger-signature']);
const expected = createHmac('sha256', SECRET).update(\`\${t}.\`).update(rawBody).digest();
const ok = timingSafeEqual(expected, Buffer.from(v1, 'hex'))
  && Math.abs(Date.now() / 1000 - Number(t)) < 300;`}</pre>
      </details>
      <SecretStored onClose={props.onClose} />
    </Dialog>
  );
}

/** A webhook URL's host (with its port), or the URL itself when it is not one. */
const hostOf = (url: string) => {
  try {
    return new URL(url).host || url;
  } catch {
    return url;
  }
};

/** The paths of the API's field errors the webhook form shows at their fields. */
const FORM_FIELDS = ['url', 'token'] as const;

/** Create a webhook, or edit one (only what changed is sent). */
function WebhookForm(props: { orgId: string; ledgers: Request<{ ledgers: Ledger[] }>; webhook?: Webhook; onClose: () => void; onSaved: (w: Webhook | WithSecret, changed: boolean) => void }) {
  const old = props.webhook;
  // empty, not "https://": a pasted address became "https://https://…", which the server took as the host "https" (a tester's case)
  const [url, setUrl] = useState(old?.url ?? '');
  const [events, setEvents] = useState<WebhookEvent[]>(old?.events ?? EVENTS.map((e) => e.event));
  const [all, setAll] = useState(!old?.ledgerIds);
  const [ledgerIds, setLedgerIds] = useState<string[]>(old?.ledgerIds ?? []);
  /** keep | set | remove the token (a new webhook: set, when one is typed). */
  const [tokenMode, setTokenMode] = useState<'keep' | 'set' | 'remove'>(old?.hasToken ? 'keep' : 'set');
  const [token, setToken] = useState('');
  const toggle = <T,>(list: T[], v: T) => (list.includes(v) ? list.filter((x) => x !== v) : [...list, v]);
  const known = props.ledgers.data?.ledgers ?? [];
  // a ledger deleted since keeps its place in the list until it is unticked
  const gone = ledgerIds.filter((id) => props.ledgers.data && !known.some((l) => l.id === id));
  const noEvents = events.length === 0;
  const noLedgers = !all && ledgerIds.length === 0;
  const act = useAction(async () => {
    const body: Record<string, unknown> = {};
    const nextLedgers = all ? null : ledgerIds;
    if (!old || url.trim() !== old.url) body.url = url.trim();
    if (!old || [...events].sort().join() !== [...old.events].sort().join()) body.events = events;
    if (old ? JSON.stringify(nextLedgers) !== JSON.stringify(old.ledgerIds) : nextLedgers) body.ledgerIds = nextLedgers;
    if (tokenMode === 'set' && token.trim()) body.token = token.trim();
    if (old?.hasToken && tokenMode === 'remove') body.token = null;
    if (!old) return props.onSaved(await api<WithSecret>('POST', webhooksPath(props.orgId), { body }), true);
    if (Object.keys(body).length === 0) return props.onSaved(old, false);
    props.onSaved(await api<Webhook>('PATCH', `${webhooksPath(props.orgId)}/${old.id}`, { body }), true);
  });
  const err = fieldErrors(act.error, FORM_FIELDS);
  return (
    <Dialog title={old ? 'Edit webhook' : 'New webhook'} onClose={props.onClose} busy={act.busy}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void act.run();
        }}
      >
        <Field
          label="URL"
          error={err.url}
          hint={
            <>
              An <code>http://</code> or <code>https://</code> address that answers a POST with 2xx. Redirects are not followed.
            </>
          }
        >
          {(id, describedBy, invalid) => (
            <input id={id} type="url" required maxLength={2048} autoFocus spellcheck={false} autocomplete="off" placeholder="https://crm.example.com/hooks/contact-ledger" aria-describedby={describedBy} aria-invalid={invalid} value={url} onInput={(e) => act.edited(setUrl)(e.currentTarget.value)} />
          )}
        </Field>
        <fieldset aria-describedby={noEvents ? 'wh-events-error' : undefined}>
          <legend>Events</legend>
          {EVENTS.map((e) => (
            <label key={e.event} class="check multi">
              <input type="checkbox" checked={events.includes(e.event)} onChange={() => setEvents(toggle(events, e.event))} />
              <span>
                {e.label} <code class="event-code">{e.event}</code>
              </span>
            </label>
          ))}
          {noEvents && (
            <p class="field-error" id="wh-events-error">
              Choose at least one event.
            </p>
          )}
        </fieldset>
        <fieldset aria-describedby={noLedgers ? 'wh-ledgers-error' : undefined}>
          <legend>Ledgers</legend>
          <label class="check multi">
            <input type="radio" name="wh-scope" checked={all} onChange={() => setAll(true)} />
            <span>Every ledger, also those created later</span>
          </label>
          <label class="check multi">
            <input type="radio" name="wh-scope" checked={!all} onChange={() => setAll(false)} />
            <span>Only these ledgers</span>
          </label>
          {!all && (
            <div class="indent" role="group" aria-label="Ledgers">
              {props.ledgers.error && <ErrorBox error={props.ledgers.error} retry={props.ledgers.reload} title="Could not load the ledgers." />}
              {!props.ledgers.data && !props.ledgers.error && <Loading label="Loading ledgers…" />}
              {props.ledgers.data && known.length === 0 && <p class="muted">This organization has no ledgers yet.</p>}
              {known.map((l) => (
                <label key={l.id} class="check multi">
                  <input type="checkbox" checked={ledgerIds.includes(l.id)} onChange={() => setLedgerIds(toggle(ledgerIds, l.id))} />
                  <span class="break">{l.name}</span>
                </label>
              ))}
              {gone.map((id) => (
                <label key={id} class="check multi">
                  <input type="checkbox" checked onChange={() => setLedgerIds(toggle(ledgerIds, id))} />
                  <span>
                    a deleted ledger <code class="event-code">{id}</code>
                  </span>
                </label>
              ))}
              {noLedgers && props.ledgers.data && known.length > 0 && (
                <p class="field-error" id="wh-ledgers-error">
                  Choose at least one ledger.
                </p>
              )}
            </div>
          )}
        </fieldset>
        {old?.hasToken ? (
          <fieldset>
            <legend>Token</legend>
            <label class="check multi">
              <input type="radio" name="wh-token-mode" checked={tokenMode === 'keep'} onChange={() => setTokenMode('keep')} />
              <span>Keep the current token</span>
            </label>
            <label class="check multi">
              <input type="radio" name="wh-token-mode" checked={tokenMode === 'set'} onChange={() => setTokenMode('set')} />
              <span>Replace it</span>
            </label>
            <label class="check multi">
              <input type="radio" name="wh-token-mode" checked={tokenMode === 'remove'} onChange={() => setTokenMode('remove')} />
              <span>Remove it</span>
            </label>
            {tokenMode === 'set' && <TokenInput label="New token" value={token} onInput={act.edited(setToken)} error={err.token} required />}
          </fieldset>
        ) : (
          <TokenInput label="Token (optional)" value={token} onInput={act.edited(setToken)} error={err.token} />
        )}
        <FormError error={act.error} fields={FORM_FIELDS} />
        <div class="actions">
          <button type="button" class="secondary" disabled={act.busy} onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" disabled={act.busy || noEvents || noLedgers}>
            {act.busy ? (old ? 'Saving…' : 'Creating…') : old ? 'Save' : 'Create webhook'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function TokenInput(props: { label: string; value: string; onInput: (v: string) => void; error?: string | undefined; required?: boolean }) {
  return (
    <Field label={props.label} error={props.error} hint={
        <>
          Sent as <code>X-Ledger-Token</code> with every delivery, for receivers that check a shared value: up to 512 printable ASCII characters (letters A–Z, digits, punctuation; spaces only between them), no accented letters or line breaks. It is never shown again.
        </>
      }>
      {(id, describedBy, invalid) => (
        <input
          id={id}
          class="mono"
          maxLength={512}
          required={props.required}
          autocomplete="off"
          spellcheck={false}
          aria-describedby={describedBy}
          aria-invalid={invalid}
          value={props.value}
          onInput={(e) => props.onInput(e.currentTarget.value)}
        />
      )}
    </Field>
  );
}
