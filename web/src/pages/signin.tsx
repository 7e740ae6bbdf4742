import { useEffect, useState } from 'preact/hooks';
import { ApiError, signIn, takeSessionEnded } from '../api.ts';
import { FormError, Notice, useAction } from '../ui.tsx';
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
  // Every refusal in words: the API's own message (a 400's "grantType: Invalid discriminator
  // value") was shown as it came (a tester's case). The app's own messages — the server not
  // reached, an answer that is not the API's (a captive portal's page) — are words already.
  const message = (e: ApiError) => {
    if (e.code === 'invalid_grant') return 'The e-mail or password is incorrect.';
    if (e.status === 429) {
      const s = e.retryAfter ?? 60;
      return `Too many failed attempts. For your safety, signing in is paused: try again in ${s < 90 ? `${s} seconds` : `${Math.ceil(s / 60)} minutes`}.`;
    }
    if (e.status === 422) return 'Enter your e-mail address and password.';
    if (e.status === 0 || e.code === 'not_json' || e.code === 'client_error') return e.message;
    if (e.status >= 500) return `The server could not sign you in just now (it answered ${e.status}). Try again in a moment.`;
    if (e.status === 403) return 'The server refused to sign in from this page. Open contact-ledger at its own address and sign in there.';
    return `The server did not accept this sign-in (it answered ${e.status}). Reload the page and try again; if it happens again, tell your administrator.`;
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
        {/* the shared FormError: focus goes to the message when the sign-in is refused (it fell to the page: an accessibility tester's case) */}
        <FormError error={act.error} text={act.error && message(act.error)} />
        <button type="submit" class="block" disabled={act.busy}>
          {act.busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="hint">Your session stays signed in on this browser until you sign out. No password or token is stored in the browser.</p>
      </form>
    </main>
  );
}
