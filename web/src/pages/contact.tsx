import { useState } from 'preact/hooks';
import { api, LEDGER } from '../api.ts';
import { entryState, navigate } from '../router.ts';
import { Async, atLeast, Confirm, Email, fmtNumber, FormError, Link, Time, useAction, useMounted, useRequest, useRole } from '../ui.tsx';
import type { Contact } from './contacts.tsx';
import { ChangeWhat, ChangeWhen, show, Value, type ChangePage } from '../change-view.tsx';
import { LedgerHead } from './ledger-head.tsx';

const PAGE = 100;

/** One contact: current and imported values, and its change history as a timeline. */
export function ContactDetail(props: { orgId: string; ledgerId: string; contactId: string }) {
  const { orgId, ledgerId, contactId } = props;
  const role = useRole(orgId);
  const path = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/contacts/${contactId}`;
  const contact = useRequest((signal) => api<Contact>('GET', path, { signal }), [path]);
  const [confirm, setConfirm] = useState(false);
  const here = useMounted();
  // the list this contact was opened from (its filters, sort and page), to go back to
  const listPath = `/orgs/${orgId}/ledgers/${ledgerId}`;
  const from = entryState('list');
  const back = typeof from === 'string' && (from === listPath || from.startsWith(`${listPath}?`)) ? from : listPath;
  const missing = contact.error?.status === 404;
  return (
    <>
      <LedgerHead orgId={orgId} ledgerId={ledgerId} tab="contact" title={contact.data?.name ?? (missing ? 'Contact not found' : 'Contact')} back={back}>
        <Async
          req={contact}
          label="Loading the contact…"
          notFound={
            <>
              <p>
                <strong>This contact does not exist</strong> (it may have been deleted).
              </p>
              <p>
                <Link href={back}>Go to the ledger's contacts</Link>
              </p>
            </>
          }
        >
          {(c) => (
            <div class="detail">
              <section class="card" aria-labelledby="now-title">
                <div class="section-head">
                  <h2 id="now-title">Now</h2>
                  {c.isVerified ? <span class="badge ok">verified</span> : <span class="badge">not matched yet</span>}
                </div>
                <dl class="facts">
                  <dt>Company</dt>
                  <dd>
                    <Value v={c.company} />
                  </dd>
                  <dt>Title</dt>
                  <dd>
                    <Value v={c.title} />
                    {c.titleLevel && <span class="muted"> ({[c.titleLevel, c.titleDomain].filter(Boolean).join(', ')})</span>}
                  </dd>
                  <dt>Location</dt>
                  <dd>{show(c.location)}</dd>
                  <dt>E-mail</dt>
                  <dd>
                    {/* broken after the @ and before a dot first, as in the tables */}
                    {c.contactInfo.email ? <Email address={c.contactInfo.email} /> : '—'}
                    {c.contactInfo.emailStatus && <span class="muted"> ({c.contactInfo.emailStatus})</span>}
                  </dd>
                  <dt>LinkedIn</dt>
                  <dd class="break">{c.linkedin ? <a href={c.linkedin} rel="noreferrer noopener" target="_blank">{c.linkedin}</a> : '—'}</dd>
                  <dt>Job started</dt>
                  <dd>
                    <Time iso={c.jobStartedAt} dateOnly />
                  </dd>
                  <dt>Last job change</dt>
                  <dd>
                    <Time iso={c.lastJobChangedAt} dateOnly />
                  </dd>
                  <dt>Last info change</dt>
                  <dd>
                    <Time iso={c.lastInfoChangedAt} dateOnly />
                  </dd>
                </dl>
              </section>
              <section class="card" aria-labelledby="imported-title">
                <h2 id="imported-title">As imported</h2>
                <dl class="facts">
                  <dt>Company</dt>
                  <dd>{show(c.importCompany)}</dd>
                  <dt>Title</dt>
                  <dd>{show(c.importTitle)}</dd>
                  <dt>Reference id</dt>
                  <dd class="mono">{show(c.referenceId)}</dd>
                  <dt>Added</dt>
                  <dd>
                    <Time iso={c.createdAt} dateOnly />
                  </dd>
                  <dt>Contact id</dt>
                  <dd class="mono break">{c.id}</dd>
                </dl>
                {atLeast(role, 'editor') && (
                  <div class="actions left">
                    <button type="button" class="danger-outline small" onClick={() => setConfirm(true)}>
                      Delete contact
                    </button>
                  </div>
                )}
              </section>
              <section class="card timeline-card" aria-labelledby="history-title">
                <h2 id="history-title">Change history</h2>
                <History path={path} />
              </section>
            </div>
          )}
        </Async>
        {confirm && contact.data && (
          <Confirm
            title={`Delete ${contact.data.name}?`}
            confirm="Delete contact"
            danger
            onClose={() => setConfirm(false)}
            onConfirm={async () => {
              await api('DELETE', path);
              // back to the list it came from, filters and all, saying what happened (not when
              // Back left this page while the deletion was on its way: the page gone to stays).
              // The list takes the contact's history entry: Back then goes to the page before the
              // contact, not to "This contact does not exist" (a tester's case)
              if (here.current) navigate(back, { replace: true, state: { notice: `Deleted ${contact.data!.name}.` } });
              return true;
            }}
          >
            <p>The contact and its change history are removed from this ledger.</p>
          </Confirm>
        )}
      </LedgerHead>
    </>
  );
}

/** The change history newest first, a page at a time: "Show older changes" appends the next page. */
function History(props: { path: string }) {
  const { path } = props;
  const first = useRequest((signal) => api<ChangePage>('GET', `${path}/changes`, { query: { limit: PAGE }, signal }), [path]);
  const [older, setOlder] = useState<ChangePage[]>([]);
  const more = useAction(async (cursor: string) => {
    const page = await api<ChangePage>('GET', `${path}/changes`, { query: { limit: PAGE, cursor } });
    setOlder((o) => [...o, page]);
  });
  return (
    <Async req={first} label="Loading the history…" empty={(d) => d.changes.length === 0} emptyText={<p>No change recorded since this contact was imported.</p>}>
      {(d) => {
        const pages = [d, ...older];
        const changes = pages.flatMap((p) => p.changes);
        const next = pages.at(-1)!.nextCursor;
        return (
          <div aria-busy={more.busy}>
            <ol class="timeline">
              {changes.map((ch) => (
                <li key={ch.id} class={ch.type}>
                  <ChangeWhen change={ch} />
                  <ChangeWhat change={ch} />
                  {ch.observedAt && (
                    <p class="muted small">
                      observed <Time iso={ch.observedAt} dateOnly />
                    </p>
                  )}
                </li>
              ))}
            </ol>
            <p class="muted" role="status">
              {next ? `The newest ${fmtNumber(changes.length)} changes are shown.` : changes.length > 1 ? `All ${fmtNumber(changes.length)} changes are shown.` : ''}
            </p>
            <FormError error={more.error} />
            {next && (
              <button type="button" class="secondary" disabled={more.busy} onClick={() => void more.run(next)}>
                {more.busy ? 'Loading…' : 'Show older changes'}
              </button>
            )}
          </div>
        );
      }}
    </Async>
  );
}
