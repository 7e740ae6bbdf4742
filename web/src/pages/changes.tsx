import { useRef, useState } from 'preact/hooks';
import { api, ApiError, download, LEDGER, listAll } from '../api.ts';
import { setQuery, useLocation } from '../router.ts';
import { Async, ErrorBox, fmtCount, fmtDate, fmtNumber, FormError, Link, Notice, refocusWhenDone, Time, useAction, useRequest } from '../ui.tsx';
import { LedgerHead } from './ledger-head.tsx';

/** The information fields of a change, in words (as on the contact page). */
const FIELD_WORDS: Record<string, string> = { title: 'title', location: 'location', email: 'e-mail', emailStatus: 'e-mail status', hasMultipleJobs: 'several jobs', jobStartedAt: 'job start' };
const TYPES: [string, string][] = [
  ['', 'All changes'],
  ['job', 'Job changes'],
  ['info', 'Information changes'],
];
/** Changes a page: each needs its contact's name (one request a contact), so not the API's 1000. */
const PAGE = 50;

interface Change {
  id: string;
  contactId: string;
  type: 'job' | 'info';
  field?: string;
  from: Record<string, unknown> | null;
  to: Record<string, unknown> | null;
  detectedAt: string;
  observedAt: string | null;
}
interface ChangeFeed {
  changes: Change[];
  nextCursor: string | null;
}
interface DailySet {
  date: string;
  createdAt: string;
  files: { name: string; bytes: number; contacts: number; url: string }[];
}

const valueOf = (side: Record<string, unknown> | null | undefined, field: string | null | undefined) =>
  side && field && Object.prototype.hasOwnProperty.call(side, field) ? side[field] : side;
const show = (v: unknown) => (v === null || v === undefined || v === '' ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v));
/** A contact's value isolated from the words around it (right-to-left text: see contact.tsx). */
const Value = (props: { v: unknown }) => <bdi>{show(props.v)}</bdi>;
/** YYYYMMDD (a daily set's UTC day) as an ISO day. */
const isoDay = (d: string) => `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}`;
const fmtBytes = (n: number) => (n < 1024 ? `${n} bytes` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} kB` : `${(n / 1024 / 1024).toFixed(1)} MB`);

/**
 * A ledger's changes (the ledger-wide change feed, `GET …/changes`) in the order the API gives
 * them — the order they were detected, oldest first — filtered by type and by a day since which
 * (in the URL, so a reload or a shared link shows the same), a page at a time; and its daily
 * change sets, downloadable.
 */
export function Changes(props: { orgId: string; ledgerId: string }) {
  const { orgId, ledgerId } = props;
  const q = useLocation().query;
  const type = q.get('type') ?? '';
  const since = q.get('since') ?? '';
  return (
    <LedgerHead orgId={orgId} ledgerId={ledgerId} tab="changes">
      <ChangeFilters key={`${type}|${since}`} type={type} since={since} />
      {/* another filter is another list: none of the pages read under the one before */}
      <ChangeList key={`${type}|${since}`} orgId={orgId} ledgerId={ledgerId} type={type} since={since} />
      <DailySets orgId={orgId} ledgerId={ledgerId} />
    </LedgerHead>
  );
}

function ChangeFilters(props: { type: string; since: string }) {
  const [type, setType] = useState(props.type);
  const [since, setSince] = useState(props.since);
  return (
    <form
      class="filters"
      aria-label="Filter changes"
      onSubmit={(e) => {
        e.preventDefault();
        setQuery({ type: type || undefined, since: since || undefined });
      }}
    >
      <div class="filter-grid">
        <div class="field">
          <label for="chg-type">Type</label>
          <select id="chg-type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
            {TYPES.map(([v, label]) => (
              <option key={v} value={v}>
                {label}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="chg-since">Detected since</label>
          <input id="chg-since" type="date" aria-describedby="chg-since-hint" value={/^\d{4}-\d{2}-\d{2}$/.test(since) ? since : ''} onInput={(e) => setSince(e.currentTarget.value)} />
        </div>
      </div>
      <p class="hint" id="chg-since-hint">
        Changes are listed in the order they were detected, oldest first. “Detected since” is a whole day in UTC, included from its start.
      </p>
      <div class="actions left">
        <button type="submit">Apply filters</button>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            setType('');
            setSince('');
            setQuery({});
          }}
        >
          Clear
        </button>
      </div>
    </form>
  );
}

/** The contacts' names, by id, read once each (the feed gives only the ids); null: deleted meanwhile. */
function useNames(orgId: string, ledgerId: string) {
  const names = useRef(new Map<string, string | null>());
  return async (ids: string[], signal?: AbortSignal) => {
    const todo = [...new Set(ids)].filter((id) => !names.current.has(id));
    // a few at a time: a page of 50 changes may name 50 contacts
    for (let i = 0; i < todo.length; i += 6) {
      await Promise.all(
        todo.slice(i, i + 6).map(async (id) => {
          try {
            const c = await api<{ name: string }>('GET', `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/contacts/${id}`, { signal });
            names.current.set(id, c.name);
          } catch (e) {
            if (e instanceof ApiError && e.status === 404) names.current.set(id, null);
            else throw e;
          }
        }),
      );
    }
    return new Map(names.current);
  };
}

function ChangeList(props: { orgId: string; ledgerId: string; type: string; since: string }) {
  const { orgId, ledgerId, type, since } = props;
  const path = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/changes`;
  const names = useNames(orgId, ledgerId);
  const read = async (cursor: string | undefined, signal?: AbortSignal) => {
    // a cursor carries its filters: sent alone (docs/tracking.md)
    const page = await api<ChangeFeed>('GET', path, { query: cursor ? { limit: PAGE, cursor } : { limit: PAGE, type, since }, signal });
    return { ...page, names: await names(page.changes.map((c) => c.contactId), signal) };
  };
  const first = useRequest((signal) => read(undefined, signal), [path, type, since]);
  const [later, setLater] = useState<Awaited<ReturnType<typeof read>>[]>([]);
  const more = useAction(async (cursor: string) => {
    const page = await read(cursor);
    setLater((l) => [...l, page]);
    // focus on the first change the page added, so a keyboard user reads on from there
    requestAnimationFrame(() => document.getElementById(`chg-${page.changes[0]?.id}`)?.focus());
  });
  const refused = first.error?.code === 'invalid_parameter' || first.error?.status === 400;
  const filtered = Boolean(type || since);
  if (refused)
    return (
      <div class="state error" role="alert">
        <p>
          <strong>The changes cannot be filtered this way.</strong> {since && !/^\d{4}-\d{2}-\d{2}$/.test(since) ? `“Detected since” is “${since}”, which is not a date.` : 'The type must be job or information changes, and “Detected since” a day.'}
        </p>
        <button type="button" class="secondary" onClick={() => setQuery({}, { replace: true })}>
          Clear the filters
        </button>
      </div>
    );
  return (
    <section aria-labelledby="changes-title">
      <h2 id="changes-title">Changes</h2>
      <Async
        req={first}
        label="Loading changes…"
        empty={(d) => d.changes.length === 0}
        emptyText={
          filtered ? (
            <p>
              No change matches these filters.{' '}
              <button type="button" class="link" onClick={() => setQuery({})}>
                Clear the filters
              </button>
            </p>
          ) : (
            <p>No change has been recorded in this ledger yet. Job and information changes appear here once the person-data feed finds them for its contacts.</p>
          )
        }
      >
        {(d) => {
          const pages = [d, ...later];
          const all = pages.flatMap((p) => p.changes.map((c) => ({ c, name: p.names.get(c.contactId) })));
          const next = pages.at(-1)!.nextCursor;
          return (
            <div aria-busy={more.busy}>
              <ol class="timeline changes">
                {all.map(({ c, name }) => (
                  <li key={c.id} id={`chg-${c.id}`} class={c.type} tabIndex={-1}>
                    <p class="when">
                      <Time iso={c.detectedAt} />
                      <span class={`badge ${c.type === 'job' ? 'job' : ''}`}>{c.type === 'job' ? 'job change' : `${FIELD_WORDS[c.field ?? ''] ?? c.field ?? 'info'} changed`}</span>
                    </p>
                    <p class="who-changed">
                      {name === null ? (
                        <span class="muted">A deleted contact</span>
                      ) : (
                        <Link href={`/orgs/${orgId}/ledgers/${ledgerId}/contacts/${c.contactId}`}>
                          <bdi>{name ?? c.contactId}</bdi>
                        </Link>
                      )}
                    </p>
                    {c.type === 'job' ? (
                      <p>
                        <Value v={c.from?.title} /> at <strong><Value v={c.from?.company} /></strong> → <Value v={c.to?.title} /> at <strong><Value v={c.to?.company} /></strong>
                      </p>
                    ) : (
                      <p>
                        <Value v={valueOf(c.from, c.field)} /> → <strong><Value v={valueOf(c.to, c.field)} /></strong>
                      </p>
                    )}
                  </li>
                ))}
              </ol>
              <p class="muted" role="status">
                {next ? `The first ${fmtNumber(all.length)} changes${filtered ? ' that match' : ''} are shown.` : `${all.length === 1 ? 'The one change' : `All ${fmtNumber(all.length)} changes`}${filtered ? ' that match' : ''} ${all.length === 1 ? 'is' : 'are'} shown.`}
              </p>
              <FormError error={more.error} />
              {next && (
                <button type="button" class="secondary" disabled={more.busy} onClick={() => void more.run(next)}>
                  {more.busy ? 'Loading…' : 'Show more changes'}
                </button>
              )}
            </div>
          );
        }}
      </Async>
    </section>
  );
}

/** The ledger's daily change sets (newest day first), each file downloadable with the session's token. */
function DailySets(props: { orgId: string; ledgerId: string }) {
  const { orgId, ledgerId } = props;
  const path = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/streams/daily`;
  const req = useRequest(async (signal) => {
    const first = await api<{ streams: DailySet[]; nextCursor: string | null; writtenThrough: string }>('GET', path, { signal });
    // the rest, if there are more than a page of 100 days (CHANGE_SETS_KEEP_DAYS=0 keeps every set)
    const rest = first.nextCursor ? await listAll<DailySet>(`${path}`, 'streams', { signal }) : undefined;
    return { streams: rest ? rest.items : first.streams, writtenThrough: first.writtenThrough };
  }, [path]);
  const [notice, setNotice] = useState<string>();
  const dl = useAction(async (date: string, name: string) => {
    setNotice(undefined);
    // the bearer token cannot ride on a plain link: fetched and saved from a blob: URL, as the contacts CSV is
    const saved = await download(`${path}/${date}/${name}`);
    setNotice(`Downloaded ${saved}.`);
  });
  return (
    <section class="card daily-sets" aria-labelledby="daily-title">
      <h2 id="daily-title">Daily change sets</h2>
      <p class="hint">
        After each UTC day (at 00:10 UTC) the server writes the contacts that changed that day, as they are then, one JSON object a line, gzipped. The change list above keeps every change; sets are kept for a limited time (30 days, unless the server is set otherwise).
      </p>
      {dl.error && <ErrorBox error={dl.error} title="The download failed." />}
      {notice && <Notice onDismiss={() => setNotice(undefined)}>{notice}</Notice>}
      <Async
        req={req}
        label="Loading the daily change sets…"
        empty={(d) => d.streams.length === 0}
        emptyText={<p>No daily change set yet: a set is written after each UTC day on which contacts of this ledger changed.</p>}
      >
        {(d) => (
          <>
            <p class="muted">Every day up to {fmtDate(isoDay(d.writtenThrough))} with changes has its set: a day of the last month up to then that is not listed had no changes.</p>
            <div class="table-wrap" tabIndex={0} role="region" aria-label="Daily change sets">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Day (UTC)</th>
                    <th scope="col">File</th>
                    <th scope="col" class="num">Contacts</th>
                    <th scope="col" class="num">Size</th>
                    <th scope="col">
                      <span class="visually-hidden">Download</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.streams.flatMap((s) =>
                    s.files.map((f) => (
                      <tr key={f.name}>
                        <th scope="row" class="plain">
                          <time dateTime={isoDay(s.date)}>{fmtDate(isoDay(s.date))}</time>
                        </th>
                        <td class="mono break">{f.name}</td>
                        <td class="num">{fmtNumber(f.contacts)}</td>
                        <td class="num">{fmtBytes(f.bytes)}</td>
                        <td>
                          <button type="button" class="secondary small" disabled={dl.busy} aria-label={`Download ${f.name} (${fmtCount(f.contacts, 'contact')})`} onClick={(e) => {
                              refocusWhenDone(e.currentTarget);
                              void dl.run(s.date, f.name);
                            }}
                          >
                            Download
                          </button>
                        </td>
                      </tr>
                    )),
                  )}
                </tbody>
              </table>
            </div>
          </>
        )}
      </Async>
    </section>
  );
}
