import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, ID, refresh, signIn } from '../api.ts';
import { navigate, takeNotice } from '../router.ts';
import { Field, fieldErrors, FormError, Notice, PageHead, useAction, useMounted, useSession } from '../ui.tsx';

const FIELDS = ['currentPassword', 'password', 'confirm'] as const;
const wait = (s: number) => (s < 90 ? `${s} seconds` : `${Math.ceil(s / 60)} minutes`);
const CHANGED = 'Your password was changed. Other browsers and devices signed in to your account were signed out; this one stays signed in.';

/**
 * The API's refusal of a password change in the page's words, at the field it is about: a wrong
 * current password (counted against the sign-in throttle), the password policy's reasons, the
 * throttle's 429 with how long to wait, a reset by a superuser meanwhile (409).
 */
function inWords(e: ApiError): ApiError {
  if (e.code === 'invalid_current_password') return new ApiError(422, e.code, e.message, [{ path: 'currentPassword', message: 'This is not your current password. Wrong attempts count like failed sign-ins.' }]);
  if (e.status === 422 && e.errors.some((x) => x.path === 'password')) {
    const why = e.errors.find((x) => x.path === 'password')!.message;
    return new ApiError(422, e.code, e.message, [{ path: 'password', message: `The new password ${why}` }]);
  }
  if (e.status === 429)
    return new ApiError(400, e.code, `Too many wrong passwords for this account. For your safety, password changes and sign-ins are paused: try again in ${wait(e.retryAfter ?? 60)}.`);
  if (e.code === 'password_changed_meanwhile') return new ApiError(400, e.code, 'Your password was changed or reset elsewhere while this change was being checked, so it was not changed. Sign out and sign in with the password you were given.');
  return e;
}

/** The signed-in user's account: who they are, and changing their password (PATCH /users/me). */
export function Account() {
  const s = useSession();
  const user = s.principal.user;
  const [current, setCurrent] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  // said once after the page came back from signing in again (below)
  const [done, setDone] = useState<string | undefined>(takeNotice);
  const here = useMounted();
  const act = useAction(async () => {
    setDone(undefined);
    if (password !== confirm) throw new ApiError(422, 'mismatch', 'The passwords differ.', [{ path: 'confirm', message: 'This does not match the new password. Type the same password twice.' }]);
    try {
      await api('PATCH', `${ID}/users/me`, { body: { currentPassword: current, password } });
    } catch (e) {
      throw e instanceof ApiError ? inWords(e) : e;
    }
    setCurrent('');
    setPassword('');
    setConfirm('');
    // Whether this page was still shown when the change was answered, asked now: a session that
    // ends below takes the page away too (the sign-in page replaces the app).
    const stayed = here.current;
    // The API keeps this session and ends every other one. Should this one have ended all the same
    // (its refresh refused), the page signs in again with the new password rather than leaving the
    // user on the sign-in page wondering whether the change was made.
    // The change is made whatever happens next: a refresh or a sign-in that fails says so beside
    // the news, never as the change's failure (a reviewer's case: a network blip read as "That did
    // not work" after the password was changed).
    try {
      await refresh();
    } catch (e) {
      if (!(e instanceof ApiError) || (e.status !== 401 && e.status !== 403) || !user) {
        setDone(`${CHANGED} (This page could not refresh its session just now; if it stops working, sign in again with the new password.)`);
        return;
      }
      // Not when the user had left this page while the change was on its way (Back, a link): signed
      // in again, the app goes back to the page they were on, as after any ended session; the
      // account page opened over it (a reviewer's case). The password is changed all the same.
      try {
        await signIn(user.email, password);
      } catch {
        // this page is gone (the session ended): the sign-in page, shown by then, says it (not
        // CHANGED, whose "this one stays signed in" it contradicts), and leads back here after, as
        // after any ended session (it led to the start page)
        if (stayed) navigate(`/signin?next=${encodeURIComponent('/account')}`, { replace: true, state: { notice: 'Your password was changed. Sign in with the new password.' } });
        return;
      }
      if (stayed) navigate('/account', { replace: true, state: { notice: CHANGED } });
    }
    setDone(CHANGED);
  });
  // The change done, focus goes to the notice that says so: it stayed in the emptied confirmation
  // (or fell to the page, the button disabled while the request ran), and a screen reader said
  // nothing of the outcome (a web tester's case). Notice is a role=status <div>, focusable from here.
  const noticeAt = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const notice = done ? noticeAt.current?.querySelector<HTMLElement>('[role="status"]') : null;
    if (!notice) return;
    notice.tabIndex = -1;
    notice.focus();
  }, [done]);
  const err = fieldErrors(act.error, FIELDS);
  if (!user)
    return (
      <>
        <PageHead title="Your account" />
        <p class="state error">This session belongs to no user account, so it has no password to change.</p>
      </>
    );
  return (
    <>
      <PageHead title="Your account" sub={user.name ? `${user.name} · ${user.email}` : user.email} />
      <div ref={noticeAt}>{done && <Notice onDismiss={() => setDone(undefined)}>{done}</Notice>}</div>
      <form
        class="card form"
        aria-labelledby="password-title"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run();
        }}
      >
        <h2 id="password-title">Change your password</h2>
        <p class="hint">
          Changing your password signs you out everywhere else — other browsers, other devices and any session started with your password — while this browser stays signed in.
        </p>
        {/* for password managers: whose password this is */}
        <Field label="E-mail">{(id) => <input id={id} type="email" autocomplete="username" readOnly value={user.email} />}</Field>
        <Field label="Current password" error={err.currentPassword}>
          {(id, d, invalid) => <input id={id} type="password" autocomplete="current-password" required aria-describedby={d} aria-invalid={invalid} value={current} onInput={(e) => setCurrent(e.currentTarget.value)} />}
        </Field>
        <Field label="New password" hint="At least 8 characters, not a common password, not your e-mail address or name, and not the current one. One shorter than 15 characters must also not be a run or a repetition, like abcdefgh or aaaaaaaa; longer ones may be any length up to 256. A passphrase of a few words is best." error={err.password}>
          {(id, d, invalid) => <input id={id} type="password" autocomplete="new-password" required minLength={8} maxLength={256} aria-describedby={d} aria-invalid={invalid} value={password} onInput={(e) => setPassword(e.currentTarget.value)} />}
        </Field>
        <Field label="Confirm the new password" error={err.confirm}>
          {(id, d, invalid) => <input id={id} type="password" autocomplete="new-password" required aria-describedby={d} aria-invalid={invalid} value={confirm} onInput={(e) => setConfirm(e.currentTarget.value)} />}
        </Field>
        <FormError error={act.error} fields={FIELDS} />
        <div class="actions">
          <button type="submit" disabled={act.busy}>
            {act.busy ? 'Changing…' : 'Change password'}
          </button>
        </div>
      </form>
    </>
  );
}
