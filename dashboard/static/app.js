// The RelayBell dashboard. Pages are Preact components in htm templates:
// every value from the API goes in as text, never as markup. This entry
// holds who is signed in; shell.js the signed-in pages, pages/ one module
// a page.
import { html, render, useState, useEffect, useCallback } from './vendor/preact-htm.module.js';
import { call, setProject, ApiError } from './api.js';
import { Alert } from './forms.js';
import { go, useRoute } from './router.js';
import { SignIn, SignUp, VerifyEmail, VerifyElsewhere, ForgotPassword, ResetPassword } from './pages/auth.js';
import { Shell } from './shell.js';

// signedOut reports whether a refusal says there is no session.
const signedOut = (err) => err instanceof ApiError && err.status === 401;

function App() {
  const route = useRoute();
  const [me, setMe] = useState(undefined); // undefined: loading; null: signed out
  const [failure, setFailure] = useState(null); // why GET /auth/me failed, other than no session
  useEffect(() => {
    call('GET', '/auth/me').then(setMe, (err) => {
      setMe(null);
      if (!signedOut(err)) setFailure(err);
    });
  }, []);
  const signedIn = useCallback((answer) => {
    setFailure(null);
    setMe(answer);
    go('');
  }, []);
  // signOut ends the session; a refusal rejects (the caller shows it), as
  // the session then still holds, unless it had already ended.
  const signOut = useCallback(async () => {
    try {
      await call('POST', '/auth/logout');
    } catch (err) {
      if (!signedOut(err)) throw err;
    }
    setProject(null);
    setMe(null);
    go('signin');
  }, []);
  if (me === undefined) {
    return html`<p class="loading" role="status">Loading RelayBell…</p>`;
  }
  const token = route.query.get('token') || '';
  if (route.path === 'reset-password') {
    return html`<${ResetPassword} token=${token} />`;
  }
  // The mailed verification link, opened where nobody, or a verified
  // person, is signed in: the one who opened it chooses their password.
  if (route.path === 'verify-email' && (!me || me.user.emailVerified)) {
    return html`<${VerifyElsewhere} token=${token} signedInAs=${me && me.user.email} onSignedIn=${signedIn} />`;
  }
  if (!me) {
    const alert = html`<${Alert} error=${failure} what="Whether you are signed in could not be checked" />`;
    switch (route.path) {
      case 'signup':
        return html`${alert}<${SignUp} onSignedIn=${signedIn} />`;
      case 'forgot-password':
        return html`${alert}<${ForgotPassword} />`;
      default:
        return html`${alert}<${SignIn} onSignedIn=${signedIn} />`;
    }
  }
  if (!me.user.emailVerified) {
    return html`<${VerifyEmail} me=${me} token=${route.path === 'verify-email' ? token : ''} onVerified=${signedIn} onSignOut=${signOut} />`;
  }
  return html`<${Shell} me=${me} route=${route} onMe=${setMe} onSignOut=${signOut} />`;
}

render(html`<${App} />`, document.getElementById('app'));
