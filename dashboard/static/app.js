// The RelayBell dashboard. Pages are Preact components in htm templates:
// every value from the API goes in as text, never as markup. This entry
// holds who is signed in; shell.js the signed-in pages, pages/ one module
// a page.
import { html, render, useState, useEffect, useCallback } from './vendor/preact-htm.module.js';
import { call, setProject } from './api.js';
import { go, useRoute } from './router.js';
import { SignIn, SignUp, VerifyEmail, ForgotPassword, ResetPassword } from './pages/auth.js';
import { Shell } from './shell.js';

function App() {
  const route = useRoute();
  const [me, setMe] = useState(undefined); // undefined: loading; null: signed out
  useEffect(() => {
    call('GET', '/auth/me').then(setMe).catch(() => setMe(null));
  }, []);
  const signedIn = useCallback((answer) => {
    setMe(answer);
    go('');
  }, []);
  const signOut = useCallback(async () => {
    try {
      await call('POST', '/auth/logout');
    } finally {
      setProject(null);
      setMe(null);
      go('signin');
    }
  }, []);
  if (me === undefined) {
    return html`<p class="loading" role="status">Loading RelayBell…</p>`;
  }
  const token = route.query.get('token') || '';
  if (route.path === 'reset-password') {
    return html`<${ResetPassword} token=${token} />`;
  }
  if (!me) {
    switch (route.path) {
      case 'signup':
        return html`<${SignUp} onSignedIn=${signedIn} />`;
      case 'forgot-password':
        return html`<${ForgotPassword} />`;
      default:
        return html`<${SignIn} onSignedIn=${signedIn} />`;
    }
  }
  if (!me.user.emailVerified) {
    return html`<${VerifyEmail} me=${me} token=${route.path === 'verify-email' ? token : ''} onVerified=${signedIn} onSignOut=${signOut} />`;
  }
  return html`<${Shell} me=${me} route=${route} onMe=${setMe} onSignOut=${signOut} />`;
}

render(html`<${App} />`, document.getElementById('app'));
