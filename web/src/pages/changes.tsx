import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, download, LEDGER, listAll } from '../api.ts';
import { entryState, setQuery, useFocusAfterPop, useLocation, useReturnPosition } from '../router.ts';
import { Async, ErrorBox, fmtCount, fmtDate, fmtNumber, FormError, Link, Notice, refocusWhenDone, useAction, useRequest } from '../ui.tsx';
import { ChangeWhat, ChangeWhen, type Change, type ChangePage } from '../change-view.tsx';
import { LedgerHead, useRetryWithHead } from './ledger-head.tsx';

const TYPES: [string, string][] = [
  ['', 'All changes'],
  ['job', 'Job changes'],
  ['info', 'Information changes'],
];
/** Changes a page, each with its contact (`include=contact`), as many as the contacts list shows. */
const PAGE = 50;

interface DailySet {
  date: string;
  createdAt: string;
  files: { name: string; bytes: number; contacts: number; url: string }[];
}

/** YYYYMMDD (a daily set's UTC day) as an ISO day. */
const isoDay = (d: string) => `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}`;
const fmtBytes = (n: number) => (n < 1024 ? `${n} bytes` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} kB` : `${(n / 1024 / 1024).toFixed(1)} MB`);

const PLAIN_DAY = /^\d{4}-\d{2}-\d{2}$/;
/** A timestamp as the API reads `since` (src/clock.ts DATE_TIME): a day, a time, an optional zone (none: UTC). */
const MOMENT = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
/**
 * A `since` that is a moment rather than a day (`?since=2026-12-01T10:00:00Z`, which the API
 * applies) in words, in UTC: "2026-12-01 10:00 UTC"; undefined for a day or what is no moment. A
 * `+` of an offset written unencoded in the link arrives as a space, and is read as the API reads it.
 */
function momentOf(since: string): string | undefined {
  const m = MOMENT.exec(since.trim().replace(/(\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}(?::?\d{2})?)$/, '$1+$2'));
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s = '00', frac = '', zone = 'Z'] = m;
  // a day of its month (Date rolls 30 February over to 2 March), hours and minutes in range
  if (+mo! < 1 || +mo! > 12 || new Date(Date.UTC(+y!, +mo! - 1, +d!)).getUTCDate() !== +d! || +h! > 23 || +mi! > 59 || +s > 59) return undefined;
  const z = /^[+-]\d{2}$/.test(zone) ? `${zone}:00` : /^[+-]\d{4}$/.test(zone) ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone.toUpperCase();
  const t = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}${frac ? `.${frac.slice(0, 3).padEnd(3, '0')}` : ''}${z}`);
  if (Number.isNaN(t)) return undefined;
  const iso = new Date(t).toISOString();
  const rest = iso.slice(16, 23) === ':00.000' ? '' : iso.slice(19, 23) === '.000' ? iso.slice(16, 19) : iso.slice(16, 23);
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}${rest} UTC`;
}

/**
 * A ledger's changes (the ledger-wide change feed, `GET …/changes`) in the order the API gives
 * them — the order they were detected, oldest first — filtered by type and by a day since which
 * (in the URL, so a reload or a shared link shows the same), a page at a time; and its daily
 * change sets, downloadable.
 *
 * The filter form and the list stay in the page when the filters change (they were made anew for
 * each filter, and the control that applied it went with the old form: focus fell to the page, a
 * web tester's case). Each change comes with its contact (`include=contact`: the feed gave ids
 * only, and the page read each contact's name, a request each, until the forty-fifth session).
 */
export function Changes(props: { orgId: string; ledgerId: string }) {
  const { orgId, ledgerId } = props;
  const q = useLocation().query;
  const type = q.get('type') ?? '';
  const since = q.get('since') ?? '';
  // a ledger deleted while its changes are open: the list answers 404, and the heading, read
  // again, says the ledger does not exist (it showed "Ledger not found" with "Try again")
  const [gone, setGone] = useState(false);
  // "Try again" asks again for the heading too (ChangeList reloads its own list)
  const { again, retry } = useRetryWithHead();
  return (
    <LedgerHead orgId={orgId} ledgerId={ledgerId} tab="changes" refresh={[gone, again]}>
      <ChangeFilters type={type} since={since} />
      <ChangeList orgId={orgId} ledgerId={ledgerId} type={type} since={since} onGone={() => setGone(true)} onRetry={retry} />
      <DailySets orgId={orgId} ledgerId={ledgerId} />
    </LedgerHead>
  );
}

/** "Clear the filters" of the list's messages: the filters go, and focus to the form's Clear, as if it had been pressed (the message goes). */
const clearFilters = (opts?: { replace?: boolean }) => {
  document.getElementById('chg-clear')?.focus();
  setQuery({}, opts);
};

/** A `since` the form can show (a day) or say (a moment); a refused one is not kept to be sent again unseen. */
const shownSince = (s: string) => (isDay(s) || momentOf(s) ? s : '');
/** A real day of the calendar (2026-02-30 has the shape of one). */
const isDay = (s: string) => PLAIN_DAY.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && new Date(`${s}T00:00:00Z`).toISOString().slice(0, 10) === s;

function ChangeFilters(props: { type: string; since: string }) {
  const [type, setType] = useState(props.type);
  const [since, setSince] = useState(shownSince(props.since));
  // the filters of the entry shown (Back, Forward, a link, Clear): the same form, its values updated
  useEffect(() => {
    setType(props.type);
    setSince(shownSince(props.since));
  }, [props.type, props.since]);
  // a moment (not a day) the link gives, which the API applies and the date field cannot show: said in words
  const moment = since && !PLAIN_DAY.test(since) ? momentOf(since) : undefined;
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
          <input id="chg-since" type="date" aria-describedby={moment ? 'chg-since-moment chg-since-hint' : 'chg-since-hint'} value={PLAIN_DAY.test(since) ? since : ''} onInput={(e) => setSince(e.currentTarget.value)} />
        </div>
      </div>
      {moment && (
        <p class="hint" id="chg-since-moment">
          Detected since <strong>{moment}</strong>: the link gives a moment, not a day. A day chosen above replaces it.
        </p>
      )}
      <p class="hint" id="chg-since-hint">
        Changes are listed in the order they were detected, oldest first. “Detected since” is a whole day in UTC, included from its start.
      </p>
      <div class="actions left">
        <button type="submit" id="chg-apply">
          Apply filters
        </button>
        <button
          type="button"
          id="chg-clear"
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

/** A change of the feed read with `include=contact`: its contact as it is now, null when deleted as the page was read. */
type FeedChange = Change & { contact: { name: string } | null };
type FeedPage = Omit<ChangePage, 'changes'> & { changes: FeedChange[] };

/** The contact of a change: its name linking to its page, or that it was deleted. */
function Who(props: { orgId: string; ledgerId: string; change: FeedChange }) {
  const { contact, contactId } = props.change;
  if (!contact) return <span class="muted">A deleted contact</span>;
  return (
    <Link href={`/orgs/${props.orgId}/ledgers/${props.ledgerId}/contacts/${contactId}`}>
      <bdi>{contact.name}</bdi>
    </Link>
  );
}

/** A refused filter of the link, named by its own value. */
function refusedText(error: ApiError, type: string, since: string): string {
  const paths = error.errors.map((e) => e.path);
  const said: string[] = [];
  if (since && (paths.includes('since') || paths.length === 0)) said.push(`“Detected since” is “${since}”, which is not a date.`);
  if (type && (paths.includes('type') || (paths.length === 0 && !TYPES.some(([v]) => v === type)))) said.push(`“Type” is “${type}”, which is not one of the types (job or information changes).`);
  return said.length ? said.join(' ') : 'The type must be job or information changes, and “Detected since” a day.';
}

/** Where an entry keeps the cursors of the pages "Show more" read, of its filters (`of`). */
const SHOWN = 'changePages';
/** Pages read again on a return: at most this many after the first (1,000 changes). */
const MAX_SHOWN = 19;
/** The cursors of the pages "Show more" read in this history entry under the filters `of`. */
function shownCursors(of: string): string[] {
  const kept = entryState(SHOWN) as { of?: unknown; cursors?: unknown } | undefined;
  if (kept?.of !== of || !Array.isArray(kept.cursors)) return [];
  return kept.cursors.filter((c): c is string => typeof c === 'string').slice(0, MAX_SHOWN);
}

function ChangeList(props: { orgId: string; ledgerId: string; type: string; since: string; onGone: () => void; onRetry: () => void }) {
  const { orgId, ledgerId, type, since } = props;
  const path = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/changes`;
  const key = `${type}|${since}`;
  const keyNow = useRef(key);
  keyNow.current = key;
  // a cursor carries its filters: sent alone (docs/tracking.md). The first page, and again the
  // pages "Show more" had read when this entry is come back to (Back from a contact)
  const first = useRequest(
    async (signal) => {
      const pages = [await api<FeedPage>('GET', path, { query: { limit: PAGE, type, since, include: 'contact' }, signal })];
      for (const cursor of shownCursors(key)) {
        if (!pages.at(-1)!.nextCursor) break;
        pages.push(await api<FeedPage>('GET', path, { query: { limit: PAGE, cursor, include: 'contact' }, signal }));
      }
      return pages;
    },
    [path, type, since],
  );
  // the pages "Show more" read, of the filters they were read under (another filter is another list)
  // (`after`: the answer of the first request they continue; a reload of it, which reads again
  // the pages kept for the entry, replaces them)
  const [later, setLater] = useState<{ of: string; after?: FeedPage[]; pages: FeedPage[] }>({ of: key, pages: [] });
  // the "Show more" request in flight, aborted when another filter is applied: its late answer,
  // its failure and its busy button belonged to the list left (a reviewer's case)
  const moreCtl = useRef<AbortController | undefined>(undefined);
  const more = useAction(async (cursor: string) => {
    const of = key;
    const after = d;
    const ctl = new AbortController();
    moreCtl.current = ctl;
    let page: FeedPage;
    try {
      page = await api<FeedPage>('GET', path, { query: { limit: PAGE, cursor, include: 'contact' }, signal: ctl.signal });
    } catch (e) {
      if (ctl.signal.aborted || of !== keyNow.current) return;
      throw e;
    }
    if (ctl.signal.aborted || of !== keyNow.current) return;
    setLater((l) => ({ of, after, pages: [...(l.of === of && l.after === after ? l.pages : []), page] }));
    // kept with this history entry, to be read again on a return to it
    history.replaceState({ ...((history.state as Record<string, unknown> | null) ?? {}), [SHOWN]: { of, cursors: [...shownCursors(of), cursor] } }, '');
    // focus on the first change the page added, so a keyboard user reads on from there
    requestAnimationFrame(() => document.getElementById(`chg-${page.changes[0]?.id}`)?.focus());
  });
  // Leaving the page cancels it too: its late answer wrote its cursors into the history entry of
  // whatever page was shown by then (a contact's), and set the state of a list no longer there (a
  // reviewer's case).
  useEffect(() => () => moreCtl.current?.abort(), []);
  // another filter starts the list afresh: the pages read under this one are not kept for a return to it
  useEffect(() => {
    moreCtl.current?.abort();
    more.setError(undefined);
    setLater((l) => (l.of === key ? l : { of: key, pages: [] }));
  }, [key]);
  useEffect(() => {
    if (first.error?.status === 404 || more.error?.status === 404) props.onGone();
  }, [first.error, more.error]);
  const d = first.data && !first.stale ? first.data : undefined;
  const pages = d ? [...d, ...(later.of === key && later.after === d ? later.pages : [])] : [];
  const all = pages.flatMap((p) => p.changes);

  // Back to this list from a contact: where it was scrolled to, and focus on the contact's link
  useReturnPosition(d !== undefined && !first.loading);
  // Back or Forward to another filter: once its list is shown, focus on the list's heading (the
  // control that had it belonged to the filter left), as on the contacts list
  useFocusAfterPop(key, first.loading, [first.data, first.error], 'changes-title', 'form.filters');

  const refused = first.error?.code === 'invalid_parameter' || first.error?.status === 400;
  const filtered = Boolean(type || since);
  const next = pages.at(-1)?.nextCursor ?? null;
  const empty = d !== undefined && all.length === 0;
  // One live region, in the page before the list is read and updated with it (the list's summary
  // used to come with the list, and "no match" was plain text: neither was announced)
  const said = refused || (first.error && !d) ? null : !d ? (
    <>
      <span class="spinner" aria-hidden="true" /> Loading changes…
    </>
  ) : empty ? (
    filtered ? (
      <p>
        No change matches these filters.{' '}
        <button type="button" class="link" onClick={() => clearFilters()}>
          Clear the filters
        </button>
      </p>
    ) : (
      <p>No change has been recorded in this ledger yet. Job and information changes appear here once the person-data feed finds them for its contacts.</p>
    )
  ) : next ? (
    `The first ${fmtNumber(all.length)} changes${filtered ? ' that match' : ''} are shown.`
  ) : (
    `${all.length === 1 ? 'The one change' : `All ${fmtNumber(all.length)} changes`}${filtered ? ' that match' : ''} ${all.length === 1 ? 'is' : 'are'} shown.`
  );
  return (
    <section aria-labelledby="changes-title">
      <h2 id="changes-title" tabIndex={-1}>
        Changes
      </h2>
      {refused ? (
        <div class="state error" role="alert">
          <p>
            <strong>The changes cannot be filtered this way.</strong> {refusedText(first.error!, type, since)}
          </p>
          <button type="button" class="secondary" onClick={() => clearFilters({ replace: true })}>
            Clear the filters
          </button>
        </div>
      ) : (
        first.error && (
          <ErrorBox
            error={first.error}
            retry={() => {
              first.reload();
              props.onRetry();
            }}
            title={d ? 'Could not refresh.' : undefined}
          />
        )
      )}
      <div aria-busy={more.busy}>
        {all.length > 0 && (
          <ol class="timeline changes">
            {all.map((c) => (
              <li key={c.id} id={`chg-${c.id}`} class={c.type} tabIndex={-1}>
                <ChangeWhen change={c} />
                <p class="who-changed">
                  <Who orgId={orgId} ledgerId={ledgerId} change={c} />
                </p>
                <ChangeWhat change={c} />
              </li>
            ))}
          </ol>
        )}
        <div id="changes-said" role="status" class={said === null ? undefined : !d ? 'state loading' : empty ? 'state empty' : 'muted'}>
          {said}
        </div>
        <FormError error={more.error} />
        {next && (
          <button type="button" class="secondary" disabled={more.busy} onClick={() => void more.run(next)}>
            {more.busy ? 'Loading…' : 'Show more changes'}
          </button>
        )}
      </div>
      <p class="hint">A contact's changes are deleted with it: a deleted contact's changes are no longer listed.</p>
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
