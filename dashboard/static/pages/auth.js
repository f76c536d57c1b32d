// Getting in: sign up, e-mail verification, sign in, password reset.
import { html, useState, useEffect } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { errorsOf, Field, useForm, FormError } from '../forms.js';

function Centered({ title, children }) {
  return html`<main class="centered">
    <p class="brand"><span class="logo" aria-hidden="true"></span>RelayBell</p>
    <h1>${title}</h1>
    ${children}
  </main>`;
}

export function SignIn({ onSignedIn }) {
  const f = useForm({ email: '', password: '' });
  return html`<${Centered} title="Sign in">
    <form onSubmit=${f.submit(async (v) => onSignedIn(await call('POST', '/auth/login', v)))} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="email" label="Email" type="email" autocomplete="username" value=${f.values.email} onInput=${f.set('email')} error=${f.errors.email} />
      <${Field} id="password" label="Password" type="password" autocomplete="current-password" value=${f.values.password} onInput=${f.set('password')} error=${f.errors.password} />
      <button type="submit" disabled=${f.busy}>Sign in</button>
    </form>
    <p><a href="#/signup">Create an account</a> · <a href="#/forgot-password">Forgot your password?</a> · <a href="#/verify-email">Verify your email</a></p>
  <//>`;
}

export function SignUp({ onSignedIn }) {
  const f = useForm({ name: '', email: '', password: '' });
  return html`<${Centered} title="Create your account">
    <form onSubmit=${f.submit(async (v) => onSignedIn(await call('POST', '/auth/signup', v)))} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="name" label="Name" autocomplete="name" value=${f.values.name} onInput=${f.set('name')} error=${f.errors.name} required=${false} />
      <${Field} id="email" label="Email" type="email" autocomplete="username" value=${f.values.email} onInput=${f.set('email')} error=${f.errors.email} />
      <${Field} id="password" label="Password" type="password" autocomplete="new-password" value=${f.values.password} onInput=${f.set('password')} error=${f.errors.password} hint="At least 8 characters." />
      <button type="submit" disabled=${f.busy}>Create account</button>
    </form>
    <p>Have an account? <a href="#/signin">Sign in</a></p>
  <//>`;
}

// VerifyEmail is the signed-in, unverified person's page. A mailed link
// opened here (token) verifies at once when this session signed up; a
// link of another sign-up (the API refuses it, unspent) goes on as in
// another browser: the person chooses their password.
export function VerifyEmail({ me, token, onVerified, onSignOut }) {
  const f = useForm({ token: token || '' });
  const [sent, setSent] = useState(false);
  const [elsewhere, setElsewhere] = useState(false);
  const verify = async (v) => {
    await call('POST', '/auth/verify-email', { token: v.token.trim() });
    onVerified(await call('GET', '/auth/me'));
  };
  useEffect(() => {
    if (!token) return;
    verify({ token }).catch((err) => {
      if (err instanceof ApiError && err.code === 'invalid_token') setElsewhere(true);
      else f.setErrors(errorsOf(err));
    });
  }, [token]);
  const resend = async () => {
    try {
      await call('POST', '/auth/verify-email/resend');
      setSent(true);
    } catch (err) {
      f.setErrors(errorsOf(err));
    }
  };
  if (elsewhere) {
    return html`<${VerifyElsewhere} token=${token} onSignedIn=${onVerified} />`;
  }
  return html`<${Centered} title="Verify your email">
    <p>We sent a mail to <strong>${me.user.email}</strong> with a link to verify it. The link works in any browser: in this one it verifies the address at once; in another it asks you to choose your password.</p>
    <p>Signed up with this address before? Look for the newest mail: it was sent again, and says how to get in.</p>
    <form onSubmit=${f.submit(verify)} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="token" label="Code" autocomplete="one-time-code" value=${f.values.token} onInput=${f.set('token')} error=${f.errors.token} hint="Or give the code of the mail here." />
      <button type="submit" disabled=${f.busy}>Verify</button>
    </form>
    <p><button type="button" class="link" onClick=${resend}>Send the code again</button>${sent && html` <span role="status">Sent.</span>`}${' · '}<button type="button" class="link" onClick=${() => onSignOut().catch((err) => f.setErrors(errorsOf(err)))}>Sign out</button></p>
  <//>`;
}

// VerifyElsewhere is the mailed link opened in a browser that did not
// sign up (another device, nobody or someone else signed in): the person
// chooses their password, which verifies the address, signs them in here
// and signs out every other session of theirs.
export function VerifyElsewhere({ token, signedInAs, onSignedIn }) {
  const f = useForm({ token: token || '', password: '' });
  const verify = async (v) => onSignedIn(await call('POST', '/auth/verify-email/password', { token: v.token.trim(), password: v.password }));
  return html`<${Centered} title="Choose your password">
    <p>This link verifies your email address. It was opened away from where you signed up, so choose your password here: it verifies the address and signs you in. The password given at sign-up stops working, and every other session of the account is signed out.</p>
    ${signedInAs && html`<p>You are signed in here as <strong>${signedInAs}</strong>; going on signs you in as the person the link was sent to. <a href="#/">Back to the dashboard</a></p>`}
    <form onSubmit=${f.submit(verify)} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="token" label="Code" autocomplete="one-time-code" value=${f.values.token} onInput=${f.set('token')} error=${f.errors.token} />
      <${Field} id="password" label="New password" type="password" autocomplete="new-password" value=${f.values.password} onInput=${f.set('password')} error=${f.errors.password} hint="At least 8 characters." />
      <button type="submit" disabled=${f.busy}>Verify and sign in</button>
    </form>
    <p><a href="#/signin">Sign in</a> · <a href="#/forgot-password">Forgot your password?</a></p>
  <//>`;
}

export function ForgotPassword() {
  const f = useForm({ email: '' });
  const [done, setDone] = useState(false);
  return html`<${Centered} title="Reset your password">
    ${done ? html`<p role="status">If an account has this address, a code to reset its password is on its way.</p>
        <p><a href="#/reset-password">I have the code</a></p>`
      : html`<form onSubmit=${f.submit(async (v) => { await call('POST', '/auth/password/forgot', v); setDone(true); })} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="email" label="Email" type="email" autocomplete="username" value=${f.values.email} onInput=${f.set('email')} error=${f.errors.email} />
      <button type="submit" disabled=${f.busy}>Send the reset code</button>
    </form>`}
    <p><a href="#/signin">Back to sign in</a></p>
  <//>`;
}

export function ResetPassword({ token }) {
  const f = useForm({ token: token || '', password: '' });
  const [done, setDone] = useState(false);
  return html`<${Centered} title="Choose a new password">
    ${done ? html`<p role="status">Your password is changed.</p><p><a href="#/signin">Sign in</a></p>`
      : html`<form onSubmit=${f.submit(async (v) => { await call('POST', '/auth/password/reset', { token: v.token.trim(), password: v.password }); setDone(true); })} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="token" label="Code" autocomplete="one-time-code" value=${f.values.token} onInput=${f.set('token')} error=${f.errors.token} />
      <${Field} id="password" label="New password" type="password" autocomplete="new-password" value=${f.values.password} onInput=${f.set('password')} error=${f.errors.password} hint="At least 8 characters." />
      <button type="submit" disabled=${f.busy}>Set password</button>
    </form>`}
  <//>`;
}
