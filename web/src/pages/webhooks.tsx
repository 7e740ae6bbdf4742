import { useState } from 'preact/hooks';
import { api, LEDGER } from '../api.ts';
import { Async, Confirm, Dialog, Empty, ErrorBox, FormError, Notice, PageHead, SecretOnce, Time, useAction, useRequest, useRole, asApiError } from '../ui.tsx';
import type { ApiError } from '../api.ts';
import type { Ledger } from './ledgers.tsx';

/** SPEC §6. */
interface Webhook {
  id: string;
  url: string;
  events: string[];
  ledgerIds: string[] | null;
  hasToken?: boolean;
  enabled: boolean;
  disabledReason?: string | null;
  failingSince?: string | null;
  lastSuccessAt?: string | null;
  createdAt: string;
}
interface Delivery {
  id: string;
  type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  responseStatus: number | null;
  error: string | null;
  createdAt: string;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
}
const EVENTS: [string, string][] = [
  ['contact.job_changed', 'A contact changed jobs'],
  ['contact.info_changed', "A contact's information changed"],
  ['import.completed', 'An import finished'],
];

/** Webhooks: create (signing secret shown once), enable/disable, test, delivery log, delete. */
export function Webhooks(props: { orgId: string }) {
  const { orgId } = props;
  const role = useRole(orgId);
  const path = `${LEDGER}/orgs/${orgId}/webhooks`;
  const req = useRequest((signal) => api<{ webhooks: Webhook[] }>('GET', path, { query: { limit: 1000 }, signal }), [path]);
  const ledgers = useRequest((signal) => api<{ ledgers: Ledger[] }>('GET', `${LEDGER}/orgs/${orgId}/ledgers`, { query: { limit: 1000 }, signal }), [orgId]);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ url: string; secret: string }>();
  const [deleting, setDeleting] = useState<Webhook>();
  const [log, setLog] = useState<Webhook>();
  const [notice, setNotice] = useState<string>();
  const [rowError, setRowError] = useState<ApiError>();
  const ledgerName = (id: string) => ledgers.data?.ledgers.find((l) => l.id === id)?.name ?? id;
  const act = async (what: string, fn: () => Promise<unknown>) => {
    setRowError(undefined);
    try {
      await fn();
      setNotice(what);
    } catch (e) {
      setRowError(asApiError(e));
    }
    req.reload();
  };

  if (role !== 'admin')
    return (
      <>
        <PageHead title="Webhooks" />
        <Empty>Webhooks are managed by the organization's admins.</Empty>
      </>
    );
  const unavailable = req.error?.code === 'route_not_found';
  return (
    <>
      <PageHead title="Webhooks" sub="contact-ledger POSTs a signed JSON event to your URL when a contact changes jobs or information, or an import finishes.">
        {!unavailable && (
          <button type="button" onClick={() => setCreating(true)}>
            New webhook
          </button>
        )}
      </PageHead>
      {notice && <Notice onDismiss={() => setNotice(undefined)}>{notice}</Notice>}
      {rowError && <ErrorBox error={rowError} />}
      {unavailable ? (
        <Empty>This server does not offer webhooks (its version has no webhook API).</Empty>
      ) : (
        <Async req={req} label="Loading webhooks…" empty={(d) => d.webhooks.length === 0} emptyText={<p>No webhooks yet. Create one to be told about changes as they happen, instead of polling.</p>}>
          {(d) => (
            <ul class="cards" aria-label="Webhooks">
              {d.webhooks.map((w) => (
                <li key={w.id} class="card">
                  <div class="section-head">
                    <h2 class="break mono small-h">{w.url}</h2>
                    {w.enabled ? <span class="badge ok">enabled</span> : <span class="badge bad">disabled</span>}
                  </div>
                  {!w.enabled && w.disabledReason && <p class="form-error">{w.disabledReason}</p>}
                  <p class="meta">
                    <span>{w.events.join(', ')}</span>
                    <span>{w.ledgerIds ? `ledgers: ${w.ledgerIds.map(ledgerName).join(', ')}` : 'every ledger'}</span>
                    {w.lastSuccessAt !== undefined && (
                      <span>
                        last delivered: <Time iso={w.lastSuccessAt} />
                      </span>
                    )}
                  </p>
                  <div class="row-actions">
                    <button type="button" class="secondary small" onClick={() => void act('Test event queued; see the delivery log.', () => api('POST', `${path}/${w.id}/test`))}>
                      Send test
                    </button>
                    <button type="button" class="secondary small" onClick={() => setLog(w)}>
                      Delivery log
                    </button>
                    <button type="button" class="secondary small" onClick={() => void act(w.enabled ? 'Webhook disabled.' : 'Webhook enabled.', () => api('PATCH', `${path}/${w.id}`, { body: { enabled: !w.enabled } }))}>
                      {w.enabled ? 'Disable' : 'Enable'}
                    </button>
                    <button type="button" class="danger-outline small" onClick={() => setDeleting(w)}>
                      Delete
                    </button>
                  </div>
                </li>
              ))}
            </ul>
          )}
        </Async>
      )}
      {creating && (
        <CreateWebhook
          path={path}
          ledgers={ledgers.data?.ledgers ?? []}
          onClose={() => setCreating(false)}
          onDone={(w) => {
            setCreating(false);
            setSecret(w);
            req.reload();
          }}
        />
      )}
      {secret && (
        <Dialog title="Webhook created" onClose={() => setSecret(undefined)} wide>
          <SecretOnce label="signing secret" value={secret.secret} />
          <p class="hint">
            Each delivery carries <code>X-Ledger-Signature: t=&lt;unix seconds&gt;,v1=&lt;hex HMAC-SHA256(secret, "t.body")&gt;</code>. Check it before trusting an event.
          </p>
          <div class="actions">
            <button type="button" onClick={() => setSecret(undefined)}>
              I have stored the secret
            </button>
          </div>
        </Dialog>
      )}
      {deleting && (
        <Confirm
          title="Delete this webhook?"
          confirm="Delete webhook"
          danger
          onClose={() => setDeleting(undefined)}
          onConfirm={async () => {
            await api('DELETE', `${path}/${deleting.id}`);
            setNotice('Webhook deleted.');
            req.reload();
            return true;
          }}
        >
          <p class="break">No more events go to {deleting.url}; its delivery log is removed.</p>
        </Confirm>
      )}
      {log && <DeliveryLog path={`${path}/${log.id}/deliveries`} url={log.url} onClose={() => setLog(undefined)} />}
    </>
  );
}

function CreateWebhook(props: { path: string; ledgers: Ledger[]; onClose: () => void; onDone: (w: { url: string; secret: string }) => void }) {
  const [url, setUrl] = useState('https://');
  const [events, setEvents] = useState<string[]>(EVENTS.map(([e]) => e));
  const [all, setAll] = useState(true);
  const [ledgerIds, setLedgerIds] = useState<string[]>([]);
  const [token, setToken] = useState('');
  const act = useAction(async () => {
    const body = { url: url.trim(), events, ...(all ? {} : { ledgerIds }), ...(token.trim() ? { token: token.trim() } : {}) };
    const w = await api<Webhook & { secret: string }>('POST', props.path, { body });
    props.onDone({ url: w.url, secret: w.secret });
  });
  const toggle = (list: string[], v: string) => (list.includes(v) ? list.filter((x) => x !== v) : [...list, v]);
  return (
    <Dialog title="New webhook" onClose={props.onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void act.run();
        }}
      >
        <div class="field">
          <label for="wh-url">URL</label>
          <input id="wh-url" type="url" required autoFocus value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
        </div>
        <fieldset>
          <legend>Events</legend>
          {EVENTS.map(([e, label]) => (
            <label key={e} class="check">
              <input type="checkbox" checked={events.includes(e)} onChange={() => setEvents(toggle(events, e))} /> {label} <code>{e}</code>
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>Ledgers</legend>
          <label class="check">
            <input type="radio" name="wh-scope" checked={all} onChange={() => setAll(true)} /> Every ledger
          </label>
          <label class="check">
            <input type="radio" name="wh-scope" checked={!all} onChange={() => setAll(false)} /> Only these:
          </label>
          {!all && (
            <div class="indent">
              {props.ledgers.length === 0 && <p class="muted">No ledgers yet.</p>}
              {props.ledgers.map((l) => (
                <label key={l.id} class="check">
                  <input type="checkbox" checked={ledgerIds.includes(l.id)} onChange={() => setLedgerIds(toggle(ledgerIds, l.id))} /> {l.name}
                </label>
              ))}
            </div>
          )}
        </fieldset>
        <div class="field">
          <label for="wh-token">Token (optional)</label>
          <input id="wh-token" value={token} aria-describedby="wh-token-hint" onInput={(e) => setToken(e.currentTarget.value)} />
          <p class="hint" id="wh-token-hint">
            Sent as <code>X-Ledger-Token</code> with every delivery, for receivers that check a shared token.
          </p>
        </div>
        <FormError error={act.error} />
        <div class="actions">
          <button type="button" class="secondary" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" disabled={act.busy || events.length === 0}>
            {act.busy ? 'Creating…' : 'Create webhook'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function DeliveryLog(props: { path: string; url: string; onClose: () => void }) {
  const req = useRequest((signal) => api<{ deliveries: Delivery[] }>('GET', props.path, { query: { limit: 100 }, signal }), [props.path]);
  return (
    <Dialog title="Delivery log" onClose={props.onClose} wide>
      <p class="muted break">{props.url}</p>
      <Async req={req} label="Loading deliveries…" empty={(d) => d.deliveries.length === 0} emptyText="Nothing was sent yet. Use “Send test” to try the endpoint.">
        {(d) => (
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Deliveries">
            <table>
              <thead>
                <tr>
                  <th scope="col">Created</th>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="num">Attempts</th>
                  <th scope="col">Answer</th>
                  <th scope="col">Next try</th>
                </tr>
              </thead>
              <tbody>
                {d.deliveries.map((x) => (
                  <tr key={x.id}>
                    <td>
                      <Time iso={x.createdAt} />
                    </td>
                    <td>{x.type}</td>
                    <td>
                      <span class={`badge ${x.status === 'delivered' ? 'ok' : x.status === 'failed' ? 'bad' : ''}`}>{x.status}</span>
                    </td>
                    <td class="num">{x.attempts}</td>
                    <td class="break">{x.responseStatus ? `HTTP ${x.responseStatus}` : (x.error ?? '—')}</td>
                    <td>
                      <Time iso={x.nextAttemptAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Async>
      <div class="actions">
        <button type="button" class="secondary" onClick={req.reload}>
          Refresh
        </button>
        <button type="button" onClick={props.onClose}>
          Close
        </button>
      </div>
    </Dialog>
  );
}
