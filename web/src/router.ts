// A small history router: the path is the state; links push it; the server answers every
// application path with index.html, so a reload or a shared link opens the same page.
import { useEffect, useRef, useState } from 'preact/hooks';

const listeners = new Set<() => void>();
const notify = () => listeners.forEach((fn) => fn());
/** How the app last went to another entry: a link or step (push), a correction or redirect (replace), Back or Forward (pop). */
let lastKind: 'push' | 'replace' | 'pop' = 'push';
export const lastNavigation = () => lastKind;

/**
 * Back or Forward to another entry of a list (`key`: its filters, sort and page): the control that
 * had focus went with the old list, and focus fell to the page (a web tester's case). Once the list
 * the entry names is shown (`loading` false; `shown` changes with its answer), the element
 * `headingId` gets focus — unless focus is somewhere already, or (`leaveFrom`) inside what
 * belonged to the entry left. The mark holds for its entry alone: a filter applied before a popped
 * list arrived takes it back.
 */
export function useFocusAfterPop(key: string, loading: boolean, shown: unknown[], headingId: string, leaveFrom?: string): void {
  const popped = useRef(false);
  useEffect(() => {
    popped.current = lastNavigation() === 'pop';
  }, [key]);
  useEffect(() => {
    if (!popped.current || loading) return;
    popped.current = false;
    const at = document.activeElement as HTMLElement | null;
    if (!at || at === document.body || !at.isConnected || (leaveFrom !== undefined && at.closest(leaveFrom))) document.getElementById(headingId)?.focus({ preventScroll: true });
  }, [loading, ...shown]);
}
window.addEventListener('popstate', () => {
  lastKind = 'pop';
  notify();
});

/**
 * Goes to a path of the app. `state` rides with the new history entry (kept over a reload of it,
 * gone on another entry): the list a contact was opened from, a notice for the page it leads to.
 */
export function navigate(to: string, opts: { replace?: boolean; state?: Record<string, unknown> } = {}): void {
  if (to === location.pathname + location.search && !opts.state) return;
  // the entry left keeps where its page was scrolled to and the link followed, for Back (useReturnPosition)
  if (!opts.replace) {
    const link = (document.activeElement as HTMLElement | null)?.closest?.('main a[href]')?.getAttribute('href');
    history.replaceState({ ...((history.state as Record<string, unknown> | null) ?? {}), scrollY: window.scrollY, ...(link ? { link } : {}) }, '');
  }
  lastKind = opts.replace ? 'replace' : 'push';
  try {
    if (opts.replace) history.replaceState(opts.state ?? null, '', to);
    else history.pushState(opts.state ?? null, '', to);
  } catch {
    // a URL the browser refuses (another origin: SecurityError) is no place of this app; going on
    // would leave the page stuck mid-render, so it goes to the start page instead
    if (location.pathname + location.search === '/') return;
    history.replaceState(null, '', '/');
  }
  notify();
  window.scrollTo(0, 0);
}

/** The current path and query; re-renders on navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, tick] = useState(0);
  useEffect(() => {
    const fn = () => tick((n) => n + 1);
    listeners.add(fn);
    return () => void listeners.delete(fn);
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/** Matches `/orgs/:orgId/ledgers` against a path; returns the parameters or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const norm = (x: string) => x.replace(/\/+$/, '') || '/';
  const p = norm(pattern).split('/');
  const s = norm(path).split('/');
  if (p.length !== s.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i]!.startsWith(':')) {
      try {
        out[p[i]!.slice(1)] = decodeURIComponent(s[i]!);
      } catch {
        return null;
      }
    } else if (p[i] !== s[i]) return null;
  }
  return out;
}

/**
 * Sets the query string (filters, sort, paging) as a new history entry, so that Back undoes a
 * filter or goes to the page before (a tester's case: every change replaced the entry, and after
 * two "Next" one Back left the ledger). `replace`: a correction that is no step of the user's
 * (a cursor the API refused).
 */
export function setQuery(values: Record<string, string | undefined>, opts: { replace?: boolean } = {}): void {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v) q.set(k, v);
  const s = q.toString();
  navigate(`${location.pathname}${s ? `?${s}` : ''}`, { replace: opts.replace === true });
}

/**
 * A short notice handed to this page by the one before (`navigate(to, { state: { notice } })`),
 * once: it is taken out of the history entry, so a reload does not repeat it.
 */
export function takeNotice(): string | undefined {
  const state = history.state as { notice?: unknown } | null;
  if (typeof state?.notice !== 'string') return undefined;
  const { notice, ...rest } = state;
  history.replaceState(Object.keys(rest).length ? rest : null, '');
  return notice;
}

/**
 * takeNotice for a page that may be shown already when the notice is handed to it: taken as the
 * page mounts and again on each navigation that stays on its path. The sign-in page replaces the
 * app as soon as a session ends, so the account page's "Your password was changed. Sign in with
 * the new password." (its sign-in again failed after that) came to a sign-in page already shown,
 * which said "Your session ended" instead (a reviewer's case: the old password was tried next).
 */
export function useNotice(): string | undefined {
  const [notice, setNotice] = useState(takeNotice);
  useEffect(() => {
    const path = location.pathname;
    const fn = () => {
      if (location.pathname !== path) return; // another page's: it takes its own
      const n = takeNotice();
      if (n !== undefined) setNotice(n);
    };
    listeners.add(fn);
    return () => void listeners.delete(fn);
  }, []);
  return notice;
}

/** A value this history entry was given by `navigate(…, { state })` (undefined when none). */
export function entryState(key: string): unknown {
  return (history.state as Record<string, unknown> | null)?.[key];
}

/**
 * Back on a page left by a link: once its content is shown again (`ready`), it is scrolled to where
 * it was and the link followed gets focus (an accessibility tester's case: the contacts list came
 * back at its top, focus on the body, 40 rows to go through again). Once: the entry forgets it.
 */
export function useReturnPosition(ready: boolean): void {
  useEffect(() => {
    if (!ready) return;
    const state = history.state as { scrollY?: unknown; link?: unknown } | null;
    if (typeof state?.scrollY !== 'number') return;
    const { scrollY, link, ...rest } = state;
    history.replaceState(Object.keys(rest).length ? rest : null, '');
    const target = typeof link === 'string' ? [...document.querySelectorAll<HTMLAnchorElement>('main a[href]')].find((a) => a.getAttribute('href') === link) : undefined;
    window.scrollTo(0, scrollY);
    target?.focus({ preventScroll: true });
  }, [ready]);
}
