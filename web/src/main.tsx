// The web application (SPEC §9): boot, session, shell and routes. Every request goes through
// api.ts to the public APIs; nothing here is private to the web app.
import { Fragment, render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, ID, listAll, onForbidden, onSession, resume, signOut, type Principal } from './api.ts';
import { lastNavigation, match, navigate, useLocation } from './router.ts';
import { asApiError, ErrorBox, lastOrgKey, Link, Loading, orgOfPath, SecretHost, Session, useChoice, useSecretHost, useSession, type Org, type SessionState } from './ui.tsx';
import { SignIn } from './pages/signin.tsx';
import { Home } from './pages/home.tsx';
import { Ledgers } from './pages/ledgers.tsx';
import { Contacts } from './pages/contacts.tsx';
import { ContactDetail } from './pages/contact.tsx';
import { ImportHistory } from './pages/imports/import-history.tsx';
import { ImportWizard } from './pages/imports/import-wizard.tsx';
import { Team } from './pages/team.tsx';
import { ServiceAccounts } from './pages/service-accounts.tsx';
import { WebhookPage, Webhooks } from './pages/webhooks.tsx';
import { Feed } from './pages/feed.tsx';
import { NewOrg } from './pages/new-org.tsx';
import { Account } from './pages/account.tsx';
import { Changes } from './pages/changes.tsx';

/** `signed-out`: `byUser` when the user signed out (here or in another tab), not when the session ended by itself or there was none. */
type Boot = { kind: 'booting' } | { kind: 'signed-out'; byUser: boolean } | { kind: 'signed-in'; principal: Principal } | { kind: 'failed'; error: ApiError };

function App() {
  const [boot, setBoot] = useState<Boot>({ kind: 'booting' });
  const [attempt, setAttempt] = useState(0);
  useEffect(() => onSession((p, why) => setBoot(p ? { kind: 'signed-in', principal: p } : { kind: 'signed-out', byUser: why === 'signed-out' })), []);
  useEffect(() => {
    resume().then(
      (p) => setBoot(p ? { kind: 'signed-in', principal: p } : { kind: 'signed-out', byUser: false }),
      (error: unknown) => setBoot({ kind: 'failed', error: asApiError(error) }),
    );
  }, [attempt]);
  const loc = useLocation();
  // signed in from the sign-in page (not a session resumed on load): its first page gets focus (below)
  const signedOut = useRef(false);

  if (boot.kind === 'booting') return <Loading label="Opening contact-ledger…" />;
  if (boot.kind === 'failed')
    return (
      <main class="narrow">
        <ErrorBox error={boot.error} title="contact-ledger could not start." retry={() => setAttempt((n) => n + 1)} />
      </main>
    );
  if (boot.kind === 'signed-out') {
    signedOut.current = true;
    if (loc.path !== '/signin') {
      // A deep link is kept for a session that ended by itself (expired, revoked: the same user
      // signs in again and goes on) and for a first visit. A sign-out keeps none: the next person
      // to sign in on this browser landed on the page of the one who signed out — another
      // organization's "Not found", or a contacts list filtered by the e-mail they had searched
      // for (a tester's case). Back to their pages after it leads here the same way.
      const next = loc.path === '/' || boot.byUser ? '' : `?next=${encodeURIComponent(loc.path + location.search)}`;
      navigate(`/signin${next}`, { replace: true });
    }
    return <SignIn />;
  }
  if (loc.path === '/signin') navigate(safeNext(loc.query.get('next')), { replace: true });
  return <SignedIn principal={boot.principal} fromSignIn={signedOut.current} />;
}

/**
 * Where a sign-in link's `next` may lead: a path of this site, else the start page. A crafted one
 * (`/\evil.example/x`, `//evil.example`, a URL, control characters) is ignored: resolved against
 * this origin it must stay on it, and it must read as a plain path.
 */
function safeNext(next: string | null): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || /[\\\u0000-\u001f\u007f]/.test(next)) return '/';
  try {
    const url = new URL(next, location.origin);
    return url.origin === location.origin ? url.pathname + url.search + url.hash : '/';
  } catch {
    return '/';
  }
}

function SignedIn(props: { principal: Principal; fromSignIn: boolean }) {
  const [orgs, setOrgs] = useState<Org[] | undefined>();
  const [error, setError] = useState<ApiError>();
  const load = async () => {
    try {
      const { items } = await listAll<Org>(`${ID}/orgs`, 'orgs'); // every page: a superuser sees every organization
      // the same list again changes nothing (no re-render of every page for a 403 that meant no change)
      setOrgs((before) => (before && JSON.stringify(before) === JSON.stringify(items) ? before : items));
      setError(undefined);
    } catch (e) {
      setError(e as ApiError);
    }
  };
  useEffect(() => void load(), [props.principal]);
  // A 403 may mean the user's role changed elsewhere (another admin demoted them): reload the
  // organizations and roles, so the controls match what they may still do. One reload at a time
  // and at most one every 5 s, so 403s that are not about roles (or a GET /orgs that answers 403
  // itself) cannot loop.
  useEffect(() => {
    let last = 0;
    let running = false;
    return onForbidden(() => {
      if (running || Date.now() - last < 5000) return;
      running = true;
      last = Date.now();
      void load().finally(() => (running = false));
    });
  }, []);
  if (!orgs) return error ? <ErrorBox error={error} retry={load} title="Could not load your organizations." /> : <Loading label="Loading your organizations…" />;
  const state: SessionState = { principal: props.principal, orgs, reloadOrgs: load };
  return (
    <Session.Provider value={state}>
      <Shell fromSignIn={props.fromSignIn} />
    </Session.Provider>
  );
}

const ROUTES: [string, (p: Record<string, string>) => preact.JSX.Element][] = [
  ['/', () => <Home />],
  ['/orgs/new', () => <NewOrg />],
  ['/feed', () => <Feed />],
  ['/account', () => <Account />],
  ['/orgs/:orgId/ledgers', (p) => <Ledgers orgId={p.orgId!} />],
  ['/orgs/:orgId/ledgers/:ledgerId', (p) => <Contacts orgId={p.orgId!} ledgerId={p.ledgerId!} />],
  ['/orgs/:orgId/ledgers/:ledgerId/contacts/:contactId', (p) => <ContactDetail orgId={p.orgId!} ledgerId={p.ledgerId!} contactId={p.contactId!} />],
  ['/orgs/:orgId/ledgers/:ledgerId/import', (p) => <ImportWizard orgId={p.orgId!} ledgerId={p.ledgerId!} />],
  ['/orgs/:orgId/ledgers/:ledgerId/imports', (p) => <ImportHistory orgId={p.orgId!} ledgerId={p.ledgerId!} />],
  ['/orgs/:orgId/ledgers/:ledgerId/changes', (p) => <Changes orgId={p.orgId!} ledgerId={p.ledgerId!} />],
  ['/orgs/:orgId/team', (p) => <Team orgId={p.orgId!} />],
  ['/orgs/:orgId/service-accounts', (p) => <ServiceAccounts orgId={p.orgId!} />],
  ['/orgs/:orgId/webhooks', (p) => <Webhooks orgId={p.orgId!} />],
  ['/orgs/:orgId/webhooks/:webhookId', (p) => <WebhookPage orgId={p.orgId!} webhookId={p.webhookId!} />],
];

/** Whether the shell has been shown: a page replaced after that (access lost) is no first page seen. */
let shellShown = false;

function Shell(props: { fromSignIn: boolean }) {
  const loc = useLocation();
  const session = useSession();
  const user = session.principal.user;
  const orgId = orgOfPath(loc.path);
  const org = session.orgs.find((o) => o.id === orgId);
  const [menu, setMenu] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  // secrets shown once live here, not in their page: one answered after its page was left is shown all the same
  const secrets = useSecretHost();
  useEffect(() => {
    // only one this user may open (not the "Not found" of another's link)
    if (org) localStorage.setItem(lastOrgKey(session.principal), org.id);
    setMenu(false);
  }, [orgId, loc.path]);
  // the phone menu closes with Escape, as a disclosure should, and focus goes back to its button
  // when it was inside the menu (else it would be left on a link no longer shown)
  useEffect(() => {
    if (!menu) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.defaultPrevented || document.querySelector('dialog[open]')) return;
      const inside = document.getElementById('nav')?.contains(document.activeElement);
      setMenu(false);
      if (inside || document.activeElement === document.body) menuButton.current?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [menu]);

  // Another page: focus goes to its content when it was left nowhere — on the body, on a link the
  // page took away, in the phone menu that closed — so that a screen reader says where it is and
  // Tab goes on from the top of the content (an accessibility tester's case). A page that put focus
  // somewhere itself keeps it; so does the organization switcher, for another choice. Not after a
  // redirect (the start page to the organization last opened): that is the first page seen, where
  // Tab begins at "Skip to content" as on any page loaded (a reviewer's case).
  const lastPath = useRef(loc.path);
  // After signing in, the page of `next` opens with focus on its content, as after any other step
  // (the sign-in form went away, and focus fell to the body: a web tester's case). A page loaded
  // or reloaded as such still starts at "Skip to content".
  useEffect(() => {
    shellShown = true;
    const at = document.activeElement;
    if (props.fromSignIn && (!at || at === document.body)) document.getElementById('main')?.focus({ preventScroll: true });
  }, []);
  useEffect(() => {
    if (lastPath.current === loc.path) return;
    lastPath.current = loc.path;
    if (lastNavigation() === 'replace') return;
    const at = document.activeElement as HTMLElement | null;
    const lost = !at || at === document.body || !at.isConnected || Boolean(at.closest('#nav')) || at.getClientRects().length === 0;
    if (lost) document.getElementById('main')?.focus({ preventScroll: true });
  }, [loc.path]);
  // the sticky header's height, for scroll-padding-top (styles.css): what gets focus is not hidden under it
  const top = useRef<HTMLElement>(null);
  useEffect(() => {
    const el = top.current;
    if (!el) return;
    const note = () => document.documentElement.style.setProperty('--top-height', `${el.offsetHeight}px`);
    note();
    const watch = new ResizeObserver(note);
    watch.observe(el);
    return () => watch.disconnect();
  }, []);

  let page: preact.JSX.Element | null = null;
  for (const [pattern, view] of ROUTES) {
    const m = match(pattern, loc.path);
    if (m) {
      // keyed by the path: another organization, ledger or webhook is another page, with none of
      // the state of the one before (a list's cursors belong to that list: the ledgers of org A
      // after "Load more", kept for org B, were a "cursor is not valid for this list" there)
      page = <Fragment key={loc.path}>{view(m)}</Fragment>;
      break;
    }
  }
  // GET /orgs lists every organization the caller may open (all of them for a superuser)
  if (orgId && !org) page = <NotFound what="organization" />;
  const role = org?.role;
  const tabs = orgId
    ? [
        { href: `/orgs/${orgId}/ledgers`, label: 'Ledgers', show: true },
        { href: `/orgs/${orgId}/team`, label: 'Team', show: true },
        { href: `/orgs/${orgId}/service-accounts`, label: 'Service accounts', show: role === 'admin' },
        { href: `/orgs/${orgId}/webhooks`, label: 'Webhooks', show: role === 'admin' },
      ].filter((t) => t.show)
    : [];

  return (
    <SecretHost.Provider value={secrets.show}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top" ref={top}>
        <div class="bar">
          <Link href="/" class="brand" aria-label="contact-ledger home">
            <img src="/favicon.svg" alt="" width="24" height="24" />
            <span>contact-ledger</span>
          </Link>
          <OrgSwitcher current={orgId} />
          <button type="button" ref={menuButton} class="menu-toggle secondary" aria-expanded={menu} aria-controls="nav" onClick={() => setMenu(!menu)}>
            Menu
          </button>
          <nav id="nav" class={menu ? 'open' : ''} aria-label="Main">
            <ul>
              {tabs.map((t) => (
                <li key={t.href}>
                  <Link href={t.href} aria-current={loc.path.startsWith(t.href) ? 'page' : undefined}>
                    {t.label}
                  </Link>
                </li>
              ))}
              {user?.superuser && (
                <li>
                  <Link href="/feed" aria-current={loc.path === '/feed' ? 'page' : undefined}>
                    Feed
                  </Link>
                </li>
              )}
            </ul>
            <div class="who">
              {/* the signed-in user, linking to their account (password change) */}
              <span class="muted" title={user?.email}>
                {user ? (
                  <Link href="/account" aria-current={loc.path === '/account' ? 'page' : undefined} aria-label={`Your account: ${user.name || user.email}`}>
                    {user.name || user.email}
                  </Link>
                ) : null}
                {role ? ` · ${role}` : user?.superuser ? ' · superuser' : ''}
              </span>
              <button type="button" class="secondary" onClick={() => void signOut().catch(() => undefined)}>
                Sign out
              </button>
            </div>
          </nav>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {page ?? <NotFound what="page" />}
      </main>
      {secrets.shown}
    </SecretHost.Provider>
  );
}

/** The organization switcher: opens the organization chosen (useChoice: not one arrow keys pass by). */
function OrgSwitcher(props: { current: string | undefined }) {
  const s = useSession();
  const open = (v: string) => {
    if (v === '__new') navigate('/orgs/new');
    else if (v && v !== props.current) navigate(`/orgs/${v}/ledgers`);
  };
  const { pending, select, commit } = useChoice(props.current ?? '', open);
  if (s.orgs.length === 0 && !s.principal.user?.superuser) return null;
  return (
    <div class="org-switch">
      <label for="org-switch" class="visually-hidden">
        Organization
      </label>
      <select id="org-switch" {...select} aria-describedby={pending ? 'org-switch-hint' : undefined}>
        {!props.current && <option value="">Choose an organization…</option>}
        {s.orgs.map((o) => (
          <option key={o.id} value={o.id}>
            {o.name}
          </option>
        ))}
        {s.principal.user?.superuser && <option value="__new">+ New organization…</option>}
      </select>
      {pending && (
        <>
          <button type="button" class="secondary small" onClick={commit}>
            Go
          </button>
          <span id="org-switch-hint" class="visually-hidden">
            Press Enter or Go to open it.
          </span>
        </>
      )}
    </div>
  );
}

/**
 * Nothing at this path for this user. Its window title says so, and when it replaces the page
 * shown (access lost: the organization is gone from the user's list, and the control they were on
 * with it) focus goes to its heading instead of falling to the body (a web tester's case).
 */
function NotFound(props: { what: string }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = 'Not found · contact-ledger';
    const at = document.activeElement as HTMLElement | null;
    if (shellShown && (!at || at === document.body || !at.isConnected)) heading.current?.focus();
  }, []);
  return (
    <div class="state empty">
      <h1 tabIndex={-1} ref={heading}>
        Not found
      </h1>
      <p>This {props.what} does not exist, or you have no access to it.</p>
      <p>
        <Link href="/">Go to the start page</Link>
      </p>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
