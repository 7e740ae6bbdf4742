import { useEffect, useState } from 'preact/hooks';
import { ApiError, signIn, takeSessionEnded } from '../api.ts';
import { Notice, useAction } from '../ui.tsx';
import { useNotice } from '../router.ts';

/** Sign in with e-mail and password; clear messages for wrong credentials and throttling. */
export function SignIn() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const act = useAction(() => signIn(email.trim(), password));
  // a session that ended by itself (its refresh refused) lands here: said, unlike a first visit or a sign-out
  const [ended] = useState(takeSessionEnded);
  // what the page before handed over (the account page's password changed, its session then gone):
  // also once this page is shown, as it is by then (the ended session put it there)
  const handed = useNotice();
  useEffect(() => {
    document.title = 'Sign in · contact-ledger';
    // the page's one task starts in its first field (focus was on the body: Tab through the page to reach it)
    const at = document.activeElement;
    if (!at || at === document.body) document.getElementById('email')?.focus();
  }, []);
  const message = (e: ApiError) => {
    if (e.code === 'invalid_grant') return 'The e-mail or password is incorrect.';
    if (e.status === 429) {
      const s = e.retryAfter ?? 60;
      return `Too many failed attempts. For your safety, signing in is paused: try again in ${s < 90 ? `${s} seconds` : `${Math.ceil(s / 60)} minutes`}.`;
    }
    if (e.status === 422) return 'Enter your e-mail address and password.';
    return e.message;
  };
  return (
    <main class="signin" id="main">
      <form
        class="card"
        aria-labelledby="signin-title"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run();
        }}
      >
        <div class="brand big">
          <img src="/favicon.svg" alt="" width="32" height="32" />
          <span>contact-ledger</span>
        </div>
        <h1 id="signin-title">Sign in</h1>
        {handed ? <Notice>{handed}</Notice> : ended && <Notice>Your session ended. Sign in again.</Notice>}
        <div class="field">
          <label for="email">E-mail</label>
          <input id="email" type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="password">Password</label>
          <input id="password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </div>
        {act.error && (
          <div class="form-error" role="alert">
            <p>{message(act.error)}</p>
          </div>
        )}
        <button type="submit" class="block" disabled={act.busy}>
          {act.busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="hint">Your session stays signed in on this browser until you sign out. No password or token is stored in the browser.</p>
      </form>
    </main>
  );
}
