// Shared building blocks: links, requests with loading/error/empty states, dialogs, fields.
import type { AnchorHTMLAttributes, ComponentChildren } from 'preact';
import { createContext, Fragment } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Principal, type Role } from './api.ts';
import { navigate, useLocation } from './router.ts';

// ── text ──────────────────────────────────────────────────────────────────
/**
 * An e-mail address that wraps where a reader expects it to — after the @ and before a dot — not
 * in the middle of a name (cells wrap anywhere so that nothing overflows; a tester saw
 * "pat.smi|th@…"). <wbr> adds no character: a copy is the address as it is.
 */
export function Email({ address }: { address: string }) {
  const parts = address.split(/(?<=@)|(?=\.)/);
  return <>{parts.map((p, i) => (i ? [<wbr key={i} />, p] : p))}</>;
}

// ── session context ───────────────────────────────────────────────────────
/**
 * The organization last opened (an id, not a secret), so the start page reopens it: one key a user
 * of the browser, by their id. `LAST_ORG` alone was the key every user of the browser shared, and
 * the next one to sign in went to the organization of the one before (a tester's case).
 */
export const LAST_ORG = 'contact-ledger-last-org';
export const lastOrgKey = (p: Principal) => `${LAST_ORG}:${p.user?.id ?? 'none'}`;
export interface Org {
  id: string;
  name: string;
  role: Role;
}
export interface SessionState {
  principal: Principal;
  orgs: Org[];
  reloadOrgs(): Promise<void>;
}
export const Session = createContext<SessionState | null>(null);
export function useSession(): SessionState {
  const s = useContext(Session);
  if (!s) throw new Error('useSession outside a session');
  return s;
}
/** The organization whose page `path` is (`/orgs/o_…/…`), if any. */
export const orgOfPath = (path: string): string | undefined => /^\/orgs\/(o_[^/]+)/.exec(path)?.[1];
/**
 * The name of organization `orgId` while the page shown is not one of its own (another
 * organization's, or none: the account page), else undefined: for what is shown over whatever page
 * is open (a secret's dialog, useShowSecret), which then has to say whose it is — the header names
 * the other one (a reviewer's case).
 */
export function useOrgNameElsewhere(orgId: string): string | undefined {
  const s = useSession();
  const { path } = useLocation();
  if (orgOfPath(path) === orgId) return undefined;
  return s.orgs.find((o) => o.id === orgId)?.name ?? 'another organization';
}
const RANK: Record<Role, number> = { viewer: 1, editor: 2, admin: 3 };
export const atLeast = (role: Role | undefined, need: Role) => role !== undefined && RANK[role] >= RANK[need];
/** The caller's role in an organization (superusers act as admins everywhere). */
export function useRole(orgId: string): Role | undefined {
  const s = useSession();
  return s.orgs.find((o) => o.id === orgId)?.role ?? (s.principal.user?.superuser ? 'admin' : undefined);
}

// ── navigation ────────────────────────────────────────────────────────────
/** A link of the app; `state` goes with the history entry it opens (router.ts navigate). */
export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string; state?: Record<string, unknown> }) {
  const { href, onClick, state, ...rest } = props;
  return (
    <a
      href={href}
      {...rest}
      onClick={(e) => {
        (onClick as ((e: MouseEvent) => void) | undefined)?.(e as unknown as MouseEvent);
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href, { state });
      }}
    />
  );
}

// ── requests ──────────────────────────────────────────────────────────────
export interface Request<T> {
  data?: T | undefined;
  error?: ApiError | undefined;
  loading: boolean;
  /**
   * The data shown is of other deps than the current ones (the list of the filter before, while
   * the new filter's list loads): it does not answer what the page now asks, so it is not shown
   * as if it did, and nothing taken from it (a cursor, a count) goes with the new request.
   */
  stale: boolean;
  reload(): void;
}

/**
 * Runs `fn` when `deps` change; keeps the last data while reloading (no flicker). A change of
 * `refresh` runs it again as `reload()` does: the same request asked again (a log after an event),
 * whose data stays current meanwhile, unlike data of other deps.
 */
/**
 * Asks `req` again `ms` after each answer while `follow` holds — something the page shows is still
 * running or due (imports, feeds, webhook retries) — never while a request is under way.
 */
export function useReloadWhile(req: Request<unknown>, follow: boolean, ms: number): void {
  useEffect(() => {
    if (!follow || req.loading) return;
    const t = setTimeout(req.reload, ms);
    return () => clearTimeout(t);
  }, [follow, req.loading, req.data, ms]);
}

export function useRequest<T>(fn: (signal: AbortSignal) => Promise<T>, deps: unknown[], refresh?: unknown): Request<T> {
  // `of`: the deps the data was fetched under. A failed reload of the same request keeps showing
  // its data under the error ("could not refresh"); data of other deps (the list before a filter
  // changed) would be shown as matching a request that failed, so it goes.
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean; of?: string; errorOf?: string }>({ loading: true });
  const [n, setN] = useState(0);
  const key = JSON.stringify(deps);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ data: s.data, of: s.of, loading: true }));
    fn(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, of: key, loading: false }),
      (error: unknown) =>
        !ctl.signal.aborted &&
        setState((s) => (s.of === key ? { data: s.data, of: s.of, error: asApiError(error), errorOf: key, loading: false } : { error: asApiError(error), errorOf: key, loading: false })),
    );
    return () => ctl.abort();
  }, [key, n, JSON.stringify(refresh)]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  // judged from the deps of this render, before the effect has even started the new request: the
  // first render under a new filter already shows it loading, not the old rows as its answer
  const stale = state.data !== undefined && state.of !== key;
  const settled = state.of === key || state.errorOf === key;
  return { data: state.data, error: state.errorOf === key ? state.error : undefined, loading: state.loading || !settled, stale, reload };
}

/**
 * A failure as an ApiError. One that is no answer of the server — an error of the page itself — is
 * said in words, its JavaScript message left to the console: the page showed `Unexpected token '<',
 * "<html>capt"... is not valid JSON` as it came (a tester's case; api.ts now says that one itself).
 */
export function asApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof DOMException && e.name === 'AbortError') return new ApiError(0, 'aborted', 'Cancelled.');
  console.error(e);
  return new ApiError(0, 'client_error', 'Something went wrong in this page. Reload it and try again.');
}

/** Explains an error in words a person can act on. */
export function explain(e: ApiError): string {
  // the API names what is missing by its id ("No member with id u_…."), which tells a person
  // nothing they can act on: what is missing, and why it may be (a web tester's case)
  const missing = e.status === 404 && /^No (.+) with id \S+\.$/.exec(e.message);
  if (missing) return `This ${missing[1]} does not exist (it may have been deleted meanwhile).`;
  if (e.status === 403) return `You do not have permission to do this. ${e.message}`;
  if (e.status === 429) return `Too many attempts. Try again ${e.retryAfter ? `in ${wait(e.retryAfter)}` : 'later'}.`;
  if (e.status >= 500) return `Something went wrong on the server. ${e.message}`;
  return e.message;
}
const wait = (s: number) => (s < 90 ? `${s} seconds` : `${Math.ceil(s / 60)} minutes`);

export function Loading(props: { label?: string }) {
  return (
    <p class="state loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {props.label ?? 'Loading…'}
    </p>
  );
}

export function ErrorBox(props: { error: ApiError; retry?: () => void; title?: string }) {
  return (
    <div class="state error" role="alert">
      <p>
        <strong>{props.title ?? 'That did not work.'}</strong> {explain(props.error)}
      </p>
      {props.retry && (
        <button type="button" class="secondary" onClick={props.retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return <div class="state empty">{props.children}</div>;
}

/**
 * Loading → error → empty → content, for one request. Data of other deps (the rows of the filter
 * before) is not shown while the current request loads: its loading state is (`keepStale` keeps
 * it, for a list that only grows: the Ledgers' "Load more"). `notFound`: what a 404 means here,
 * said without a "Try again" that would only ask again for what does not exist. `retry`: what
 * "Try again" does when more than this request failed with it (the page's heading and count too).
 */
export function Async<T>(props: { req: Request<T>; empty?: (d: T) => boolean; emptyText?: ComponentChildren; label?: string; keepStale?: boolean; notFound?: ComponentChildren; retry?: () => void; children: (d: T) => ComponentChildren }) {
  const { req } = props;
  if (req.data === undefined || (req.stale && !props.keepStale)) {
    if (req.error && req.error.status === 404 && props.notFound) return <NotFoundState>{props.notFound}</NotFoundState>;
    if (req.error) return <ErrorBox error={req.error} retry={props.retry ?? req.reload} />;
    return <Loading label={props.label} />;
  }
  return (
    <>
      {req.error && <ErrorBox error={req.error} retry={props.retry ?? req.reload} title="Could not refresh." />}
      {props.empty?.(req.data) ? <Empty>{props.emptyText}</Empty> : props.children(req.data)}
    </>
  );
}

/** Something asked for by its id that does not exist (or no longer: deleted meanwhile). */
export function NotFoundState(props: { children: ComponentChildren }) {
  return (
    <div class="state empty not-found" role="alert">
      {props.children}
    </div>
  );
}

/**
 * Whether the component is still in the page. A dialog's request cannot be called back, and while
 * it is on its way the browser's Back still leaves the page (Dialog's `busy` holds only Cancel, ×
 * and Escape): its late success may refresh data, but must not navigate from whatever page the
 * user went to (a reviewer's case: the new ledger's page opened over the page Back had led to).
 */
export function useMounted(): { readonly current: boolean } {
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  return mounted;
}

// ── forms ─────────────────────────────────────────────────────────────────
/** A form whose submit runs an async action, with busy and error states. */
export function useAction<A extends unknown[], R>(fn: (...a: A) => Promise<R>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const run = async (...a: A): Promise<R | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await fn(...a);
    } catch (e) {
      setError(asApiError(e));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  /**
   * A field's setter that also takes the refusal away: a message about the value before misleads
   * once it is changed (an e-mail "already a member", then another one typed: a web tester's case).
   */
  const edited =
    <V,>(set: (v: V) => void) =>
    (v: V) => {
      set(v);
      setError(undefined);
    };
  return { run, busy, error, setError, edited };
}

/** A server's field message as a sentence: "must not be empty" → "Must not be empty." */
const sentence = (m: string) => {
  const t = m.trim();
  return t ? `${t[0]!.toUpperCase()}${t.slice(1)}${/[.!?]$/.test(t) ? '' : '.'}` : t;
};

/**
 * The messages of a refused request (its problem's `errors[]`) for the form's own fields, by the
 * path the API names them with: each is shown at its field (Field's `error`) instead of as
 * "adminPassword: …" above the form. Paths the form has no field for stay with FormError.
 */
export function fieldErrors(error: ApiError | undefined, paths: readonly string[]): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const e of error?.errors ?? []) if (paths.includes(e.path) && out[e.path] === undefined) out[e.path] = sentence(e.message);
  return out;
}

/**
 * A form's error. `fields`: the paths the form shows at their fields (the ones it gave fieldErrors)
 * — then this says only to look there, and lists in words what no field shows. `text`: the form's
 * own words for the error, said instead (the sign-in page's).
 * When the failure left focus nowhere (the submit button was disabled while the request ran, so
 * the browser moved focus to the page), focus goes to the first field marked invalid, else to the
 * message: a keyboard or screen-reader user stays in the dialog and hears what is wrong. Focus in
 * another field of the form (Enter pressed there) moves the same way: to the first marked one, else
 * to the message.
 */
export function FormError(props: { error: ApiError | undefined; fields?: readonly string[]; text?: string | undefined }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const box = ref.current;
    if (!props.error || !box) return;
    const active = document.activeElement as HTMLElement | null;
    const lost = !active || active === document.body || !active.isConnected || (active as HTMLButtonElement).disabled === true;
    const scope = box.closest('form') ?? box.closest('dialog') ?? box.parentElement;
    const invalid = scope?.querySelector<HTMLElement>('[aria-invalid="true"]');
    if (lost) (invalid ?? box).focus();
    // Enter pressed in one field of the form, the error about another: focus goes to that one (a
    // web tester's case: an unknown member's address sent from E-mail, the password named, focus
    // left on E-mail); about no field, to the message, as when the button was clicked (a tester's
    // case: an "already a member" sent with Enter left focus on E-mail, and the alert unread with
    // it). A field the error marks keeps it.
    else if (scope?.contains(active) && !active!.matches('[aria-invalid="true"]')) {
      if (invalid) invalid.focus();
      else if (active!.matches('input, select, textarea')) box.focus();
    }
  }, [props.error]);
  if (!props.error) return null;
  const e = props.error;
  const fields = props.fields ?? [];
  const atFields = e.errors.filter((x) => fields.includes(x.path));
  const rest = e.errors.filter((x) => !fields.includes(x.path));
  let lead: string;
  if (e.errors.length > 0 && rest.length === 0) lead = atFields.length === 1 ? 'Check the marked field.' : 'Check the marked fields.';
  else if (e.errors.length > 0 && e.code === 'validation_failed') lead = rest.length === 1 ? `${rest[0]!.path}: ${sentence(rest[0]!.message)}` : 'Some values were not accepted:';
  else lead = explain(e);
  // a form that says its own refusals in its own words (the sign-in page): they replace the lead
  if (props.text !== undefined) lead = props.text;
  return (
    <div class="form-error" role="alert" tabIndex={-1} ref={ref}>
      <p>{lead}</p>
      {props.text === undefined && rest.length > 1 && (
        <ul>
          {rest.map((x) => (
            <li key={x.path}>
              {x.path}: {sentence(x.message)}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

let fieldSeq = 0;
/**
 * A labelled control with an optional hint and error; `children` gets the control's id, the ids
 * that describe it (hint, error) and whether it is invalid (for `aria-invalid`).
 */
export function Field(props: { label: string; hint?: ComponentChildren; error?: string | undefined; children: (id: string, describedBy?: string, invalid?: boolean) => ComponentChildren }) {
  const id = useRef(`f${++fieldSeq}`).current;
  const described = [props.hint ? `${id}-hint` : '', props.error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children(id, described, props.error ? true : undefined)}
      {props.error && (
        <p class="field-error" id={`${id}-error`}>
          {props.error}
        </p>
      )}
      {props.hint && (
        <p class="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
    </div>
  );
}

/**
 * A <select> whose choice takes effect only when it is made: a pick with the pointer (or in the
 * list a keyboard opened, Alt+↓ or Space, confirmed with Enter), or Enter on the select — not
 * while arrow keys or typed letters merely move through it. A closed select changes its value on
 * each ↓, and acting on every one of them took keyboard users where they never chose to go (the
 * organization switcher: the next organization, then "New organization") or made each role on the
 * way a change of a member's rights (the Team page); WCAG 3.2.2. A choice moved to with the keyboard
 * waits (`pending`): the caller shows a button that calls `commit`; Escape puts back `current`.
 */
export function useChoice(current: string, take: (value: string) => void) {
  const [choice, setChoice] = useState(current);
  const keyed = useRef(false);
  useEffect(() => setChoice(current), [current]);
  const pending = choice !== current && choice !== '';
  const select = {
    value: choice,
    onKeyDown: (e: KeyboardEvent & { currentTarget: HTMLSelectElement }) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        take(e.currentTarget.value);
      } else if (e.key === 'Escape' && pending) {
        e.preventDefault();
        e.stopPropagation(); // a dialog around it stays open
        setChoice(current);
      } else if (!e.altKey && !e.ctrlKey && !e.metaKey && (/^(Arrow|Page|Home$|End$)/.test(e.key) || e.key.length === 1) && e.key !== ' ') {
        // this key moves the value of a closed select: the 'change' it fires (in this task) is no choice yet
        keyed.current = true;
        setTimeout(() => (keyed.current = false), 0);
      }
    },
    onChange: (e: Event & { currentTarget: HTMLSelectElement }) => {
      const v = e.currentTarget.value;
      setChoice(v);
      if (!keyed.current) take(v);
    },
  };
  return { choice, pending, select, commit: () => take(choice), reset: () => setChoice(current) };
}

// ── dialogs ───────────────────────────────────────────────────────────────
/** The dialogs open now, the newest last, each with where focus goes back to when it closes. */
let dialogSeq = 0;
const openDialogs: { el: HTMLDialogElement; returnTo: HTMLElement[] }[] = [];

const focusable = (el: HTMLElement) => el.isConnected && el !== document.body && !(el as HTMLButtonElement).disabled && !el.closest('dialog:not([open])') && !el.closest('[inert]');

/**
 * A modal <dialog>: focus moves in, Escape closes, focus returns to where it was. Where it was
 * may be gone by then: a dialog opened from another one's action (the secret shown after
 * "Rotate secret" was confirmed) was opened from a button of a dialog that has closed since, or
 * from no element at all (the button was disabled while its request ran, which drops focus to
 * the page). So each dialog keeps the chain of places to return to — the element it was opened
 * from, then what the dialog that element was in would have returned to — and focus goes to
 * the first of them still in the page and usable (the "Rotate secret" button), else to <main>.
 *
 * `backCloses`: the dialog gets a history entry of its own, so that the browser's Back
 * closes it instead of leaving the page — for what cannot be shown again (a secret shown once: a
 * web tester's Back lost one, the page gone with it). Closed otherwise, it takes its entry back.
 * Only for dialogs that do not navigate as they close (a Back then would undo the navigation).
 *
 * `busy`: its request is on its way (a form's Save, a confirmed deletion): "×" and Escape wait for
 * the answer, as the form's Cancel does. The request cannot be called back, and a dialog closed
 * meanwhile still created the ledger or member it was told to create (a web tester's case).
 */
export function Dialog(props: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean; backCloses?: boolean; busy?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  const busy = useRef(props.busy);
  busy.current = props.busy;
  const titleId = useRef(`dialog-title-${++dialogSeq}`).current; // one per dialog: two can be open at once
  const onClose = useRef(props.onClose);
  onClose.current = props.onClose;
  useEffect(() => {
    if (!props.backCloses) return;
    // a mark no other page load gives (titleId's count starts again after a reload, and a stale
    // entry of the same name swallowed Back: a reviewer's case)
    const id = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    history.pushState({ ...((history.state as Record<string, unknown> | null) ?? {}), dialog: id }, '');
    let popped = false;
    const onPop = () => {
      if ((history.state as { dialog?: unknown } | null)?.dialog === id) return;
      popped = true;
      onClose.current();
    };
    window.addEventListener('popstate', onPop);
    return () => {
      window.removeEventListener('popstate', onPop);
      if (!popped && (history.state as { dialog?: unknown } | null)?.dialog === id) history.back();
    };
  }, []);
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const d = ref.current!;
    const parent = (before && openDialogs.find((o) => o.el.contains(before))) ?? openDialogs.at(-1);
    const entry = { el: d, returnTo: [...(before && before !== document.body ? [before] : []), ...(parent?.returnTo ?? [])] };
    openDialogs.push(entry);
    if (!d.open) d.showModal();
    // showModal focuses the first control, the "×": one Enter there threw a secret shown once away,
    // or sat next to a deletion (a web tester's case). A dialog names the control to start on: the
    // secret itself, a confirmation's Cancel.
    d.querySelector<HTMLElement>('[data-autofocus]')?.focus();
    const onCancel = (e: Event) => {
      e.preventDefault();
      if (!busy.current) props.onClose();
    };
    d.addEventListener('cancel', onCancel);
    return () => {
      d.removeEventListener('cancel', onCancel);
      openDialogs.splice(openDialogs.indexOf(entry), 1);
      if (d.open) d.close();
      // back to where focus was; to the page when that control is gone (its row was deleted)
      const target = entry.returnTo.find(focusable);
      if (target) {
        target.focus();
        keepFocusInPage(target);
      } else document.getElementById('main')?.focus();
    };
  }, []);
  return (
    <dialog ref={ref} class={props.wide ? 'wide' : ''} aria-labelledby={titleId}>
      <div class="dialog-head">
        <h2 id={titleId}>{props.title}</h2>
        <button type="button" class="icon" aria-label="Close" disabled={props.busy} onClick={props.onClose}>
          ×
        </button>
      </div>
      {props.children}
    </dialog>
  );
}

/**
 * Focus given back to a control that its page then removes (the row of a ledger a confirmed
 * "Delete" removed goes when the list reloads, after the dialog closed) would fall to <body>, and a
 * keyboard user would start again at the top of the page (a web tester's case): while the control
 * has focus, for a few seconds, its removal moves focus to the page's <main>.
 */
function keepFocusInPage(el: HTMLElement): void {
  const watch = new MutationObserver(() => {
    if (el.isConnected) return;
    watch.disconnect();
    if (document.activeElement === document.body || document.activeElement === null) document.getElementById('main')?.focus();
  });
  watch.observe(document.body, { childList: true, subtree: true });
  setTimeout(() => watch.disconnect(), 5000);
}

/**
 * A button disabled while its request runs drops focus to <body> (a web tester's case: "Disable"
 * and "Send test" of a webhook, the rejected rows' Download), and a keyboard user starts again at
 * the top of the page. Called with the button as it is pressed: once it is usable again (the same
 * element, perhaps now "Enable"), it gets focus back — unless focus went somewhere meanwhile (an
 * error message, a dialog, the user's own click). Removed instead, focus passes to <main>.
 */
export function refocusWhenDone(el: HTMLElement | null): void {
  if (!el) return;
  let seen = false; // disabled at least once: its request has started
  const settle = (): boolean => {
    const active = document.activeElement;
    const lost = active === el || active === document.body || active === null;
    if (!lost) return true; // focus was moved on purpose: leave it there
    if (!el.isConnected) {
      document.getElementById('main')?.focus();
      return true;
    }
    if ((el as HTMLButtonElement).disabled || !focusable(el)) {
      seen = true;
      return false;
    }
    if (!seen) return false;
    if (active !== el) {
      el.focus();
      keepFocusInPage(el);
    }
    return true;
  };
  const watch = new MutationObserver(() => settle() && watch.disconnect());
  watch.observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ['disabled'] });
  setTimeout(() => watch.disconnect(), 30_000);
}

/** "Are you sure?" with the consequence spelled out; the action runs on confirm. */
export function Confirm(props: { title: string; children: ComponentChildren; confirm: string; danger?: boolean; onConfirm: () => Promise<unknown>; onClose: () => void }) {
  const act = useAction(props.onConfirm);
  return (
    <Dialog title={props.title} onClose={props.onClose} busy={act.busy}>
      <div class="dialog-body">{props.children}</div>
      <FormError error={act.error} />
      <div class="actions">
        {/* focus starts here, the action that changes nothing (not "×" or the confirmation) */}
        <button type="button" class="secondary" data-autofocus disabled={act.busy} onClick={props.onClose}>
          Cancel
        </button>
        <button
          type="button"
          class={props.danger ? 'danger' : ''}
          disabled={act.busy}
          onClick={async () => {
            const ok = await act.run();
            if (ok !== undefined) props.onClose();
          }}
        >
          {act.busy ? 'Working…' : props.confirm}
        </button>
      </div>
    </Dialog>
  );
}

/** The one way out of a dialog that shows a secret once: the user says it is stored. */
export function SecretStored(props: { onClose: () => void }) {
  return (
    <div class="actions">
      <button type="button" onClick={props.onClose}>
        I have stored the secret
      </button>
    </div>
  );
}

/** A secret shown exactly once, with a copy button and a warning; `why` says why it cannot be shown again. */
export function SecretOnce(props: { label: string; value: string; extra?: ComponentChildren; why?: string }) {
  const [copied, setCopied] = useState<'yes' | 'no' | undefined>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied('yes');
    } catch {
      // no clipboard API (plain HTTP): select the text so Ctrl+C copies it
      const el = document.getElementById('secret-value') as HTMLInputElement | null;
      el?.select();
      setCopied(document.execCommand?.('copy') ? 'yes' : 'no');
    }
  };
  return (
    <div class="secret">
      <p class="warning" role="note" id="secret-warning">
        <strong>Copy this {props.label} now.</strong> It is shown only this once; {props.why ?? 'it is stored only as a hash and cannot be shown again'}. If it is lost, rotate it.
      </p>
      {props.extra}
      <label for="secret-value">{props.label}</label>
      <div class="secret-row">
        {/* the dialog opens here (Dialog's data-autofocus), selected for Ctrl+C, with the warning read */}
        <input id="secret-value" class="mono" readOnly data-autofocus aria-describedby="secret-warning" value={props.value} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy}>
          Copy
        </button>
      </div>
      <p class="hint" role="status">
        {copied === 'yes' ? 'Copied to the clipboard.' : copied === 'no' ? 'Select the text and press Ctrl+C to copy.' : ''}
      </p>
    </div>
  );
}

/**
 * Shows a dialog with a secret shown once (a new service account's or webhook's, a rotated one)
 * from the shell, over whatever page is open when the server answers: `render` gets the dialog's
 * close. The page that asked is not where it lives: a create or rotation answered after Back had
 * left that page set its secret in the page gone, and the credential existed with a secret nobody
 * had seen (a reviewer's case). Signing out ends it with the shell, secret and all.
 */
export type ShowSecret = (render: (close: () => void) => ComponentChildren) => void;
export const SecretHost = createContext<ShowSecret | null>(null);
export function useShowSecret(): ShowSecret {
  const show = useContext(SecretHost);
  if (!show) throw new Error('useShowSecret outside the shell');
  return show;
}
let secretSeq = 0;
/** The shell's side of useShowSecret: the secrets answered, shown one at a time, the first first. */
export function useSecretHost(): { show: ShowSecret; shown: ComponentChildren } {
  const [queue, setQueue] = useState<{ key: number; render: (close: () => void) => ComponentChildren }[]>([]);
  const show = useCallback<ShowSecret>((render) => setQueue((q) => [...q, { key: ++secretSeq, render }]), []);
  const first = queue[0];
  const shown = first ? <Fragment key={first.key}>{first.render(() => setQueue((q) => q.filter((x) => x.key !== first.key)))}</Fragment> : null;
  return { show, shown };
}

// ── formatting ────────────────────────────────────────────────────────────
/**
 * A moment in the reader's own time zone, named (“Nov 22, 2026, 11:32 AM GMT+1”), so that it is never
 * mistaken for UTC or the server's time.
 */
const dateTime = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short' });
/**
 * A day is the UTC day: the day filters are whole days in UTC (docs/web.md), and a month or year the
 * feed gives (`jobStartedAt` 2024-03) is kept as its first day at midnight UTC — in the reader's zone
 * west of Greenwich that was the last day of the month before.
 */
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });
export const fmtDateTime = (iso: string | null | undefined) => (iso ? dateTime.format(new Date(iso)) : '—');
export const fmtDate = (iso: string | null | undefined) => (iso ? dateOnly.format(new Date(iso)) : '—');
export const fmtNumber = (n: number) => n.toLocaleString();
/** "1 row", "2 rows": a number with its noun. */
export const fmtCount = (n: number, one: string, many = `${one}s`) => `${fmtNumber(n)} ${n === 1 ? one : many}`;

export function Time(props: { iso: string | null | undefined; dateOnly?: boolean }) {
  if (!props.iso) return <span class="muted">—</span>;
  // the exact moment in UTC on hover, as the API and downloads give it
  return (
    <time dateTime={props.iso} title={props.iso}>
      {props.dateOnly ? fmtDate(props.iso) : fmtDateTime(props.iso)}
    </time>
  );
}

/**
 * An import or feed job's status as a badge (completed, failed, or as it is), with why it failed
 * (or what the server says about one that finished) as text beneath it: a tooltip on the status
 * reached no keyboard, touch or screen-reader user.
 */
export function JobStatus(props: { status: string; message: string | null }) {
  const failed = props.status === 'failed';
  return (
    <>
      <span class={`badge ${props.status === 'completed' ? 'ok' : failed ? 'bad' : ''}`}>{props.status}</span>
      {props.message && <p class={`job-message${failed ? ' bad-text' : ' muted'}`}>{props.message}</p>}
    </>
  );
}

/**
 * Announces short results of actions to screen readers and sighted users alike. `quiet`: shown, not
 * announced — a text that changes by itself (a running import's count) would be read out at each change.
 */
export function Notice(props: { children: ComponentChildren; onDismiss?: () => void; quiet?: boolean }) {
  return (
    <div class="notice" role={props.quiet ? undefined : 'status'}>
      <span>{props.children}</span>
      {props.onDismiss && (
        <button type="button" class="icon" aria-label="Dismiss" onClick={props.onDismiss}>
          ×
        </button>
      )}
    </div>
  );
}

/** `docTitle`: the window's title when the heading alone does not tell the page from its siblings (a ledger's tabs). */
export function PageHead(props: { title: string; docTitle?: string; sub?: ComponentChildren; children?: ComponentChildren; crumbs?: { href: string; label: string }[] }) {
  const docTitle = props.docTitle ?? props.title;
  useEffect(() => {
    document.title = `${docTitle} · contact-ledger`;
  }, [docTitle]);
  return (
    <div class="page-head">
      {props.crumbs && (
        <nav aria-label="Breadcrumb" class="crumbs">
          {props.crumbs.map((c) => (
            <span key={c.href}>
              <Link href={c.href}>{c.label}</Link>
              <span aria-hidden="true"> / </span>
            </span>
          ))}
        </nav>
      )}
      <div class="page-title">
        <div>
          <h1>{props.title}</h1>
          {props.sub && <p class="sub">{props.sub}</p>}
        </div>
        {props.children && <div class="page-actions">{props.children}</div>}
      </div>
    </div>
  );
}

/**
 * Newer/Older paging of a keyset list, newest first: `cursors` is the stack of cursors that led
 * to the page shown (empty on the first page); Older pushes the page's `nextCursor`, Newer pops.
 */
export function CursorPager(props: { cursors: string[]; setCursors: (c: string[]) => void; nextCursor: string | null }) {
  const { cursors, setCursors, nextCursor } = props;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
        Newer
      </button>
      <button type="button" class="secondary" disabled={!nextCursor} onClick={() => setCursors([...cursors, nextCursor!])}>
        Older
      </button>
    </nav>
  );
}
