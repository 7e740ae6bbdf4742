import { useEffect, useRef, useState } from 'preact/hooks';
import { api, download, LEDGER } from '../api.ts';
import { lastNavigation, setQuery, takeNotice, useFocusAfterPop, useLocation, useReturnPosition } from '../router.ts';
import { Async, Email, ErrorBox, fmtNumber, Link, Notice, refocusWhenDone, Time, useAction, useChoice, useRequest } from '../ui.tsx';
import { LedgerHead, useRetryWithHead } from './ledger-head.tsx';

export interface Contact {
  id: string;
  ledgerId: string;
  importId: string | null;
  referenceId: string | null;
  name: string;
  company: string;
  importCompany: string | null;
  importTitle: string | null;
  title: string | null;
  titleLevel: string | null;
  titleDomain: string | null;
  location: string | null;
  contactInfo: { email: string | null; emailStatus: string | null };
  hasMultipleJobs: boolean | null;
  linkedin: string | null;
  isVerified: boolean;
  jobStartedAt: string | null;
  lastJobChangedAt: string | null;
  lastInfoChangedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The filters of SPEC §4.2 the page offers; their values live in the URL, so a filtered view can be shared and survives a reload. */
const FILTERS = ['lastJobChangedAt', 'lastInfoChangedAt', 'name', 'company', 'title', 'email', 'referenceId', 'linkedin', 'isVerified', 'importId', 'createdAfter', 'createdBefore'] as const;
type FilterKey = (typeof FILTERS)[number];
/** The filters' names on the page (the form's labels, and a link's refused filter named in words). */
const FILTER_LABELS: Record<FilterKey, string> = {
  lastJobChangedAt: 'Job changed since',
  lastInfoChangedAt: 'Info changed since',
  name: 'Name contains',
  company: 'Company contains',
  title: 'Title contains',
  email: 'E-mail (exact)',
  referenceId: 'Reference id (exact)',
  linkedin: 'LinkedIn URL',
  isVerified: 'Verified',
  importId: 'Import id',
  createdAfter: 'Added on or after',
  createdBefore: 'Added on or before',
};
const DATE_FILTERS: FilterKey[] = ['lastJobChangedAt', 'lastInfoChangedAt', 'createdAfter', 'createdBefore'];
const SORTS: [string, string][] = [
  ['+createdAt', 'Oldest first'],
  ['-createdAt', 'Newest first'],
  ['+name', 'Name A–Z'],
  ['-name', 'Name Z–A'],
  ['-lastJobChangedAt', 'Latest job change'],
  ['-lastInfoChangedAt', 'Latest info change'],
];
const SIZES = [25, 50, 100];

const DAY = 86_400_000;
/**
 * The first day of "the last n days": today (UTC) and the n − 1 days before it, so "the last 7 days"
 * on 2 December starts on 26 November. It was today minus n days (25 November): 8 calendar days, as
 * the filter includes its first day whole (a tester's case).
 */
const lastDays = (n: number) => new Date(Date.now() - (n - 1) * DAY).toISOString().slice(0, 10);
/**
 * "Added before" is a day the person wants included, the API's `createdBefore` an exclusive bound
 * (docs/decisions.md "List semantics"): the URL and the request hold the API's value — the next
 * day's midnight UTC — and the field shows the last day it includes.
 */
const lastDayBefore = (bound: string) => {
  const day = /^\d{4}-\d{2}-\d{2}$/.test(bound);
  const t = Date.parse(day ? `${bound}T00:00:00Z` : bound);
  // a day that is none (2026-02-30, which Date reads as 2 March) shows no day, not one it rolled to
  if (Number.isNaN(t) || (day && new Date(t).toISOString().slice(0, 10) !== bound)) return '';
  return new Date(t - 1).toISOString().slice(0, 10);
};
const dayAfter = (day: string) => {
  const t = Date.parse(`${day}T00:00:00Z`);
  return Number.isNaN(t) ? day : new Date(t + DAY).toISOString().slice(0, 10);
};

/** The contacts table: filters, sorting, paging, a count, CSV download of the current filter. */
export function Contacts(props: { orgId: string; ledgerId: string }) {
  const { orgId, ledgerId } = props;
  const loc = useLocation();
  const q = loc.query;
  const filters: Partial<Record<FilterKey, string>> = {};
  for (const k of FILTERS) {
    const v = q.get(k);
    if (v) filters[k] = v;
  }
  // as the API reads it: a field name alone, or with a "+" that arrived as a space, is +<field>
  const rawSort = q.get('sortBy') ?? '+createdAt';
  const sortBy = /^[A-Za-z]/.test(rawSort) ? `+${rawSort}` : rawSort.startsWith(' ') ? `+${rawSort.slice(1)}` : rawSort;
  const rawSize = q.get('limit');
  const badSize = rawSize !== null && !SIZES.includes(Number(rawSize));
  const size = badSize ? 50 : rawSize ? Number(rawSize) : 50;
  const cursors = (q.get('page') ?? '').split('~').filter(Boolean); // the cursors that led to this page
  const cursor = cursors.at(-1);
  const key = JSON.stringify([filters, sortBy, size, cursor]);
  const base = `${LEDGER}/orgs/${orgId}/ledgers/${ledgerId}/contacts`;

  const list = useRequest((signal) => api<{ contacts: Contact[]; nextCursor: string | null }>('GET', base, { query: { ...filters, sortBy, limit: size, cursor }, signal }), [orgId, ledgerId, key]);
  const count = useRequest((signal) => api<{ count: number }>('GET', base, { query: { ...filters, view: 'count' }, signal }), [orgId, ledgerId, JSON.stringify(filters)]);

  const go = (values: Record<string, string | undefined>, opts?: { replace?: boolean }) => setQuery({ ...Object.fromEntries(q), ...values }, opts);
  const apply = (f: Partial<Record<FilterKey, string>>) =>
    setQuery({ ...Object.fromEntries(FILTERS.map((k) => [k, f[k]])), sortBy: sortBy === '+createdAt' ? undefined : sortBy, limit: size === 50 ? undefined : String(size), page: undefined });
  // a notice handed over by the page before (the contact page: "Deleted …")
  const [notice, setNotice] = useState<string | undefined>(takeNotice);
  // A notice tells of one outcome (a contact deleted, a file saved, a link corrected): it goes at
  // the user's next step through the list — a page, a page size, a sort, a filter, Back — where
  // "Deleted Ann Example." stayed through all of them (a tester's case). A correction the page
  // makes itself (an entry replaced: a refused cursor, a page size not offered) keeps the notice
  // that says so.
  const noticeOf = useRef(key);
  useEffect(() => {
    if (noticeOf.current === key) return;
    noticeOf.current = key;
    if (lastNavigation() !== 'replace') setNotice(undefined);
  }, [key]);
  // A cursor the API refuses (a link or a reload of a page whose filters changed since, or a
  // cursor of another list) is no page of this list: start the list again at its first page and
  // say so, instead of an error whose "Try again" sends the same cursor again.
  const badCursor = list.error?.code === 'invalid_cursor' && cursors.length > 0;
  useEffect(() => {
    if (!badCursor) return;
    setNotice('That page of the list could not be shown (its filters or sort had changed), so the list starts again at its first page.');
    go({ page: undefined }, { replace: true });
  }, [badCursor]);
  // A page size the list does not offer (a hand-edited ?limit=7) was shown as 50 with the URL
  // still saying 7 (a web tester's case): the URL is corrected to what is shown, and a notice says so.
  useEffect(() => {
    if (!badSize) return;
    setNotice(`The link asked for ${rawSize ? `“${rawSize}”` : 'no number of'} contacts per page, which the list does not offer (${SIZES.join(', ')}), so it shows 50 per page.`);
    go({ limit: undefined }, { replace: true });
  }, [badSize]);
  // A filter or sort the API refuses (a link typed or cut short by hand: ?lastJobChangedAt=banana,
  // or a value typed in the form) is said in the page's words, with a way out, instead of the
  // API's message and a "Try again" that sends the same request again.
  const refused = list.error?.code === 'invalid_parameter' ? list.error.errors.filter((e) => e.path === 'sortBy' || (FILTERS as readonly string[]).includes(e.path)) : [];
  // The pager is replaced by the loading state while the next page loads, and focus fell to the
  // page: a keyboard user Tabbed back through the filters to reach Next again (a web tester's
  // case). The control that turned the page gets it back, else the table.
  const turnPage = (page: string | undefined, from: string) => {
    refocusAfterLoad = from;
    go({ page });
  };
  useEffect(() => {
    if (list.loading || !refocusAfterLoad) return;
    const el = document.getElementById(refocusAfterLoad) as HTMLButtonElement | null;
    (el && !el.disabled ? el : document.getElementById('contacts-table'))?.focus();
    refocusAfterLoad = undefined;
  }, [list.loading, list.data]);
  // back from a contact: the list where it was, focus on the contact's link
  useReturnPosition(Boolean(list.data) && !list.loading);
  // Back or Forward between pages or filters of the list: the pager or field that had focus went
  // with the old list, and focus fell to the page (a web tester's case). Once the list the entry
  // names is shown, its heading ("Contacts, page 2") gets focus, unless focus is somewhere already
  // (the contact's link useReturnPosition gave it back to).
  useFocusAfterPop(key, list.loading, [list.data, list.error], 'contacts-list-title');
  // the rows, count and download shown belong to the filter, sort and page asked for, or wait
  const loading = list.loading || count.loading;
  const dl = useAction(async () => {
    // with a BOM: people open this file in a spreadsheet, and Excel reads a CSV without one in the
    // machine's legacy code page (Zoë becomes ZoÃ«)
    const name = await download(`${base}/download`, { ...filters, sortBy, bom: 'true' });
    setNotice(`Downloaded ${name}.`);
  });
  const active = Object.keys(filters).length;
  // The download's label names what it would download: the filters the list applies, not one it
  // refused (a refused filter said "Download these as CSV", a refused sort "Download CSV": a
  // tester's case). Refused either way, it is disabled and described by the message saying why.
  const applied = Object.keys(filters).filter((k) => !refused.some((e) => e.path === k)).length;
  const start = cursors.length * size;
  // "Try again" after a failure asks again for all the page shows: the list, its count and the
  // ledger's heading. A ledger deleted while its page is open answers the list with 404: the heading
  // is read again, and says the ledger does not exist, instead of an error with "Try again".
  const { again, retry } = useRetryWithHead(list.reload, count.reload);
  const gone = list.error?.status === 404 || count.error?.status === 404;

  return (
    <>
      <LedgerHead orgId={orgId} ledgerId={ledgerId} tab="contacts" refresh={[gone, again]}>
        <FilterForm key={JSON.stringify(filters)} initial={filters} refused={refused.map((e) => e.path)} refusedBy="list-refused" onApply={apply} />
        {/* the list's own heading, as the other pages' sections have: found by headings, and where focus goes after Back or Forward */}
        <h2 id="contacts-list-title" class="visually-hidden" tabIndex={-1}>
          {cursors.length ? `Contacts, page ${cursors.length + 1}` : 'Contacts'}
        </h2>
        <div class="toolbar">
          <p class="count" aria-live="polite">
            {count.error ? (
              <span class="muted">Count unavailable</span>
            ) : count.data && !count.stale ? (
              <>
                <strong>{fmtNumber(count.data.count)}</strong> {count.data.count === 1 ? 'contact' : 'contacts'}
                {active ? ` ${count.data.count === 1 ? 'matches' : 'match'} ${active === 1 ? 'the filter' : `${active} filters`}` : ''}
              </>
            ) : (
              'Counting…'
            )}
          </p>
          <div class="toolbar-right">
            <ViewChoice id="sort" label="Sort" value={sortBy} options={SORTS} onTake={(v) => go({ sortBy: v, page: undefined })} />
            <button
              type="button"
              class="secondary"
              disabled={dl.busy || loading || !!list.error || count.data?.count === 0}
              aria-describedby={refused.length > 0 ? 'list-refused' : undefined}
              onClick={(e) => {
                // disabled while the file is prepared, which dropped focus to the page (a web tester's case)
                refocusWhenDone(e.currentTarget);
                void dl.run();
              }}
            >
              {dl.busy ? 'Preparing CSV…' : applied ? 'Download these as CSV' : 'Download CSV'}
            </button>
          </div>
        </div>
        {dl.error && <ErrorBox error={dl.error} title="The download failed." />}
        {notice && <Notice onDismiss={() => setNotice(undefined)}>{notice}</Notice>}
        {refused.length > 0 ? (
          <div class="state error" role="alert" id="list-refused" tabIndex={-1}>
            <p>
              <strong>The list cannot be {refused.every((e) => e.path === 'sortBy') ? 'sorted' : 'filtered'} this way.</strong>{' '}
              {refused.map((e) => refusedText(e.path, q.get(e.path) ?? '', e.message)).join(' ')}
            </p>
            <button
              type="button"
              class="secondary"
              onClick={() => {
                // focus goes to the field taken out (or the Sort), not to the page with this message
                refocusAfterApply = refused[0]!.path === 'sortBy' ? 'sort' : `flt-${refused[0]!.path}`;
                go({ ...Object.fromEntries(refused.map((e) => [e.path, undefined])), page: undefined }, { replace: true });
              }}
            >
              {refused.length === 1 && refused[0]!.path === 'sortBy' ? 'Use the default sort' : `Remove ${refused.length === 1 ? 'that filter' : 'those'}`}
            </button>
          </div>
        ) : (
          <Async
            req={list}
            retry={retry}
            label="Loading contacts…"
            empty={(d) => d.contacts.length === 0}
            emptyText={
              active ? (
                <p>
                  No contact matches these filters.{' '}
                  <button
                    type="button"
                    class="link"
                    onClick={() => {
                      // this message goes with the filters: focus to the form's Clear, as if it had been pressed (it fell to the page)
                      refocusAfterApply = 'flt-clear';
                      apply({});
                    }}
                  >
                    Clear the filters
                  </button>
                </p>
              ) : (
                <p>
                  This ledger has no contacts yet. <Link href={`/orgs/${orgId}/ledgers/${ledgerId}/import`}>Import a CSV file</Link> to add some.
                </p>
              )
            }
          >
            {(d) => (
              <>
                <div class="table-wrap" id="contacts-table" tabIndex={0} role="region" aria-label="Contacts">
                  <table class="contacts stack">
                    <thead>
                      <tr>
                        <th scope="col">Name</th>
                        <th scope="col">Company</th>
                        <th scope="col">Title</th>
                        <th scope="col">E-mail</th>
                        <th scope="col">Verified</th>
                        <th scope="col">Job changed</th>
                        <th scope="col">Info changed</th>
                      </tr>
                    </thead>
                    <tbody>
                      {d.contacts.map((c) => (
                        <tr key={c.id}>
                          <th scope="row">
                            <Link href={`/orgs/${orgId}/ledgers/${ledgerId}/contacts/${c.id}`} state={{ list: loc.path + location.search }}>
                                {c.name}
                              </Link>
                          </th>
                          <td data-label="Company">
                            {c.company}
                            {c.lastJobChangedAt && c.importCompany && c.importCompany !== c.company && <span class="was">was {c.importCompany}</span>}
                          </td>
                          <td data-label="Title">{c.title ?? <span class="muted">—</span>}</td>
                          <td class="email" data-label="E-mail">{c.contactInfo.email ? <Email address={c.contactInfo.email} /> : <span class="muted">—</span>}</td>
                          <td data-label="Verified">{c.isVerified ? <span class="badge ok">verified</span> : <span class="muted">no</span>}</td>
                          <td data-label="Job changed">{c.lastJobChangedAt ? <span class="badge job"><Time iso={c.lastJobChangedAt} dateOnly /></span> : <span class="muted">—</span>}</td>
                          <td data-label="Info changed">
                            <Time iso={c.lastInfoChangedAt} dateOnly />
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
                <nav class="pager" aria-label="Pages">
                  <span class="muted">
                    {fmtNumber(start + 1)}–{fmtNumber(start + d.contacts.length)}
                    {count.data && !count.stale ? ` of ${fmtNumber(count.data.count)}` : ''}
                  </span>
                  <ViewChoice
                    id="per-page"
                    label="Per page"
                    value={String(size)}
                    options={SIZES.map((n) => [String(n), String(n)])}
                    onTake={(v) => {
                      refocusAfterLoad = 'per-page';
                      go({ limit: v, page: undefined });
                    }}
                  />
                  <button type="button" id="page-prev" class="secondary" disabled={cursors.length === 0 || list.loading} onClick={() => turnPage(cursors.slice(0, -1).join('~') || undefined, 'page-prev')}>
                    Previous
                  </button>
                  <button type="button" id="page-next" class="secondary" disabled={!d.nextCursor || list.loading} onClick={() => turnPage([...cursors, d.nextCursor!].join('~'), 'page-next')}>
                    Next
                  </button>
                </nav>
              </>
            )}
          </Async>
        )}
      </LedgerHead>
    </>
  );
}

/**
 * A select of how the list is shown (its order, its page size) that takes effect when chosen, not
 * at each arrow key (useChoice; WCAG 3.2.2): each step was a request and a history entry (a
 * tester's case). A choice reached with the keyboard waits for Enter or "Apply"; Escape puts back
 * the one shown.
 */
function ViewChoice(props: { id: string; label: string; value: string; options: readonly (readonly [string, string])[]; onTake: (value: string) => void }) {
  const { pending, select, commit } = useChoice(props.value, (v) => v !== props.value && props.onTake(v));
  const hint = `${props.id}-hint`;
  return (
    <span class="inline view-choice">
      <label class="inline" for={props.id}>
        {props.label}
      </label>
      <select id={props.id} {...select} aria-describedby={pending ? hint : undefined}>
        {props.options.map(([v, l]) => (
          <option key={v} value={v}>
            {l}
          </option>
        ))}
      </select>
      {pending && (
        <>
          <button type="button" class="secondary small" aria-label={`Apply ${props.label.toLowerCase()}`} onClick={commit}>
            Apply
          </button>
          <span id={hint} class="visually-hidden">
            Press Enter or Apply to show it.
          </span>
        </>
      )}
    </span>
  );
}

/** A value of a link shown in a sentence: a very long one cut short (the refusal of 300 characters quoted them all). */
const quoted = (value: string) => `“${value.length > 60 ? `${value.slice(0, 60)}…` : value}”`;

/**
 * Why the API refused a filter's value, as the end of a sentence that begins "“Label” is “value”,"
 * — in the page's words, never the API's message spliced in (`it email "x" is not an e-mail
 * address`, `it must be an import id as its import was answered with: …`: a tester's cases).
 * The API's message only tells which of a filter's rules the value broke.
 */
function refusedWhy(key: FilterKey, message: string): string {
  const invisible = /invisible character \((U\+[0-9A-F]+)\)/.exec(message);
  if (invisible) return `which holds an invisible character (${invisible[1]}), so it would never match what is typed without it`;
  if (/NUL|control character/.test(message)) return 'which holds a control character';
  const longer = /at most (\d+) characters/.exec(message);
  if (longer) return `which is longer than the ${longer[1]} characters it may have`;
  if (/must not be empty/.test(message)) return 'which is empty once its spaces are taken off';
  switch (key) {
    case 'email':
      return 'which is not an e-mail address (the filter finds one address, written whole)';
    case 'linkedin':
      return 'which is not a LinkedIn profile URL';
    case 'isVerified':
      return 'which is neither “true” nor “false”';
    case 'importId':
      return 'which is not the id of an import (imp_ followed by 26 lower-case letters or digits)';
    default:
      return 'which the server does not accept';
  }
}

/** A refused filter or sort of a link, in the page's words (`message`: the API's, telling which rule was broken). */
function refusedText(key: string, value: string, message: string): string {
  if (key === 'sortBy') return `It sorts by “${value}”, which is not one of the list's orders.`;
  const label = FILTER_LABELS[key as FilterKey];
  // the URL holds the day after the last one included (an exclusive bound): said as the link's own value, not as that last day
  if (key === 'createdBefore') return `The link's createdBefore=${value} (“${label}” the day before it) is not a date.`;
  if (DATE_FILTERS.includes(key as FilterKey)) return `“${label}” is ${quoted(value)}, which is not a date.`;
  return `“${label}” is ${quoted(value)}, ${refusedWhy(key as FilterKey, message)}.`;
}

/**
 * The control of the filter form that applied it (a field Enter was pressed in, a quick filter,
 * Clear): the form is made anew for the filters it applied, and focus fell to the page (a web
 * tester's case), so the new form gives it back.
 */
let refocusAfterApply: string | undefined;
/** The pager's control that turned the page (Next, Previous, Per page), focused again once the page is shown. */
let refocusAfterLoad: string | undefined;
const noteFocus = () => {
  refocusAfterApply = (document.activeElement as HTMLElement | null)?.id || undefined;
};

function FilterForm(props: { initial: Partial<Record<FilterKey, string>>; refused: string[]; refusedBy?: string; onApply: (f: Partial<Record<FilterKey, string>>) => void }) {
  const [f, setF] = useState(props.initial);
  useEffect(() => {
    const el = refocusAfterApply ? document.getElementById(refocusAfterApply) : null;
    refocusAfterApply = undefined;
    // a field of "More filters" when they are closed (none of them is set now): their summary
    const closed = el?.closest('details:not([open])');
    (closed ? closed.querySelector('summary') : el)?.focus();
  }, []);
  // a filter the API refused is marked at its field, described by the message above the list
  const invalid = (k: FilterKey) => (props.refused.includes(k) ? { 'aria-invalid': true, 'aria-describedby': props.refusedBy } : {});
  const advanced = ['email', 'referenceId', 'linkedin', 'isVerified', 'importId', 'createdAfter', 'createdBefore', 'lastInfoChangedAt'].some((k) => props.initial[k as FilterKey]);
  const set = (k: FilterKey) => (e: Event) => setF({ ...f, [k]: (e.currentTarget as HTMLInputElement).value || undefined });
  const text = (k: FilterKey) => (
    <div class="field">
      <label for={`flt-${k}`}>{FILTER_LABELS[k]}</label>
      <input id={`flt-${k}`} type="text" value={f[k] ?? ''} onInput={set(k)} {...invalid(k)} />
    </div>
  );
  // every date is a whole day in UTC, the chosen day included; createdBefore is sent (and kept in
  // the URL) as the API's exclusive bound, the day after the one shown
  const date = (k: FilterKey) => {
    const before = k === 'createdBefore';
    const v = f[k] ?? '';
    return (
      <div class="field">
        <label for={`flt-${k}`}>{FILTER_LABELS[k]}</label>
        <input
          id={`flt-${k}`}
          type="date"
          aria-describedby={props.refused.includes(k) ? `${props.refusedBy} flt-dates-hint` : 'flt-dates-hint'}
          aria-invalid={props.refused.includes(k) || undefined}
          value={before && v ? lastDayBefore(v) : v.slice(0, 10)}
          onInput={(e) => {
            const day = e.currentTarget.value;
            setF({ ...f, [k]: day ? (before ? dayAfter(day) : day) : undefined });
          }}
        />
      </div>
    );
  };
  return (
    <form
      class="filters"
      aria-labelledby="filters-heading"
      onSubmit={(e) => {
        e.preventDefault();
        noteFocus();
        props.onApply(f);
      }}
    >
      <h2 id="filters-heading" class="visually-hidden">
        Filter contacts
      </h2>
      <div class="quick" role="group" aria-label="Quick filters">
        <span class="muted">Job changed in the last</span>
        {[7, 30, 90].map((n) => (
          <button
            key={n}
            id={`flt-last-${n}`}
            type="button"
            class={`chip${props.initial.lastJobChangedAt === lastDays(n) ? ' on' : ''}`}
            aria-pressed={props.initial.lastJobChangedAt === lastDays(n)}
            onClick={() => {
              noteFocus();
              // the other filters applied stay (they were dropped: an accessibility tester's case); pressed again, it is taken off
              props.onApply({ ...props.initial, lastJobChangedAt: props.initial.lastJobChangedAt === lastDays(n) ? undefined : lastDays(n) });
            }}
          >
            {n} days
          </button>
        ))}
      </div>
      <div class="filter-grid">
        {date('lastJobChangedAt')}
        {text('name')}
        {text('company')}
        {text('title')}
      </div>
      <p class="hint" id="flt-dates-hint">
        Dates are whole days in UTC, and the day you choose is included: “since” and “on or after” from its start, “on or before” to its end.
      </p>
      <details open={advanced}>
        <summary>More filters</summary>
        <div class="filter-grid">
          {date('lastInfoChangedAt')}
          {text('email')}
          {text('referenceId')}
          {text('linkedin')}
          <div class="field">
            <label for="flt-isVerified">{FILTER_LABELS.isVerified}</label>
            <select id="flt-isVerified" value={f.isVerified ?? ''} onChange={set('isVerified')} {...invalid('isVerified')}>
              <option value="">Any</option>
              <option value="true">Verified</option>
              <option value="false">Not verified</option>
            </select>
          </div>
          {date('createdAfter')}
          {date('createdBefore')}
          {text('importId')}
        </div>
      </details>
      <div class="actions left">
        <button type="submit" id="flt-apply">
          Apply filters
        </button>
        <button
          type="button"
          id="flt-clear"
          class="secondary"
          onClick={() => {
            noteFocus();
            setF({});
            props.onApply({});
          }}
        >
          Clear
        </button>
      </div>
    </form>
  );
}

