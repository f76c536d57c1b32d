// The RelayBell dashboard. Pages are Preact components in htm templates:
// every value from the API goes in as text, never as markup.
import { html, render, useState, useEffect, useCallback, useRef } from './vendor/preact-htm.module.js';
import { call, setProject, ApiError } from './api.js';

// ---- routing: the URL's fragment, /#/page?query ----

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  return { path: path || '', query: new URLSearchParams(query || '') };
}

function go(path) {
  location.hash = '#/' + path;
}

function useRoute() {
  const [route, setRoute] = useState(parseRoute());
  useEffect(() => {
    const on = () => setRoute(parseRoute());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

// ---- formatting: the browser's locale, the website's time zone ----

const numbers = new Intl.NumberFormat();

function formatTime(iso, timeZone) {
  if (!iso) {
    return '';
  }
  const opts = { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit',
    timeZone: timeZone || 'UTC', timeZoneName: 'short' };
  try {
    return new Intl.DateTimeFormat(undefined, opts).format(new Date(iso));
  } catch (e) {
    return new Intl.DateTimeFormat(undefined, { ...opts, timeZone: 'UTC' }).format(new Date(iso));
  }
}

// zonedToUTC reads a datetime-local value ("2026-03-01T09:30") as a wall
// clock time in timeZone and returns the moment, as an ISO string.
function zonedToUTC(local, timeZone) {
  const [d, t] = local.split('T');
  const [y, mo, da] = d.split('-').map(Number);
  const [h, mi] = (t || '0:0').split(':').map(Number);
  const wall = Date.UTC(y, mo - 1, da, h, mi);
  const offset = (at) => {
    const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric',
      day: 'numeric', hour: 'numeric', minute: 'numeric' }).formatToParts(new Date(at)).map((p) => [p.type, p.value]));
    return Date.UTC(+parts.year, +parts.month - 1, +parts.day, +parts.hour, +parts.minute) - at;
  };
  let at = wall - offset(wall);
  at = wall - offset(at); // once more, across a change of offset
  return new Date(at).toISOString();
}

// zonedLocal is the moment iso as a datetime-local value on timeZone's
// wall clock (the inverse of zonedToUTC).
function zonedLocal(iso, timeZone) {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit',
    day: '2-digit', hour: '2-digit', minute: '2-digit' }).formatToParts(new Date(iso)).map((p) => [p.type, p.value]));
  return parts.year + '-' + parts.month + '-' + parts.day + 'T' + parts.hour + ':' + parts.minute;
}

// ---- forms: every control labelled, every API error next to its field ----

// fieldOf is the form field an error code concerns ('form' for the whole).
const fieldOf = {
  invalid_email: 'email', invalid_password: 'password', invalid_name: 'name', wrong_password: 'password',
  invalid_token: 'token', invalid_url: 'url', name_required: 'name', invalid_tz: 'timezone',
};

function errorsOf(e) {
  if (e instanceof ApiError) {
    return { [fieldOf[e.code] || 'form']: e.message };
  }
  return { form: 'The server could not be reached. Try again.' };
}

// actions makes the handlers of a page's buttons that change something:
// act(method, path, body, ask) asks ask first (when given), makes the
// call, then runs done (the page reloads its data); an error goes to fail.
function actions(done, fail) {
  return (method, path, body, ask) => async () => {
    if (ask && !window.confirm(ask)) return;
    try {
      await call(method, path, body);
      done();
    } catch (err) {
      fail(err);
    }
  };
}

// messageOf is an error as one sentence, for a page without fields.
function messageOf(err) {
  return errorsOf(err).form || err.message;
}

function Field({ id, label, type = 'text', value, onInput, error, autocomplete, required = true, hint }) {
  const described = [error ? id + '-error' : null, hint ? id + '-hint' : null].filter(Boolean).join(' ') || undefined;
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <input id=${id} name=${id} type=${type} value=${value} required=${required} autocomplete=${autocomplete}
      aria-invalid=${error ? 'true' : undefined} aria-describedby=${described}
      onInput=${(e) => onInput(e.currentTarget.value)} />
    ${hint && html`<p class="hint" id=${id + '-hint'}>${hint}</p>`}
    ${error && html`<p class="error" id=${id + '-error'}>${error}</p>`}
  </div>`;
}

// useForm holds a form's values, its errors and whether it is sending.
function useForm(initial) {
  const [values, setValues] = useState(initial);
  const [errors, setErrors] = useState({});
  const [busy, setBusy] = useState(false);
  const set = (name) => (v) => {
    setValues((old) => ({ ...old, [name]: v }));
    setErrors((old) => (old[name] ? { ...old, [name]: undefined } : old));
  };
  const submit = (action, mapErr = errorsOf) => async (e) => {
    e.preventDefault();
    if (busy) {
      return;
    }
    setBusy(true);
    setErrors({});
    try {
      await action(values);
    } catch (err) {
      setErrors(mapErr(err));
    } finally {
      setBusy(false);
    }
  };
  return { values, errors, busy, set, submit, setErrors, setValues };
}

// Disclosure is a button that shows or hides what it names (a native
// details element has no role to find it by, nor a state to announce).
let disclosures = 0;
function Disclosure({ label, open = false, className, children }) {
  const [shown, setShown] = useState(open);
  const [id] = useState(() => 'disclosure-' + ++disclosures);
  return html`<div class=${'disclosure ' + (className || '')}>
    <button type="button" class="link" aria-expanded=${shown ? 'true' : 'false'} aria-controls=${id} onClick=${() => setShown(!shown)}><span class="caret" aria-hidden="true">${shown ? '▾' : '▸'}</span>${label}</button>
    <div id=${id} hidden=${!shown}>${children}</div>
  </div>`;
}

function FormError({ errors }) {
  return errors.form ? html`<p class="error" role="alert">${errors.form}</p>` : null;
}

// ---- signing in ----

function Centered({ title, children }) {
  return html`<main class="centered">
    <p class="brand"><span class="logo" aria-hidden="true"></span>RelayBell</p>
    <h1>${title}</h1>
    ${children}
  </main>`;
}

function SignIn({ onSignedIn }) {
  const f = useForm({ email: '', password: '' });
  return html`<${Centered} title="Sign in">
    <form onSubmit=${f.submit(async (v) => onSignedIn(await call('POST', '/auth/login', v)))} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="email" label="Email" type="email" autocomplete="username" value=${f.values.email} onInput=${f.set('email')} error=${f.errors.email} />
      <${Field} id="password" label="Password" type="password" autocomplete="current-password" value=${f.values.password} onInput=${f.set('password')} error=${f.errors.password} />
      <button type="submit" disabled=${f.busy}>Sign in</button>
    </form>
    <p><a href="#/signup">Create an account</a> · <a href="#/forgot-password">Forgot your password?</a></p>
  <//>`;
}

function SignUp({ onSignedIn }) {
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

function VerifyEmail({ me, token, onVerified, onSignOut }) {
  const f = useForm({ token: token || '' });
  const [sent, setSent] = useState(false);
  const verify = async (v) => {
    await call('POST', '/auth/verify-email', { token: v.token.trim() });
    onVerified(await call('GET', '/auth/me'));
  };
  const resend = async () => {
    try {
      await call('POST', '/auth/verify-email/resend');
      setSent(true);
    } catch (err) {
      f.setErrors(errorsOf(err));
    }
  };
  return html`<${Centered} title="Verify your email">
    <p>We sent a code to <strong>${me.user.email}</strong>. Give it here, in the browser you signed up with.</p>
    <form onSubmit=${f.submit(verify)} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="token" label="Code" autocomplete="one-time-code" value=${f.values.token} onInput=${f.set('token')} error=${f.errors.token} />
      <button type="submit" disabled=${f.busy}>Verify</button>
    </form>
    <p><button type="button" class="link" onClick=${resend}>Send the code again</button>
      ${sent && html` <span role="status">Sent.</span>`}
      · <button type="button" class="link" onClick=${onSignOut}>Sign out</button></p>
  <//>`;
}

function ForgotPassword() {
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

function ResetPassword({ token }) {
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

// ---- websites ----

function timeZones() {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch (e) {
    return ['UTC'];
  }
}

function AddWebsite({ onAdded, first }) {
  const here = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  const f = useForm({ name: '', url: '', timezone: here });
  const add = async (v) => {
    const answer = await call('POST', '/websites', v);
    onAdded(answer.website);
  };
  return html`<section>
    <h1>${first ? 'Add your first website' : 'Add a website'}</h1>
    <form onSubmit=${f.submit(add)} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="name" label="Website name" value=${f.values.name} onInput=${f.set('name')} error=${f.errors.name} />
      <${Field} id="url" label="Website address" type="url" value=${f.values.url} onInput=${f.set('url')} error=${f.errors.url} hint="For example https://shop.example" />
      <div class="field">
        <label for="timezone">Time zone</label>
        <select id="timezone" value=${f.values.timezone} onChange=${(e) => f.set('timezone')(e.currentTarget.value)}>
          ${timeZones().map((z) => html`<option value=${z}>${z}</option>`)}
        </select>
        ${f.errors.timezone && html`<p class="error">${f.errors.timezone}</p>`}
      </div>
      <button type="submit" disabled=${f.busy}>Add website</button>
    </form>
  </section>`;
}

// loadSDK loads the browser SDK of a website into this page, once; the
// dashboard's root worker (/relaybell-sw.js) serves that website.
function loadSDK(projectId) {
  if (window.RelayBell) {
    return window.__relaybellProject === projectId ? Promise.resolve(window.RelayBell)
      : Promise.reject(new Error('This page already subscribed for another website: reload it first.'));
  }
  window.__relaybellProject = projectId;
  return new Promise((resolve, reject) => {
    const tag = document.createElement('script');
    tag.src = '/api/v1/projects/' + projectId + '/sdk.js';
    tag.dataset.prompt = 'manual';
    tag.dataset.worker = '/relaybell-sw.js?project=' + projectId;
    tag.onload = () => resolve(window.RelayBell);
    tag.onerror = () => reject(new Error('The SDK did not load.'));
    document.head.appendChild(tag);
  });
}

// browserName is a name for this browser as a test device.
function browserName(me) {
  const ua = navigator.userAgent;
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrom(e|ium)\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'Browser';
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : '';
  return ((me.user.name || me.user.email) + ': ' + browser + (os ? ' on ' + os : '')).slice(0, 60);
}

// TryHere subscribes this browser to the website, makes it a test device
// and sends it a test notification.
function TryHere({ site, me, onAdded }) {
  const [state, setState] = useState({ step: 'start' });
  const subscribe = async () => {
    setState({ step: 'busy' });
    try {
      const sdk = await loadSDK(site.projectId);
      const ids = await sdk.subscribe();
      if (!ids) {
        setState({ step: 'start', error: 'Notifications are blocked for this page: allow them in the browser first.' });
        return;
      }
      await call('POST', '/test-devices', { endpointId: ids.endpointId, name: browserName(me) });
      setState({ step: 'subscribed' });
      onAdded();
    } catch (err) {
      setState({ step: 'start', error: err.message });
    }
  };
  const send = async () => {
    setState({ step: 'sending' });
    try {
      const a = await call('POST', '/test-devices/send', { title: 'Hello from RelayBell', body: 'Your first notification reached this browser.' });
      setState({ step: 'sent', id: a.notificationId });
    } catch (err) {
      setState({ step: 'subscribed', error: err.message });
    }
  };
  return html`<section aria-labelledby="try-title">
    <h2 id="try-title">Try it in this browser</h2>
    <p>Subscribes this browser to ${site.name} as one of its test devices, then sends it a test notification.</p>
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
    <div class="actions">
      <button type="button" onClick=${subscribe} disabled=${state.step !== 'start'}>Subscribe this browser</button>
      <button type="button" onClick=${send} disabled=${state.step !== 'subscribed' && state.step !== 'sent'}>Send a test notification</button>
    </div>
    ${state.step === 'subscribed' && html`<p role="status">Subscribed.</p>`}
    ${state.step === 'sent' && html`<p role="status">Sent. <a href=${'#/notifications/' + state.id}>Watch it go</a>.</p>`}
  </section>`;
}

// TestDevices lists the browsers that get the website's test sends.
function TestDevices({ site, version }) {
  const canChange = site.role !== 'viewer';
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  const load = () => call('GET', '/test-devices').then((a) => { setList(a.testDevices); setError(null); }, (err) => setError(messageOf(err)));
  useEffect(() => { load(); }, [site.projectId, version]);
  const act = actions(load, (err) => setError(messageOf(err)));
  return html`<section aria-labelledby="devices-title">
    <h2 id="devices-title">Test devices</h2>
    <p>Test sends from the composer go to these browsers only, at most 120 an hour.</p>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${list && list.length === 0 && html`<p>No test devices yet: subscribe this browser above.</p>`}
    ${list && list.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Test devices</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Device</th><th scope="col">Person</th><th scope="col">Last seen</th>
        ${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${list.map((d) => html`<tr><td>${d.name}</td><td>${d.device}</td><td>${d.externalId || '—'}</td>
        <td>${formatTime(d.last_seen_at, site.timezone)}</td>
        ${canChange && html`<td><button type="button" class="secondary" aria-label=${'Remove test device ' + d.name} onClick=${act('DELETE', '/test-devices/' + encodeURIComponent(d.id))}>Remove</button></td>`}</tr>`)}</tbody>
    </table></div>`}
  </section>`;
}

function Install({ site, me }) {
  const [version, setVersion] = useState(0);
  const base = location.origin + '/api/v1/projects/' + site.projectId;
  const snippet = '<script src="' + base + '/sdk.js" async></script>';
  const worker = "importScripts('" + base + "/sw.js');";
  const Code = ({ id, label, value, hint }) => html`<div class="field">
    <label for=${id}>${label}</label>
    <textarea id=${id} readonly rows=${Math.min(3, Math.ceil(value.length / 70))} aria-describedby=${id + '-hint'} value=${value}></textarea>
    <p class="hint" id=${id + '-hint'}>${hint}</p>
  </div>`;
  return html`<section>
    <h1>Install on ${site.name}</h1>
    <p>Three steps put the subscribe prompt on <span class="url">${site.url}</span>.</p>
    <${Code} id="snippet" label="Script tag" value=${snippet} hint="Put it in the <head> of every page." />
    <${Code} id="worker" label="Service worker file" value=${worker} hint="Serve this one line at /relaybell-sw.js on your website." />
    <${Code} id="vapid" label="VAPID public key" value=${site.vapidPublicKey} hint="The SDK fetches it itself; here for other clients." />
    ${site.role !== 'viewer' && html`<${TryHere} site=${site} me=${me} onAdded=${() => setVersion(version + 1)} />`}
    <${TestDevices} site=${site} version=${version} />
  </section>`;
}

const periods = [['7', 'last 7 days'], ['30', 'last 30 days'], ['90', 'last 90 days'], ['365', 'last 12 months']];

// dayOf is the day (YYYY-MM-DD) of the moment iso in timeZone.
function dayOf(iso, timeZone) {
  try {
    return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(iso));
  } catch (e) {
    return iso.slice(0, 10);
  }
}

const shortDay = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });

// DailyChart draws one value a day as bars, or as a line for a level such
// as subscribers (SVG, no library). Its accessible name says what it
// shows; the table under the charts holds the numbers.
function DailyChart({ label, days, value, period, line, summary }) {
  const top = Math.max(1, ...days.map(value));
  const w = 100 / Math.max(1, days.length);
  const y = (d) => 40 - (38 * value(d)) / top;
  const total = days.reduce((n, d) => n + value(d), 0);
  const name = summary || label + ' a day over the ' + period + ', ' + numbers.format(total) + ' in all';
  return html`<figure class="chart">
    <figcaption>${label}: ${line ? numbers.format(days.length ? value(days[days.length - 1]) : 0) : numbers.format(total)}</figcaption>
    <svg viewBox="0 0 100 40" preserveAspectRatio="none" role="img" aria-label=${name}>
      ${line ? html`<polyline points=${days.map((d, i) => (i * w + w / 2) + ',' + y(d)).join(' ')} />`
        : days.map((d, i) => html`<rect x=${i * w + w * 0.1} width=${w * 0.8} y=${y(d)} height=${40 - y(d)}><title>${d.date}: ${numbers.format(value(d))}</title></rect>`)}
    </svg>
    ${days.length > 0 && html`<p class="axis"><span>${shortDay.format(new Date(days[0].date))}</span><span>${shortDay.format(new Date(days[days.length - 1].date))}</span></p>`}
  </figure>`;
}

function Home({ site }) {
  const [period, setPeriod] = useState('30');
  const [state, setState] = useState({ loading: true });
  useEffect(() => {
    let live = true;
    setState((old) => ({ ...old, loading: true, error: null }));
    const to = dayOf(new Date().toISOString(), site.timezone);
    const first = new Date(to + 'T00:00:00Z'); // calendar days: a day of 23 or 25 hours is one day
    first.setUTCDate(first.getUTCDate() - (Number(period) - 1));
    const from = first.toISOString().slice(0, 10);
    Promise.all([call('GET', '/stats?from=' + from + '&to=' + to), call('GET', '/notifications?limit=10')])
      .then(([stats, latest]) => live && setState({ stats, items: latest.items }))
      .catch((err) => live && setState({ error: messageOf(err) }));
    return () => { live = false; };
  }, [site.projectId, period]);
  const st = state.stats;
  const name = periods.find((p) => p[0] === period)[1];
  return html`<section>
    <h1>${site.name}</h1>
    <div class="field inline"><label for="period">Period</label>
      <select id="period" value=${period} onChange=${(e) => setPeriod(e.currentTarget.value)}>
        ${periods.map(([v, l]) => html`<option value=${v}>${l[0].toUpperCase() + l.slice(1)}</option>`)}</select></div>
    ${state.loading && html`<p role="status">Loading…</p>`}
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
    ${st && html`<dl class="tiles">
      <div><dt>Subscribers</dt><dd>${numbers.format(st.totals.subscribers)}</dd></div>
      <div><dt>New subscribers</dt><dd>${numbers.format(st.totals.newSubscribers)}</dd></div>
      <div><dt>Sends</dt><dd>${numbers.format(st.totals.notifications)}</dd></div>
      <div><dt>Clicks</dt><dd>${numbers.format(st.totals.clicked)}</dd></div>
      <div><dt>CTR</dt><dd>${numbers.format(st.totals.ctr)} %</dd></div>
    </dl>
    <p class="hint">Over the ${name}, days in ${st.timezone}.</p>
    <div class="charts">
      <${DailyChart} label="Subscribers" days=${st.days} value=${(d) => d.subscribers} period=${name} line
        summary=${'Subscribers at the end of each day over the ' + name + ', ' + numbers.format(st.totals.subscribers) + ' now'} />
      <${DailyChart} label="New subscribers" days=${st.days} value=${(d) => d.newSubscribers} period=${name} />
      <${DailyChart} label="Pushes sent" days=${st.days} value=${(d) => d.sent} period=${name} />
      <${DailyChart} label="Clicks" days=${st.days} value=${(d) => d.clicked} period=${name} />
    </div>
    <${Disclosure} label="Numbers by day">
      <div class="scroll"><table>
        <caption class="visually-hidden">Numbers by day</caption>
        <thead><tr><th scope="col">Day</th><th scope="col">Subscribers</th><th scope="col">New</th><th scope="col">Unsubscribed</th>
          <th scope="col">Sends</th><th scope="col">Sent</th><th scope="col">Clicked</th><th scope="col">CTR</th></tr></thead>
        <tbody>${st.days.slice().reverse().map((d) => html`<tr><th scope="row">${shortDay.format(new Date(d.date))}</th>
          ${[d.subscribers, d.newSubscribers, d.unsubscribed, d.notifications, d.sent, d.clicked].map((x) => html`<td class="num">${numbers.format(x)}</td>`)}
          <td class="num">${numbers.format(d.ctr)} %</td></tr>`)}</tbody>
      </table></div>
    <//>`}
    <h2>Latest sends</h2>
    ${state.items && state.items.length === 0 && html`<p>Nothing sent yet. <a href="#/install">Install RelayBell on your website</a> to get subscribers.</p>`}
    ${state.items && state.items.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Latest sends</caption>
      <thead><tr><th scope="col">Title</th><th scope="col">Status</th><th scope="col">Sent</th><th scope="col">Clicked</th><th scope="col">CTR</th><th scope="col">Created</th></tr></thead>
      <tbody>${state.items.map((n) => html`<tr>
        <td><a href=${'#/notifications/' + n.id}>${n.title}</a></td><td>${n.status}</td><td class="num">${numbers.format(n.sent)}</td>
        <td class="num">${numbers.format(n.clicked)}</td><td class="num">${numbers.format(n.ctr)} %</td>
        <td>${formatTime(n.created_at, site.timezone)}</td></tr>`)}</tbody>
    </table></div>`}
  </section>`;
}

// ---- notifications ----

const statuses = ['draft', 'scheduled', 'queued', 'held_for_review', 'sending', 'sent', 'failed', 'canceled'];

// listQuery is the list's query string for the applied filters.
function listQuery(f, cursor) {
  const p = new URLSearchParams();
  if (f.status) p.append('status', f.status);
  if (f.q.trim()) p.set('q', f.q.trim());
  if (f.from) p.set('from', f.from);
  if (f.to) p.set('to', f.to);
  if (cursor) p.set('cursor', cursor);
  return p.toString();
}

function Notifications({ site, status = '' }) {
  const blank = { status, q: '', from: '', to: '' };
  const [filters, setFilters] = useState(blank);
  const [applied, setApplied] = useState(blank);
  const [list, setList] = useState({ items: [], next: null, loading: true });
  const [errors, setErrors] = useState({});
  const load = async (cursor) => {
    setList((old) => ({ ...old, loading: true }));
    try {
      const answer = await call('GET', '/notifications?' + listQuery(applied, cursor));
      setErrors({});
      setList((old) => ({ items: cursor ? old.items.concat(answer.items) : answer.items, next: answer.nextCursor, loading: false }));
    } catch (err) {
      const e = err instanceof ApiError && err.code === 'invalid_range' ? { from: err.message }
        : err instanceof ApiError && err.code === 'invalid_status' ? { status: err.message } : errorsOf(err);
      setErrors(e);
      setList({ items: [], next: null, loading: false });
    }
  };
  useEffect(() => { load(null); }, [site.projectId, applied]);
  const set = (name) => (e) => setFilters({ ...filters, [name]: e.currentTarget.value });
  const exportHref = '/api/v1/notifications/export.csv?' + listQuery(applied) + '&projectId=' + encodeURIComponent(site.projectId);
  return html`<section>
    <h1>Notifications</h1>
    <form class="filters" role="search" onSubmit=${(e) => { e.preventDefault(); setApplied(filters); }}>
      <div class="field"><label for="q">Search</label>
        <input id="q" type="search" value=${filters.q} onInput=${set('q')} /></div>
      <div class="field"><label for="status">Status</label>
        <select id="status" value=${filters.status} onChange=${set('status')} aria-invalid=${errors.status ? 'true' : undefined}>
          <option value="">Any but drafts</option>
          ${statuses.map((s) => html`<option value=${s}>${s.replace(/_/g, ' ')}</option>`)}
        </select>
        ${errors.status && html`<p class="error">${errors.status}</p>`}</div>
      <div class="field"><label for="from">From</label>
        <input id="from" type="date" value=${filters.from} onInput=${set('from')} aria-invalid=${errors.from ? 'true' : undefined}
          aria-describedby=${errors.from ? 'from-error' : undefined} />
        ${errors.from && html`<p class="error" id="from-error">${errors.from}</p>`}</div>
      <div class="field"><label for="to">To</label>
        <input id="to" type="date" value=${filters.to} onInput=${set('to')} /></div>
      <div class="actions"><button type="submit">Filter</button>
        <a class="button secondary" href=${exportHref} download>Export CSV</a></div>
    </form>
    <${FormError} errors=${errors} />
    ${!list.loading && list.items.length === 0 && !errors.form && html`<p>No sends match.</p>`}
    ${list.items.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Notifications</caption>
      <thead><tr><th scope="col">Title</th><th scope="col">Status</th><th scope="col">Audience</th><th scope="col">Sent</th>
        <th scope="col">Clicked</th><th scope="col">CTR</th><th scope="col">Created</th></tr></thead>
      <tbody>${list.items.map((n) => html`<tr>
        <td><a href=${'#/notifications/' + n.id}>${n.title}</a></td><td>${n.status.replace(/_/g, ' ')}</td>
        <td>${n.targetSummary}</td><td class="num">${numbers.format(n.sent)}</td><td class="num">${numbers.format(n.clicked)}</td>
        <td class="num">${numbers.format(n.ctr)} %</td><td>${formatTime(n.created_at, site.timezone)}</td></tr>`)}</tbody>
    </table></div>`}
    ${list.loading && html`<p role="status">Loading…</p>`}
    ${list.next && !list.loading && html`<button type="button" onClick=${() => load(list.next)}>Load more</button>`}
  </section>`;
}

// Breakdown is a table of a send's counts by one dimension, with bars of
// its first count drawn against the largest.
function Breakdown({ title, rows, columns }) {
  const measure = columns[1][0];
  const top = Math.max(1, ...rows.map((r) => r[measure]));
  return html`<h2>${title}</h2>
    ${rows.length === 0 ? html`<p>None yet.</p>` : html`<div class="scroll"><table class="breakdown">
      <caption class="visually-hidden">${title}</caption>
      <thead><tr>${columns.map((c) => html`<th scope="col">${c[1]}</th>`)}<th scope="col"><span class="visually-hidden">${columns[1][1] + ' chart'}</span></th></tr></thead>
      <tbody>${rows.map((r) => html`<tr>${columns.map((c) => html`<td class=${typeof r[c[0]] === 'number' ? 'num' : undefined}>
        ${typeof r[c[0]] === 'number' ? numbers.format(r[c[0]]) : r[c[0]]}</td>`)}
        <td class="bar-cell" aria-hidden="true"><span class="bar" style=${{ width: Math.round(100 * r[measure] / top) + '%' }}></span></td></tr>`)}</tbody>
    </table></div>`}`;
}

function NotificationDetail({ site, id }) {
  const [d, setD] = useState(null);
  const [error, setError] = useState(null);
  const load = () => call('GET', '/notifications/' + encodeURIComponent(id)).then(setD, (err) => setError(messageOf(err)));
  useEffect(() => { setD(null); setError(null); load(); }, [id, site.projectId]);
  if (error) {
    return html`<section><h1>Notification</h1><p class="error" role="alert">${error}</p></section>`;
  }
  if (!d) {
    return html`<p role="status">Loading…</p>`;
  }
  const n = d.notification;
  const money = d.currency ? new Intl.NumberFormat(undefined, { style: 'currency', currency: d.currency }) : numbers;
  const steps = [['recipients', 'Recipients'], ['sent', 'Sent'], ['delivered', 'Delivered'], ['clicked', 'Clicked'], ['converted', 'Converted']];
  const top = Math.max(1, d.funnel.recipients, d.funnel.sent);
  const fail = (err) => setError(messageOf(err));
  const path = '/notifications/' + encodeURIComponent(id);
  const cancel = actions(load, fail)('POST', path + '/cancel', undefined, 'Cancel this send? It will not go out.');
  const removeDraft = actions(() => go('notifications?status=draft'), fail)('DELETE', path, undefined, 'Delete this draft?');
  return html`<section>
    <p><a href="#/notifications">All notifications</a></p>
    <h1>${n.title}</h1>
    ${n.body && html`<p>${n.body}</p>`}
    <dl class="facts">
      <dt>Status</dt><dd>${n.status.replace(/_/g, ' ')}${n.error ? ' (' + n.error + ')' : ''}</dd>
      <dt>Audience</dt><dd>${n.targetSummary}</dd>
      <dt>Created</dt><dd>${formatTime(n.created_at, site.timezone)}</dd>
      ${n.scheduled_at && html`<dt>Scheduled</dt><dd>${formatTime(n.scheduled_at, site.timezone)}</dd>`}
      ${n.local_time && html`<dt>Timing</dt><dd>${n.local_time === 'smart' ? 'Each subscriber’s most active hour' : n.local_time + ' in each subscriber’s time zone'}</dd>`}
      ${n.ab_test && n.ab_test.autoWinner && html`<dt>A/B test</dt><dd>${'Test group ' + numbers.format(n.ab_test.testPercent) + ' %, winner after ' + numbers.format(n.ab_test.afterHours) + ' h'}</dd>`}
      ${n.translations && Object.keys(n.translations).length > 0 && html`<dt>Translations</dt><dd>${Object.keys(n.translations).join(', ')}</dd>`}
      <dt>Revenue</dt><dd>${money.format(d.revenue)}</dd>
      <dt>Conversions</dt><dd>${numbers.format(n.conversions)} (${numbers.format(d.conversionsBy.clickThrough)} after a click, ${numbers.format(d.conversionsBy.influenced)} influenced)</dd>
    </dl>
    ${site.role !== 'viewer' && html`<p class="actions">
      ${(n.status === 'scheduled' || n.status === 'held_for_review') && html`<button type="button" onClick=${cancel}>Cancel send</button>`}
      ${n.status === 'draft' && representable(d.sendBody) && html`<a class="button" href=${'#/compose/' + n.id}>Edit draft</a>`}
      ${n.status === 'draft' && html`<button type="button" class="secondary" onClick=${removeDraft}>Delete draft</button>`}
      ${d.sendBody && representable(d.sendBody) && html`<button type="button" class="secondary" onClick=${() => duplicate(d.sendBody)}>Duplicate</button>`}
      ${d.sendBody && !representable(d.sendBody) && html`<span class="hint">Its audience combines choices the composer cannot show, so it is not opened there.</span>`}
    </p>`}
    <h2>Funnel</h2>
    <table class="funnel"><caption class="visually-hidden">Funnel</caption>
      <tbody>${steps.map(([k, label]) => html`<tr><th scope="row">${label}</th><td class="num">${numbers.format(d.funnel[k])}</td>
        <td class="bar-cell"><span class="bar" style=${{ width: Math.round(100 * d.funnel[k] / top) + '%' }}></span></td></tr>`)}</tbody>
    </table>
    <${Breakdown} title="Devices" rows=${d.devices} columns=${[['device', 'Device'], ['sent', 'Sent'], ['clicked', 'Clicked']]} />
    ${n.ab && html`<${Breakdown} title="Variants" rows=${d.variants} columns=${[['variant', 'Variant'], ['sent', 'Sent'], ['clicked', 'Clicked'], ['ctr', 'CTR %']]} />`}
    <${Breakdown} title="Languages" rows=${d.languages} columns=${[['language', 'Language'], ['sent', 'Sent'], ['clicked', 'Clicked']]} />
    <${Breakdown} title="Errors" rows=${d.errors} columns=${[['code', 'Answer'], ['count', 'Count']]} />
  </section>`;
}

// ---- audience ----

function Audience({ site }) {
  const canChange = site.role !== 'viewer';
  const blank = { q: '', status: 'all', country: '', device: '', language: '', topic: '', tag: '', tagValue: '',
    joinedFrom: '', joinedTo: '', seenFrom: '', seenTo: '', rules: builderFilters(null) };
  const [filters, setFilters] = useState(blank);
  const [applied, setApplied] = useState(blank);
  const [facets, setFacets] = useState(null);
  const [list, setList] = useState({ items: [], next: null, total: null, loading: true });
  const [picked, setPicked] = useState([]);
  const [errors, setErrors] = useState({});
  const [label, setLabel] = useState({ key: '', value: '' });
  const [done, setDone] = useState('');
  const query = (cursor) => {
    const p = new URLSearchParams({ count: '1' });
    if (applied.q.trim()) p.set('q', applied.q.trim());
    if (applied.status !== 'all') p.set('status', applied.status);
    if (applied.country) p.set('country', applied.country);
    if (applied.device) p.set('device', applied.device);
    if (applied.language) p.set('language', applied.language);
    if (applied.topic) p.set('topic', applied.topic);
    if (applied.tag) p.set('tag', applied.tag + (applied.tagValue ? ':' + applied.tagValue : ''));
    for (const k of ['joinedFrom', 'joinedTo', 'seenFrom', 'seenTo']) if (applied[k]) p.set(k, applied[k]);
    if (['joinedFrom', 'joinedTo', 'seenFrom', 'seenTo'].some((k) => applied[k])) p.set('tz', site.timezone);
    const rules = apiFilters({ ...applied.rules, rules: applied.rules.rules.filter((r) => !ruleBlank(r)) }); // checked on submit
    if (rules.rules.length) p.set('filters', JSON.stringify(rules));
    if (cursor) p.set('cursor', cursor);
    return p.toString();
  };
  const load = async (cursor) => {
    setList((old) => ({ ...old, loading: true }));
    try {
      const a = await call('GET', '/audience/subscribers?' + query(cursor));
      setList((old) => ({ items: cursor ? old.items.concat(a.items) : a.items, next: a.nextCursor, total: a.total, loading: false }));
      if (!cursor) setPicked([]);
    } catch (err) {
      const at = { invalid_range: 'joinedFrom', invalid_filters: 'rules' };
      setErrors(err instanceof ApiError && at[err.code] ? { [at[err.code]]: err.message } : errorsOf(err));
      setList({ items: [], next: null, total: null, loading: false });
    }
  };
  useEffect(() => { setErrors({}); load(null); }, [site.projectId, applied]);
  useEffect(() => { call('GET', '/audience/subscribers/facets').then(setFacets, () => {}); }, [site.projectId]);
  const set = (name) => (e) => setFilters({ ...filters, [name]: e.currentTarget.value });
  const pick = (id) => setPicked(picked.includes(id) ? picked.filter((x) => x !== id) : [...picked, id]);
  const bulk = async (path, body, what) => {
    setErrors({});
    try {
      await call('POST', path, { ids: picked, ...body });
      setDone(what);
      load(null);
    } catch (err) {
      setErrors(errorsOf(err));
    }
  };
  const tag = (e) => {
    e.preventDefault();
    if (!label.key.trim()) {
      setErrors({ label: 'Give the label a name.' });
      return;
    }
    bulk('/audience/subscribers/bulk-tag', { set: { [label.key.trim()]: label.value } }, 'Labelled.');
  };
  const erase = () => {
    if (window.confirm('Delete ' + numbers.format(picked.length) + ' people and everything about them? This cannot be undone.')) {
      bulk('/audience/subscribers/bulk-delete', {}, 'Deleted.');
    }
  };
  const facetOptions = (name) => (facets && facets[name] ? facets[name] : []).map((x) => html`<option value=${x.value}>${x.value} (${numbers.format(x.count)})</option>`);
  const tagFacet = facets && (facets.tags || []).find((x) => x.key === filters.tag);
  const date = (id, text) => html`<div class="field"><label for=${'people-' + id}>${text}</label>
    <input id=${'people-' + id} type="date" value=${filters[id]} onInput=${set(id)} aria-invalid=${id === 'joinedFrom' && errors.joinedFrom ? 'true' : undefined}
      aria-describedby=${id === 'joinedFrom' && errors.joinedFrom ? 'people-joinedFrom-error' : undefined} />
    ${id === 'joinedFrom' && errors.joinedFrom && html`<p class="error" id="people-joinedFrom-error">${errors.joinedFrom}</p>`}</div>`;
  return html`<section>
    <h1>Audience</h1>
    <form class="filters" role="search" onSubmit=${(e) => {
      e.preventDefault();
      const started = { ...filters.rules, rules: filters.rules.rules.filter((r) => !ruleBlank(r)) };
      const bad = started.rules.length > 0 && ruleError(started);
      if (bad) setErrors({ rules: bad });
      else setApplied(filters);
    }}>
      <div class="field"><label for="people-q">Search people</label>
        <input id="people-q" type="search" value=${filters.q} onInput=${set('q')} /></div>
      <div class="field"><label for="people-status">Status</label>
        <select id="people-status" value=${filters.status} onChange=${set('status')}>
          ${['all', 'subscribed', 'unsubscribed', 'no_device'].map((x) => html`<option value=${x}>${x.replace('_', ' ')}</option>`)}</select></div>
      <div class="field"><label for="people-country">Country</label>
        <select id="people-country" value=${filters.country} onChange=${set('country')}><option value="">Any</option>${facetOptions('countries')}</select></div>
      <div class="field"><label for="people-device">Device</label>
        <select id="people-device" value=${filters.device} onChange=${set('device')}><option value="">Any</option>${facetOptions('devices')}</select></div>
      <div class="field"><label for="people-language">Language</label>
        <select id="people-language" value=${filters.language} onChange=${set('language')}><option value="">Any</option>${facetOptions('languages')}</select></div>
      <div class="field"><label for="people-topic">Topic</label>
        <select id="people-topic" value=${filters.topic} onChange=${set('topic')}><option value="">Any</option>
          ${(facets ? facets.topics || [] : []).map((x) => html`<option value=${x.slug}>${x.name} (${numbers.format(x.count)})</option>`)}</select></div>
      <div class="field"><label for="people-tag">Label</label>
        <select id="people-tag" value=${filters.tag} onChange=${(e) => setFilters({ ...filters, tag: e.currentTarget.value, tagValue: '' })}><option value="">Any</option>
          ${(facets ? facets.tags || [] : []).map((x) => html`<option value=${x.key}>${x.key} (${numbers.format(x.count)})</option>`)}</select></div>
      ${filters.tag && html`<div class="field"><label for="people-tag-value">Label value</label>
        <select id="people-tag-value" value=${filters.tagValue} onChange=${set('tagValue')}><option value="">Any value</option>
          ${(tagFacet ? tagFacet.values : []).map((x) => html`<option value=${x}>${x}</option>`)}</select></div>`}
      <${Disclosure} label="More filters" className="wide">
        <div class="row">${date('joinedFrom', 'Joined from')}${date('joinedTo', 'Joined to')}${date('seenFrom', 'Last seen from')}${date('seenTo', 'Last seen to')}</div>
        <${RuleBuilder} filters=${filters.rules} onChange=${(rules) => setFilters({ ...filters, rules })} name="people" legend="People matching rules"
          error=${errors.rules} />
      <//>
      <div class="actions"><button type="submit">Filter</button>
        <a class="button secondary" href=${'/api/v1/subscribers/export?projectId=' + encodeURIComponent(site.projectId)} download>Export CSV</a></div>
    </form>
    ${canChange && html`<${Import} onDone=${() => load(null)} />`}
    <${FormError} errors=${errors} />
    ${done && html`<p role="status">${done}</p>`}
    ${list.total !== null && list.total !== undefined && html`<p>${numbers.format(list.total)} ${list.total === 1 ? 'person' : 'people'}</p>`}
    ${list.items.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">People</caption>
      <thead><tr>${canChange && html`<th scope="col"><span class="visually-hidden">Pick</span></th>`}<th scope="col">Person</th><th scope="col">Status</th>
        <th scope="col">Country</th><th scope="col">Devices</th><th scope="col">Labels</th><th scope="col">Last seen</th></tr></thead>
      <tbody>${list.items.map((p) => html`<tr>
        ${canChange && html`<td><input type="checkbox" aria-label=${'Pick ' + (p.externalId || p.id)} checked=${picked.includes(p.id)} onChange=${() => pick(p.id)} /></td>`}
        <td><a href=${'#/people/' + encodeURIComponent(p.id)}>${p.externalId || p.id}</a></td><td>${p.status.replace('_', ' ')}</td>
        <td>${p.country}</td><td>${p.devices.join(', ')}</td>
        <td>${p.tags.map((t) => (t.value === null ? t.key : t.key + '=' + t.value)).join(', ')}</td>
        <td>${formatTime(p.lastSeenAt, site.timezone)}</td></tr>`)}</tbody></table></div>`}
    ${!list.loading && list.items.length === 0 && !errors.form && html`<p>Nobody matches.</p>`}
    ${list.loading && html`<p role="status">Loading…</p>`}
    ${list.next && !list.loading && html`<button type="button" onClick=${() => load(list.next)}>Load more</button>`}
    ${canChange && picked.length > 0 && html`<form class="bulk" onSubmit=${tag}>
      <h2>${numbers.format(picked.length)} picked</h2>
      <div class="row">
        <div class="field"><label for="label-key">Label</label><input id="label-key" value=${label.key}
          aria-invalid=${errors.label ? 'true' : undefined} onInput=${(e) => setLabel({ ...label, key: e.currentTarget.value })} />
          ${errors.label && html`<p class="error">${errors.label}</p>`}</div>
        <div class="field"><label for="label-value">Value</label><input id="label-value" value=${label.value}
          onInput=${(e) => setLabel({ ...label, value: e.currentTarget.value })} /></div>
      </div>
      <div class="actions"><button type="submit">Add label</button>
        <button type="button" class="secondary" onClick=${() => (label.key.trim() ? bulk('/audience/subscribers/bulk-tag', { remove: [label.key.trim()] }, 'Label removed.')
          : setErrors({ label: 'Name the label to remove.' }))}>Remove label</button>
        <button type="button" class="secondary" onClick=${erase}>Delete picked</button></div>
    </form>`}
  </section>`;
}

// parseCSV reads RFC 4180 text (quoted fields, doubled quotes, CRLF or LF)
// into rows of fields.
function parseCSV(text) {
  const rows = [];
  let row = [], field = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; }
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field); field = '';
      if (row.some((x) => x !== '')) rows.push(row);
      row = [];
    } else field += c;
  }
  row.push(field);
  if (row.some((x) => x !== '')) rows.push(row);
  return rows;
}

const importChunk = 10000; // rows of one import call (spec 8.2)

// Import maps a CSV file's columns onto POST /subscribers/import: one
// column is the external id, the ones picked become labels.
function Import({ onDone }) {
  const [csv, setCsv] = useState(null); // {header, rows}
  const [idColumn, setIdColumn] = useState(0);
  const [labels, setLabels] = useState([]);
  const [topicsColumn, setTopicsColumn] = useState(-1);
  const [state, setState] = useState({});
  const read = async (e) => {
    const file = e.currentTarget.files[0];
    setState({});
    if (!file) return;
    const rows = parseCSV(await file.text());
    if (rows.length < 2) {
      setState({ error: 'The file needs a header line and at least one row.' });
      setCsv(null);
      return;
    }
    const header = rows[0].map((h) => h.trim());
    const guess = header.findIndex((h) => /^(external_?id|user_?id|id)$/i.test(h));
    setCsv({ header, rows: rows.slice(1) });
    setIdColumn(guess >= 0 ? guess : 0);
    setTopicsColumn(header.findIndex((h) => /^topics?$/i.test(h)));
    setLabels([]);
  };
  const run = async () => {
    const people = csv.rows.map((r) => {
      const p = { externalId: (r[idColumn] || '').trim() };
      if (labels.length) {
        p.tags = {};
        for (const i of labels) p.tags[csv.header[i]] = r[i] === undefined ? null : r[i];
      }
      const topics = topicsColumn >= 0 ? (r[topicsColumn] || '').split(/[|;]/).map((x) => x.trim()).filter(Boolean) : [];
      if (topics.length) p.topics = topics;
      return p;
    }).filter((p) => p.externalId);
    setState({ busy: true });
    let processed = 0;
    try {
      for (let i = 0; i < people.length; i += importChunk) {
        const a = await call('POST', '/subscribers/import', { subscribers: people.slice(i, i + importChunk) });
        processed += a.processed;
        setState({ busy: true, progress: processed + ' of ' + people.length });
      }
      setState({ done: 'Imported ' + numbers.format(processed) + (processed === 1 ? ' person.' : ' people.') });
      onDone();
    } catch (err) {
      setState({ error: messageOf(err) });
    }
  };
  return html`<${Disclosure} className="import" label="Import people from a CSV file">
    <div class="field"><label for="import-file">CSV file</label>
      <input id="import-file" type="file" accept=".csv,text/csv" onChange=${read} /></div>
    ${csv && html`<div class="field"><label for="import-id">External id column</label>
      <select id="import-id" value=${String(idColumn)} onChange=${(e) => setIdColumn(Number(e.currentTarget.value))}>
        ${csv.header.map((h, i) => html`<option value=${String(i)}>${h}</option>`)}</select></div>
      <div class="field"><label for="import-topics">Topics column</label>
        <select id="import-topics" value=${String(topicsColumn)} onChange=${(e) => setTopicsColumn(Number(e.currentTarget.value))} aria-describedby="import-topics-hint">
          <option value="-1">None</option>
          ${csv.header.map((h, i) => i !== idColumn && html`<option value=${String(i)}>${h}</option>`)}</select>
        <p class="hint" id="import-topics-hint">Topic slugs the person opts in to, separated by | or ;.</p></div>
      <fieldset><legend>Columns to keep as labels</legend>
        ${csv.header.map((h, i) => i !== idColumn && i !== topicsColumn && html`<label class="choice"><input type="checkbox" checked=${labels.includes(i)}
          onChange=${() => setLabels(labels.includes(i) ? labels.filter((x) => x !== i) : [...labels, i])} /> ${h}</label>`)}
      </fieldset>
      <p>${numbers.format(csv.rows.length)} rows; people are created or enriched by external id, and their browsers join when they subscribe.</p>
      <button type="button" onClick=${run} disabled=${state.busy}>Import</button>`}
    ${state.progress && html`<p role="status">${state.progress}</p>`}
    ${state.done && html`<p role="status">${state.done}</p>`}
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
  <//>`;
}

function Person({ site, id }) {
  const [p, setP] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setP(null);
    setError(null);
    call('GET', '/subscribers/' + encodeURIComponent(id) + '/profile').then(setP, (err) => setError(messageOf(err)));
  }, [id, site.projectId]);
  const erase = actions(() => go('people'), (err) => setError(messageOf(err)))(
    'DELETE', '/subscribers/' + encodeURIComponent(id), undefined, 'Erase this person and everything about them? This cannot be undone.');
  if (error) {
    return html`<section><h1>Person</h1><p class="error" role="alert">${error}</p></section>`;
  }
  if (!p) {
    return html`<p role="status">Loading…</p>`;
  }
  const sub = p.subscriber;
  return html`<section>
    <p><a href="#/people">Audience</a></p>
    <h1>${sub.externalId || sub.id}</h1>
    <dl class="facts">
      <dt>Subscriber id</dt><dd>${sub.id}</dd>
      <dt>Country</dt><dd>${sub.country || '—'}</dd><dt>Language</dt><dd>${sub.language || '—'}</dd>
      <dt>Time zone</dt><dd>${sub.timezone || '—'}</dd>
      <dt>Joined</dt><dd>${formatTime(sub.createdAt, site.timezone)}</dd>
      <dt>Delivered, clicked</dt><dd>${numbers.format(p.stats.delivered)}, ${numbers.format(p.stats.clicked)}</dd>
    </dl>
    <${Breakdown} title="Labels" rows=${p.tags.map((t) => ({ key: t.key, value: t.value === null ? '' : t.value }))} columns=${[['key', 'Label'], ['value', 'Value']]} />
    <${Breakdown} title="Browsers" rows=${p.endpoints.map((e) => ({ device: e.device, seen: formatTime(e.last_seen_at, site.timezone) }))} columns=${[['device', 'Device'], ['seen', 'Last seen']]} />
    <${Breakdown} title="Sends" rows=${p.sends.map((x) => ({ title: x.title, type: x.type, at: formatTime(x.created_at, site.timezone) }))} columns=${[['title', 'Title'], ['type', 'Type'], ['at', 'Sent']]} />
    <${Breakdown} title="Events" rows=${p.events.map((e) => ({ name: e.name, properties: JSON.stringify(e.properties), at: formatTime(e.created_at, site.timezone) }))}
      columns=${[['name', 'Event'], ['properties', 'Properties'], ['at', 'When']]} />
    ${site.role !== 'viewer' && html`<p><button type="button" class="secondary" onClick=${erase}>Erase this person</button></p>`}
  </section>`;
}

// ---- segments and topics ----

const ruleFields = [['country', 'Country'], ['language', 'Language'], ['url', 'Last page'], ['external_id', 'External id'], ['tag', 'Label']];
const ruleOps = [['eq', 'is'], ['neq', 'is not'], ['in', 'is one of'], ['contains', 'contains'], ['exists', 'exists'], ['not_exists', 'does not exist']];
const blankRule = () => ({ field: 'country', op: 'eq', value: '', key: '' });
const valueless = (op) => op === 'exists' || op === 'not_exists';

// ruleComplete: a field (with its name for a label) and a value unless
// the condition needs none (spec 2.5). An incomplete rule is never dropped
// from a send or a segment (that would widen it): the form refuses it.
const listOf = (v) => v.split(',').map((x) => x.trim()).filter(Boolean);
const ruleComplete = (r) => !!r.field && (r.field !== 'tag' || !!r.key.trim()) &&
  (valueless(r.op) || (r.op === 'in' ? listOf(r.value).length > 0 : r.value.trim() !== ''));
// ruleBlank: a rule nobody started to fill in.
const ruleBlank = (r) => !r.value.trim() && !r.key.trim() && !valueless(r.op);

// ruleError is what keeps the builder's f from being sent or saved, ''
// when nothing: no rule, an incomplete rule, or several values for "is" or
// "is not" (the API reads them as one text, which "is not" never equals:
// everyone).
function ruleError(f) {
  if (f.rules.length === 0) return 'Add a rule.';
  const i = f.rules.findIndex((r) => !ruleComplete(r));
  if (i >= 0) return 'Complete rule ' + (i + 1) + ' or remove it.';
  const j = f.rules.findIndex((r) => (r.op === 'eq' || r.op === 'neq') && r.value.includes(','));
  return j >= 0 ? 'Rule ' + (j + 1) + ' has several values: use “is one of”, or one value.' : '';
}

// buildable reports whether the builder shows the API Filters f exactly:
// what it would send back is f. A value list with another op than "in",
// an op or field it does not offer, a label name with spaces around it
// would all change meaning on the way through (and could widen a send).
function buildable(f) {
  if (!f || !Array.isArray(f.rules) || f.rules.length === 0 || !['all', 'any', undefined].includes(f.match)) return false;
  const fields = ruleFields.map(([v]) => v);
  const ops = ruleOps.map(([v]) => v);
  const same = {
    match: f.match || 'all',
    rules: f.rules.map((r) => {
      const o = { field: r.field === 'externalId' ? 'external_id' : r.field, op: r.op || 'eq' };
      if (!valueless(o.op) && r.value !== undefined) o.value = r.value;
      return o;
    }),
  };
  return same.rules.every((r) => typeof r.field === 'string' && (fields.includes(r.field) || r.field.startsWith('tag:')) && ops.includes(r.op)) &&
    JSON.stringify(apiFilters(builderFilters(f))) === JSON.stringify(same);
}

// apiFilters is a builder's value as the API takes it: every rule.
function apiFilters(f) {
  return {
    match: f.match,
    rules: f.rules.map((r) => {
      const out = { field: r.field === 'tag' ? 'tag:' + r.key.trim() : r.field, op: r.op };
      if (r.op === 'in') out.value = listOf(r.value);
      else if (!valueless(r.op)) out.value = r.value;
      return out;
    }),
  };
}

// builderFilters is an API Filters value as the builder edits it.
function builderFilters(f) {
  const rules = ((f && f.rules) || []).map((r) => {
    const tag = (r.field || '').startsWith('tag:');
    return {
      field: tag ? 'tag' : r.field === 'externalId' ? 'external_id' : r.field, key: tag ? r.field.slice(4) : '',
      op: r.op || 'eq', value: Array.isArray(r.value) ? r.value.join(', ') : (r.value || ''),
    };
  });
  return { match: (f && f.match) || 'all', rules: rules.length ? rules : [blankRule()] };
}

// describeFilters is a Filters value in words.
function describeFilters(f) {
  const op = Object.fromEntries(ruleOps);
  return ((f && f.rules) || []).map((r) => {
    const field = r.field.startsWith('tag:') ? 'label ' + r.field.slice(4) : (Object.fromEntries(ruleFields)[r.field] || r.field).toLowerCase();
    const value = r.value === undefined ? '' : ' ' + (Array.isArray(r.value) ? r.value.join(', ') : r.value);
    return field + ' ' + (op[r.op || 'eq'] || r.op) + value;
  }).join(f.match === 'any' ? ' or ' : ' and ');
}

// RuleBuilder edits a Filters value, with a live count of whom it reaches.
// name tells two builders on a page apart.
function RuleBuilder({ filters, onChange, name = '', legend = 'Rules', error }) {
  const [count, setCount] = useState(null);
  const rules = filters.rules;
  const of = (what, i) => what + ' of ' + (name ? name + ' ' : '') + 'rule ' + (i + 1);
  const body = apiFilters(filters);
  const complete = ruleError(filters) === '';
  useEffect(() => {
    if (!complete) {
      setCount(null);
      return undefined;
    }
    let live = true;
    const timer = setTimeout(() => {
      call('POST', '/segments/preview', { filters: body })
        .then((a) => live && setCount(a.count), () => live && setCount(null));
    }, 300);
    return () => { live = false; clearTimeout(timer); };
  }, [JSON.stringify(body), complete]);
  const edit = (i, change) => onChange({ ...filters, rules: rules.map((r, j) => (j === i ? { ...r, ...change } : r)) });
  const matchId = (name ? name.replace(/\W+/g, '-') + '-' : '') + 'match';
  return html`<fieldset><legend>${legend}</legend>
    <div class="field"><label for=${matchId}>People must match</label>
      <select id=${matchId} value=${filters.match} onChange=${(e) => onChange({ ...filters, match: e.currentTarget.value })}>
        <option value="all">every rule</option><option value="any">any rule</option></select></div>
    ${rules.map((r, i) => html`<div class="rule" role="group" aria-label=${(name ? name[0].toUpperCase() + name.slice(1) + ' rule ' : 'Rule ') + (i + 1)}>
      <select aria-label=${of('Field', i)} value=${r.field} onChange=${(e) => edit(i, { field: e.currentTarget.value })}>
        ${ruleFields.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select>
      ${r.field === 'tag' && html`<input aria-label=${of('Label name', i)} value=${r.key} onInput=${(e) => edit(i, { key: e.currentTarget.value })} />`}
      <select aria-label=${of('Condition', i)} value=${r.op} onChange=${(e) => edit(i, { op: e.currentTarget.value })}>
        ${ruleOps.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select>
      ${!valueless(r.op) && html`<input aria-label=${of('Value', i)} value=${r.value} placeholder=${r.op === 'in' ? 'a, b, c' : undefined}
        onInput=${(e) => edit(i, { value: e.currentTarget.value })} />`}
      <button type="button" class="secondary" aria-label=${'Remove ' + (name ? name + ' ' : '') + 'rule ' + (i + 1)}
        onClick=${() => onChange({ ...filters, rules: rules.filter((_, j) => j !== i) })}>Remove</button>
    </div>`)}
    <button type="button" class="secondary" aria-label=${'Add ' + (name ? name + ' ' : '') + 'rule'}
      onClick=${() => onChange({ ...filters, rules: [...rules, blankRule()] })}>Add rule</button>
    <p role="status" class="hint">${count === null ? 'Complete every rule to count whom it reaches.' : 'Reaches ' + numbers.format(count) + (count === 1 ? ' browser' : ' browsers') + ' now.'}</p>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </fieldset>`;
}

function Segments({ site }) {
  const canChange = site.role !== 'viewer';
  const [segments, setSegments] = useState(null);
  const [counts, setCounts] = useState({});
  const [editing, setEditing] = useState(null); // the segment being changed, or null for a new one
  const f = useForm({ name: '' });
  const [filters, setFilters] = useState(builderFilters(null));
  const form = useRef(null);
  const load = () => {
    call('GET', '/segments').then((a) => setSegments(a.segments), (err) => f.setErrors(errorsOf(err)));
    call('GET', '/audience/segments').then((a) => {
      const c = {};
      for (const g of a.segments || []) c[g.id] = g;
      setCounts(c);
    }, () => {});
  };
  useEffect(load, [site.projectId]);
  const reset = () => {
    setEditing(null);
    f.setValues({ name: '' });
    setFilters(builderFilters(null));
  };
  const edit = (g) => {
    setEditing(g);
    f.setValues({ name: g.name });
    f.setErrors({});
    setFilters(builderFilters(g.filters));
    if (form.current) form.current.querySelector('input').focus();
  };
  const save = f.submit(async (v) => {
    const errors = {};
    if (!v.name.trim()) errors.name = 'A segment needs a name.';
    if (ruleError(filters)) errors.rules = ruleError(filters);
    if (Object.keys(errors).length) {
      f.setErrors(errors);
      return;
    }
    const body = { name: v.name, filters: apiFilters(filters) };
    if (editing) await call('PUT', '/segments/' + encodeURIComponent(editing.id), body);
    else await call('POST', '/segments', body);
    reset();
    load();
  }, (err) => (err instanceof ApiError && (err.code === 'segment_needs_a_rule' || err.code === 'invalid_filters') ? { rules: err.message } : errorsOf(err)));
  const size = (g) => {
    const c = counts[g.id];
    return c && typeof c.count === 'number' ? numbers.format(c.count) : '—';
  };
  const uses = (g) => {
    const c = counts[g.id];
    if (!c) return '';
    const pending = c.usedBy.pending + c.usedBy.schedules + c.usedBy.feeds;
    return (pending ? numbers.format(pending) + ' waiting' : 'nothing waiting') + (c.lastSentAt ? '; last sent ' + formatTime(c.lastSentAt, site.timezone) : '');
  };
  return html`<section aria-labelledby="segments-title">
    <h2 id="segments-title">Segments</h2>
    <${FormError} errors=${f.errors} />
    ${segments && segments.length === 0 && html`<p>No segments yet.</p>`}
    ${segments && segments.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Segments</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Browsers</th><th scope="col">Rules</th><th scope="col">Used by</th>${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${segments.map((g) => html`<tr><td>${g.name}</td><td class="num">${size(g)}</td>
        <td>${describeFilters(g.filters)}</td><td>${uses(g)}</td>
        ${canChange && html`<td class="buttons">${buildable(g.filters) && html`<button type="button" class="secondary" aria-label=${'Edit segment ' + g.name} onClick=${() => edit(g)}>Edit</button>`}
          <button type="button" class="secondary" aria-label=${'Delete segment ' + g.name} onClick=${actions(() => { if (editing && editing.id === g.id) reset(); load(); }, (err) => f.setErrors(errorsOf(err)))(
            'DELETE', '/segments/' + encodeURIComponent(g.id), undefined, 'Delete the segment “' + g.name + '”?')}>Delete</button></td>`}</tr>`)}</tbody>
    </table></div>`}
    ${canChange && html`<form onSubmit=${save} novalidate ref=${form}>
      <h3>${editing ? 'Change the segment “' + editing.name + '”' : 'New segment'}</h3>
      <${Field} id="segment-name" label="Segment name" value=${f.values.name} onInput=${f.set('name')} error=${f.errors.name} />
      <${RuleBuilder} filters=${filters} onChange=${setFilters} error=${f.errors.rules} />
      <div class="actions"><button type="submit" disabled=${f.busy}>${editing ? 'Save segment' : 'Create segment'}</button>
        ${editing && html`<button type="button" class="secondary" onClick=${reset}>Cancel changes</button>`}</div>
    </form>`}
  </section>`;
}

function Topics({ site }) {
  const canChange = site.role !== 'viewer';
  const [topics, setTopics] = useState(null);
  const f = useForm({ name: '', slug: '' });
  const load = () => call('GET', '/topics').then((a) => setTopics(a.topics), (err) => f.setErrors(errorsOf(err)));
  useEffect(() => { load(); }, [site.projectId]);
  const create = f.submit(async (v) => {
    const body = { name: v.name };
    if (v.slug.trim()) body.slug = v.slug.trim();
    await call('POST', '/topics', body);
    f.setValues({ name: '', slug: '' });
    load();
  }, (err) => (err instanceof ApiError && /slug/i.test(err.message) ? { slug: err.message } : errorsOf(err)));
  return html`<section aria-labelledby="topics-title">
    <h2 id="topics-title">Topics</h2>
    <${FormError} errors=${f.errors} />
    ${topics && topics.length === 0 && html`<p>No topics yet.</p>`}
    ${topics && topics.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Topics</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Slug</th><th scope="col">Opted in</th>${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${topics.map((tp) => html`<tr><td>${tp.name}</td><td><code>${tp.slug}</code></td><td class="num">${numbers.format(tp.subscribers)}</td>
        ${canChange && html`<td><button type="button" class="secondary" aria-label=${'Delete topic ' + tp.name} onClick=${actions(load, (err) => f.setErrors(errorsOf(err)))(
          'DELETE', '/topics/' + encodeURIComponent(tp.id), undefined, 'Delete the topic “' + tp.name + '”?')}>Delete</button></td>`}</tr>`)}</tbody>
    </table></div>`}
    ${canChange && html`<form onSubmit=${create} novalidate>
      <h3>New topic</h3>
      <${Field} id="topic-name" label="Topic name" value=${f.values.name} onInput=${f.set('name')} error=${f.errors.name} />
      <${Field} id="topic-slug" label="Slug" value=${f.values.slug} onInput=${f.set('slug')} error=${f.errors.slug} required=${false} hint="Letters, digits and dashes; made from the name when empty. It never changes." />
      <button type="submit" disabled=${f.busy}>Create topic</button>
    </form>`}
  </section>`;
}

function SegmentsAndTopics({ site }) {
  return html`<section><h1>Segments and topics</h1><${Segments} site=${site} /><${Topics} site=${site} /></section>`;
}

// ---- webhooks ----

function Webhooks({ site }) {
  const canChange = site.role !== 'viewer';
  const [list, setList] = useState(null);
  const [created, setCreated] = useState(null);
  const [editing, setEditing] = useState(null); // the webhook being changed, or null for a new one
  const f = useForm({ url: '', events: [] });
  const form = useRef(null);
  const load = () => call('GET', '/webhooks').then(setList, (err) => f.setErrors(errorsOf(err)));
  useEffect(() => { setCreated(null); setEditing(null); load(); }, [site.projectId]);
  const toggle = (name) => f.set('events')(f.values.events.includes(name) ? f.values.events.filter((x) => x !== name) : [...f.values.events, name]);
  const reset = () => {
    setEditing(null);
    f.setValues({ url: '', events: [] });
  };
  const edit = (h) => {
    setCreated(null);
    setEditing(h);
    f.setErrors({});
    f.setValues({ url: h.url, events: h.events });
    if (form.current) form.current.querySelector('input').focus();
  };
  const save = f.submit(async (v) => {
    const body = { url: v.url.trim(), events: v.events };
    if (editing) {
      await call('PUT', '/webhooks/' + encodeURIComponent(editing.id), body);
    } else {
      setCreated((await call('POST', '/webhooks', body)).webhook);
    }
    reset();
    load();
  });
  const act = actions(load, (err) => f.setErrors(errorsOf(err)));
  return html`<section>
    <h1>Webhooks</h1>
    <${FormError} errors=${f.errors} />
    ${created && html`<div class="notice" role="status">
      <p>The webhook to <span class="url">${created.url}</span> is made. Copy its signing secret now: it is never shown again.</p>
      <label for="new-secret">Signing secret</label><input id="new-secret" readonly value=${created.secret} /></div>`}
    ${list && list.webhooks.length === 0 && html`<p>No webhooks yet.</p>`}
    ${list && list.webhooks.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Webhooks</caption>
      <thead><tr><th scope="col">Address</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Last answer</th>
        ${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${list.webhooks.map((h) => html`<tr>
        <td><a class="url" href=${'#/webhooks/' + h.id}>${h.url}</a></td><td>${h.events.length ? h.events.join(', ') : 'every event'}</td>
        <td>${h.enabled ? 'on' : 'off' + (h.disabled_reason ? ' (' + h.disabled_reason + ')' : '')}</td>
        <td>${h.last_status === null ? '—' : h.last_status}${h.last_fired_at ? ', ' + formatTime(h.last_fired_at, site.timezone) : ''}</td>
        ${canChange && html`<td class="buttons">
          <button type="button" class="secondary" aria-label=${'Edit ' + h.url} onClick=${() => edit(h)}>Edit</button>
          <button type="button" class="secondary" aria-label=${(h.enabled ? 'Turn off ' : 'Turn on ') + h.url} onClick=${act('PUT', '/webhooks/' + h.id, { enabled: !h.enabled })}>${h.enabled ? 'Turn off' : 'Turn on'}</button>
          <button type="button" class="secondary" aria-label=${'Delete ' + h.url} onClick=${act('DELETE', '/webhooks/' + h.id, undefined, 'Delete this webhook and its delivery log?')}>Delete</button></td>`}
      </tr>`)}</tbody></table></div>`}
    ${canChange && list && html`<form onSubmit=${save} novalidate ref=${form}>
      <h2>${editing ? 'Change the webhook' : 'New webhook'}</h2>
      <${Field} id="url" label="Webhook address" type="url" value=${f.values.url} onInput=${f.set('url')} error=${f.errors.url} hint="Your server's https address; RelayBell signs every delivery." />
      <fieldset><legend>Events (none: every event)</legend>
        ${list.events.map((name) => html`<label class="choice"><input type="checkbox" checked=${f.values.events.includes(name)} onChange=${() => toggle(name)} /> ${name}</label>`)}
      </fieldset>
      <div class="actions"><button type="submit" disabled=${f.busy}>${editing ? 'Save webhook' : 'Create webhook'}</button>
        ${editing && html`<button type="button" class="secondary" onClick=${reset}>Cancel changes</button>`}</div>
    </form>`}
  </section>`;
}

function WebhookLog({ site, id, deliveryId }) {
  const canChange = site.role !== 'viewer';
  const [log, setLog] = useState(null);
  const [one, setOne] = useState(null);
  const [error, setError] = useState(null);
  const base = '/webhooks/' + encodeURIComponent(id);
  const more = (cursor) => call('GET', base + '/deliveries?cursor=' + encodeURIComponent(cursor))
    .then((a) => setLog((old) => ({ deliveries: old.deliveries.concat(a.deliveries), nextCursor: a.nextCursor })), (err) => setError(messageOf(err)));
  const load = () => {
    call('GET', base + '/deliveries').then(setLog, (err) => setError(messageOf(err)));
    if (deliveryId) {
      call('GET', base + '/deliveries/' + encodeURIComponent(deliveryId)).then((a) => setOne(a.delivery), (err) => setError(messageOf(err)));
    }
  };
  useEffect(() => { setOne(null); load(); }, [id, deliveryId, site.projectId]);
  const post = (path) => actions(() => { setError(null); load(); }, (err) => setError(messageOf(err)))('POST', path);
  return html`<section>
    <p><a href="#/webhooks">Webhooks</a></p>
    <h1>Delivery log</h1>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${canChange && html`<p><button type="button" onClick=${post(base + '/test')}>Send a test event</button></p>`}
    ${log && log.deliveries.length === 0 && html`<p>No deliveries yet.</p>`}
    ${log && log.deliveries.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Deliveries</caption>
      <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Answer</th><th scope="col">Created</th></tr></thead>
      <tbody>${log.deliveries.map((x) => html`<tr><td><a href=${'#/webhooks/' + id + '/deliveries/' + x.id}>${x.event}</a></td><td>${x.status}</td>
        <td class="num">${numbers.format(x.attempts)}</td><td>${x.last_status_code === null ? (x.error || '—') : x.last_status_code}</td>
        <td>${formatTime(x.created_at, site.timezone)}</td></tr>`)}</tbody></table></div>`}
    ${log && log.nextCursor && html`<button type="button" onClick=${() => more(log.nextCursor)}>Load more</button>`}
    ${one && html`<section aria-labelledby="delivery-title">
      <h2 id="delivery-title">Delivery ${one.id}</h2>
      <dl class="facts"><dt>Event</dt><dd>${one.event}</dd><dt>Status</dt><dd>${one.status}</dd>
        <dt>Answer</dt><dd>${one.last_status_code === null ? '—' : one.last_status_code}${one.duration_ms === null ? '' : ' in ' + numbers.format(one.duration_ms) + ' ms'}</dd>
        ${one.error && html`<dt>Error</dt><dd>${one.error}</dd>`}</dl>
      <div class="field"><label for="request-body">Request body</label><textarea id="request-body" readonly rows="6" value=${one.request_body}></textarea></div>
      <div class="field"><label for="request-headers">Request headers</label><textarea id="request-headers" readonly rows="4"
        value=${Object.entries(one.request_headers || {}).map(([k, v]) => k + ': ' + v).join('\n')}></textarea></div>
      <div class="field"><label for="response-body">Response body</label><textarea id="response-body" readonly rows="3" value=${one.response_body || ''}></textarea></div>
      ${canChange && html`<p><button type="button" onClick=${post(base + '/deliveries/' + encodeURIComponent(one.id) + '/resend')}>Resend</button></p>`}
    </section>`}
  </section>`;
}

// ---- the composer ----

// mergePreview shows text as a recipient without the tags' values sees it:
// every {name|fallback} becomes its fallback (spec 2.1 merge tags).
function mergePreview(text) {
  return text.replace(/\{([A-Za-z0-9_.:-]{1,64})(?:\|([^{}]*))?\}/g, (_, name, fallback) => fallback || '');
}

// Preview shows a notification roughly as desktop Chrome, Android and
// macOS draw it; every value goes in as text (or as an image address).
function Preview({ v, site, heading = 'Preview', id = 'preview' }) {
  const url = mergePreview(v.url);
  const host = (() => { try { return new URL(url || site.url).host; } catch (e) { return site.url; } })();
  const icon = v.icon.trim();
  const image = v.image.trim();
  const title = mergePreview(v.title) || 'Title';
  const body = mergePreview(v.body);
  const buttons = v.actions.filter((a) => a.title.trim());
  const styles = [['chrome', 'Chrome on Windows'], ['android', 'Android'], ['macos', 'macOS']];
  return html`<section class="previews" aria-labelledby=${id + '-title'}>
    <h2 id=${id + '-title'}>${heading}</h2>
    ${styles.map(([style, label]) => html`<figure class=${'preview ' + style}>
      <figcaption>${label}</figcaption>
      <div class="toast" role="img" aria-label=${label + ' ' + heading.toLowerCase() + ': ' + title + (body ? ', ' + body : '')}>
        ${icon ? html`<img class="icon" src=${icon} alt="" />` : html`<span class="icon placeholder"></span>`}
        <div class="text">
          <p class="title">${title}</p>
          ${body && html`<p class="body">${body}</p>`}
          <p class="host">${style === 'macos' ? 'Chrome' : host}</p>
        </div>
        ${image && style !== 'macos' && html`<img class="image" src=${image} alt="" />`}
        ${style === 'android' && v.badge.trim() && html`<img class="badge" src=${v.badge.trim()} alt="" />`}
        ${buttons.length > 0 && style !== 'macos' && html`<div class="buttons">${buttons.map((a) => html`<span>${a.title}</span>`)}</div>`}
      </div>
    </figure>`)}
  </section>`;
}

// composerValues is the composer's form for a send body (a draft or a
// duplicate), or an empty one.
function composerValues(b, timeZone) {
  b = b || {};
  const actions = (b.actions || []).slice(0, 2).map((a) => ({ title: a.title || '', url: a.url || '' }));
  while (actions.length < 2) actions.push({ title: '', url: '' });
  const ids = b.externalIds || (b.externalId ? [b.externalId] : null);
  const abB = (b.ab && b.ab.b) || {};
  const abTest = b.abTest || {};
  const later = b.sendAt && Date.parse(b.sendAt) > Date.now(); // a past time would send now
  return {
    title: b.title || '', body: b.body || '', url: b.url || '', icon: b.icon || '', image: b.image || '', badge: b.badge || '', actions,
    ttl: b.ttl ? String(b.ttl) : '', tag: b.tag || '', requireInteraction: !!b.requireInteraction, transactional: !!b.transactional,
    translations: Object.entries(b.translations || {}).map(([language, t]) => ({ language, title: t.title || '', body: t.body || '' })),
    ab: !!(b.ab && b.ab.b), b: { title: abB.title || '', body: abB.body || '', url: abB.url || '', image: abB.image || '' },
    autoWinner: !!abTest.autoWinner, testPercent: abTest.testPercent ? String(abTest.testPercent) : '20', afterHours: abTest.afterHours ? String(abTest.afterHours) : '4',
    audience: ids ? 'users' : b.segmentId ? 'segment' : b.topicId ? 'topic' : b.filters ? 'filters' : 'everyone',
    topicId: b.topicId || '', segmentId: b.segmentId || '', externalIds: ids ? ids.join(', ') : '', filters: builderFilters(b.filters),
    exclude: b.excludeSegmentId ? 'segment' : b.excludeFilters ? 'filters' : 'none',
    excludeSegmentId: b.excludeSegmentId || '', excludeFilters: builderFilters(b.excludeFilters),
    when: b.perTimezone ? 'local' : b.smartTime ? 'smart' : later ? 'later' : 'now',
    sendAt: later ? zonedLocal(b.sendAt, timeZone || 'UTC') : '', sendZone: timeZone || 'UTC', localTime: b.localTime || '09:00',
  };
}

// sendRequest is the composer's form as a send request (spec 2.1).
function sendRequest(v, site, draft) {
  const r = { title: v.title };
  for (const k of ['body', 'url', 'icon', 'image', 'badge', 'tag']) {
    if (v[k].trim()) r[k] = v[k].trim();
  }
  const actions = v.actions.filter((a) => a.title.trim()).map((a) => (a.url.trim() ? { title: a.title.trim(), url: a.url.trim() } : { title: a.title.trim() }));
  if (actions.length) r.actions = actions;
  if (v.ttl.trim()) r.ttl = Number(v.ttl);
  if (v.requireInteraction) r.requireInteraction = true;
  if (v.transactional) r.transactional = true;
  const translations = v.translations.filter((t) => t.language.trim() && (t.title.trim() || t.body.trim()));
  if (translations.length) r.translations = Object.fromEntries(translations.map((t) => [t.language.trim().toLowerCase(), { title: t.title, body: t.body }]));
  if (v.ab) {
    const b = {};
    for (const k of ['title', 'body', 'url', 'image']) if (v.b[k].trim()) b[k] = v.b[k].trim();
    r.ab = { b };
    if (v.autoWinner) r.abTest = { autoWinner: true, testPercent: Number(v.testPercent), afterHours: Number(v.afterHours) };
  }
  if (v.audience === 'topic') r.topicId = v.topicId;
  if (v.audience === 'segment') r.segmentId = v.segmentId;
  if (v.audience === 'filters') r.filters = apiFilters(v.filters);
  if (v.audience === 'users') r.externalIds = [...new Set(v.externalIds.split(/[,\n]/).map((x) => x.trim()).filter(Boolean))];
  if (v.audience !== 'users' && v.exclude === 'segment') r.excludeSegmentId = v.excludeSegmentId;
  if (v.audience !== 'users' && v.exclude === 'filters') r.excludeFilters = apiFilters(v.excludeFilters);
  if (v.when === 'later' && v.sendAt) r.sendAt = zonedToUTC(v.sendAt, v.sendZone || site.timezone);
  if (v.when === 'local') {
    r.perTimezone = true;
    r.localTime = v.localTime;
  }
  if (v.when === 'smart') r.smartTime = true;
  if (draft) r.draft = true;
  return r;
}

// representable reports whether the composer can show a send body's whole
// audience exactly: one way to choose people and at most one to leave some
// out (none with named people), every member valued (a null or blank one
// would read as none), rules the builder shows as they are, ids without
// the commas or line breaks that separate them. Any other body is never
// opened in the form, whose choices would drop or change members and so
// could widen the send.
function representable(b) {
  if (!b) return true;
  const has = (k) => b[k] !== undefined;
  const blank = (x) => x === null || (typeof x === 'string' && !x.trim()) || (Array.isArray(x) && !x.some((y) => String(y).trim()));
  const targeting = ['segmentId', 'topicId', 'filters', 'externalId', 'externalIds', 'excludeSegmentId', 'excludeFilters'];
  if (targeting.some((k) => has(k) && blank(b[k]))) return false;
  if (['filters', 'excludeFilters'].some((k) => has(k) && !buildable(b[k]))) return false;
  const ids = b.externalIds || (has('externalId') ? [b.externalId] : []);
  if (ids.some((id) => typeof id !== 'string' || /[,\n]/.test(id) || id !== id.trim())) return false;
  const named = has('externalIds') || has('externalId');
  const include = ['segmentId', 'topicId', 'filters'].filter(has).length + (named ? 1 : 0);
  const exclude = ['excludeSegmentId', 'excludeFilters'].filter(has).length;
  return include <= 1 && exclude <= 1 && !(named && exclude > 0);
}

// contentMembers are what a notification shows (a test send takes these
// alone); composerMembers every send-request member the composer sets.
const contentMembers = ['title', 'body', 'url', 'icon', 'image', 'badge', 'actions', 'requireInteraction', 'tag', 'ttl', 'translations'];
const composerMembers = [...contentMembers, 'transactional', 'ab', 'abTest', 'topicId', 'segmentId', 'filters', 'externalId', 'externalIds',
  'excludeSegmentId', 'excludeFilters', 'sendAt', 'perTimezone', 'localTime', 'smartTime'];

// draftPatch is the PATCH of a draft to the form's request r: a member the
// form leaves unset is null, which clears the draft's saved one.
function draftPatch(r) {
  const patch = {};
  for (const k of composerMembers) patch[k] = r[k] === undefined ? null : r[k];
  return patch;
}

// composerError maps a send's error to the composer field it concerns.
function composerError(err, r) {
  const at = { title_required: 'title', external_ids_empty: 'externalIds', unknown_topic: 'topicId', segment_not_found: 'segmentId' };
  if (err instanceof ApiError && err.code === 'segment_not_found' && r && r.excludeSegmentId && err.message.includes(r.excludeSegmentId)) {
    return { excludeSegmentId: err.message };
  }
  if (err instanceof ApiError && at[err.code]) return { [at[err.code]]: err.message };
  return errorsOf(err);
}

// when is a send's timing in words.
function when(r, site, zone) {
  if (r.perTimezone) return ' at ' + r.localTime + ' in each subscriber’s time zone';
  if (r.smartTime) return ' at each subscriber’s most active hour';
  return r.sendAt ? ' at ' + formatTime(r.sendAt, zone || site.timezone) : ' now';
}

// duplicate opens the composer filled with a send's body.
function duplicate(sendBody) {
  sessionStorage.setItem('relaybell.duplicate', JSON.stringify(sendBody));
  go('compose');
}

// mergeNames are the subscriber attributes merge tags know (spec 2.1).
const mergeNames = [['external_id', 'External id'], ['country', 'Country'], ['language', 'Language'], ['timezone', 'Time zone'], ['device', 'Device']];

// MergeTags inserts {name|fallback} into the title or the message.
function MergeTags({ labels, onInsert }) {
  const [name, setName] = useState('external_id');
  const [fallback, setFallback] = useState('');
  const tag = '{' + name + (fallback ? '|' + fallback.replace(/[{}]/g, '') : '') + '}';
  return html`<${Disclosure} label="Merge tags">
    <p class="hint">A merge tag is replaced by each subscriber’s value, or by the fallback when they have none.</p>
    <div class="row">
      <div class="field"><label for="merge-name">Value</label>
        <select id="merge-name" value=${name} onChange=${(e) => setName(e.currentTarget.value)}>
          ${mergeNames.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
          ${labels.filter((k) => /^[A-Za-z0-9_.:-]{1,64}$/.test(k) && !mergeNames.some(([a]) => a.toLowerCase() === k.toLowerCase()) &&
            !['externalid', 'subscriber_id'].includes(k.toLowerCase())).map((k) => html`<option value=${k}>${'Label: ' + k}</option>`)}
        </select></div>
      <div class="field"><label for="merge-fallback">Fallback</label>
        <input id="merge-fallback" value=${fallback} onInput=${(e) => setFallback(e.currentTarget.value)} /></div>
    </div>
    <p class="actions"><code>${tag}</code>
      <button type="button" class="secondary" onClick=${() => onInsert('title', tag)}>Insert into title</button>
      <button type="button" class="secondary" onClick=${() => onInsert('body', tag)}>Insert into message</button></p>
  <//>`;
}

// Translations edits the title and message per language.
function Translations({ rows, onChange }) {
  const edit = (i, change) => onChange(rows.map((t, j) => (j === i ? { ...t, ...change } : t)));
  return html`<${Disclosure} label="Translations" open=${rows.length > 0}>
    <p class="hint">Browsers in these languages get this title and message; others get the main text.</p>
    ${rows.map((t, i) => html`<div class="row translation" role="group" aria-label=${'Translation ' + (i + 1)}>
      <div class="field"><label for=${'tr' + i + '-language'}>${'Language of translation ' + (i + 1)}</label>
        <input id=${'tr' + i + '-language'} value=${t.language} maxlength="2" placeholder="fr" onInput=${(e) => edit(i, { language: e.currentTarget.value })} /></div>
      <div class="field"><label for=${'tr' + i + '-title'}>${'Title of translation ' + (i + 1)}</label>
        <input id=${'tr' + i + '-title'} value=${t.title} onInput=${(e) => edit(i, { title: e.currentTarget.value })} /></div>
      <div class="field"><label for=${'tr' + i + '-body'}>${'Message of translation ' + (i + 1)}</label>
        <input id=${'tr' + i + '-body'} value=${t.body} onInput=${(e) => edit(i, { body: e.currentTarget.value })} /></div>
      <button type="button" class="secondary" aria-label=${'Remove translation ' + (i + 1)} onClick=${() => onChange(rows.filter((_, j) => j !== i))}>Remove</button>
    </div>`)}
    <button type="button" class="secondary" onClick=${() => onChange([...rows, { language: '', title: '', body: '' }])}>Add translation</button>
  <//>`;
}

// Composer writes a send, or changes the draft draftId.
function Composer({ site, draftId }) {
  const f = useForm(() => {
    const saved = sessionStorage.getItem('relaybell.duplicate');
    sessionStorage.removeItem('relaybell.duplicate');
    return composerValues(saved && !draftId ? JSON.parse(saved) : null, site.timezone);
  });
  const [lists, setLists] = useState({ topics: [], segments: [], labels: [] });
  const [loaded, setLoaded] = useState(!draftId);
  const [confirm, setConfirm] = useState(null); // {request, audience}
  const sendButton = useRef(null);
  useEffect(() => { if (confirm && sendButton.current) sendButton.current.focus(); }, [confirm]);
  useEffect(() => {
    Promise.all([call('GET', '/topics'), call('GET', '/segments')])
      .then(([t, g]) => setLists((old) => ({ ...old, topics: t.topics || [], segments: g.segments || [] })))
      .catch(() => {});
    call('GET', '/audience/subscribers/facets')
      .then((a) => setLists((old) => ({ ...old, labels: (a.tags || []).map((t) => t.key) })), () => {});
  }, [site.projectId]);
  useEffect(() => {
    if (!draftId) return;
    call('GET', '/notifications/' + encodeURIComponent(draftId)).then((d) => {
      if (d.notification.status !== 'draft') {
        f.setErrors({ form: 'This notification is no longer a draft.' });
        return;
      }
      if (!representable(d.sendBody)) {
        f.setErrors({ form: 'This draft combines audience choices the composer cannot show; change or send it through the API.' });
        return;
      }
      f.setValues(composerValues(d.sendBody, site.timezone));
      setLoaded(true);
    }, (err) => f.setErrors(errorsOf(err)));
  }, [draftId]);
  const v = f.values;
  // audience counts who a send would reach before it goes.
  const audience = async (r) => {
    if (r.externalIds) {
      return numbers.format(r.externalIds.length) + (r.externalIds.length === 1 ? ' person' : ' people') + ' named';
    }
    const body = {};
    if (r.topicId) body.topicId = r.topicId;
    if (r.filters) body.filters = r.filters;
    if (r.segmentId) {
      const seg = lists.segments.find((g) => g.id === r.segmentId);
      if (!seg) return 'the segment’s browsers (not counted: the segments did not load)';
      body.filters = seg.filters;
    }
    const answer = await call('POST', '/segments/preview', body);
    const n = numbers.format(answer.count) + (answer.count === 1 ? ' browser' : ' browsers');
    return r.excludeSegmentId || r.excludeFilters ? 'at most ' + n + ' (before leaving out the excluded)' : n;
  };
  // formErrors refuses a send or draft whose rules cannot go as they are,
  // or that is to go later with no time, or one past (it would go now).
  const formErrors = () => {
    const errors = {};
    const a = v.audience === 'filters' && ruleError(v.filters);
    const x = v.audience !== 'users' && v.exclude === 'filters' && ruleError(v.excludeFilters);
    if (a) errors.filters = a;
    if (x) errors.excludeFilters = x;
    if (v.when === 'later' && !v.sendAt) errors.sendAt = 'Choose when it goes.';
    else if (v.when === 'later' && Date.parse(zonedToUTC(v.sendAt, v.sendZone)) <= Date.now()) errors.sendAt = 'This time has passed.';
    return Object.keys(errors).length ? errors : null;
  };
  // Closing the confirmation on any change: it shows what goes.
  useEffect(() => setConfirm(null), [v]);
  // once runs one of the form's calls at a time (no double send).
  const [pending, setPending] = useState(false);
  const once = (fn) => async () => {
    if (pending) return;
    setPending(true);
    try {
      await fn();
    } finally {
      setPending(false);
    }
  };
  const review = f.submit(async () => {
    const r = sendRequest(v, site, false);
    if (!r.title.trim()) {
      f.setErrors({ title: 'A title is required to send.' });
      return;
    }
    const bad = formErrors();
    if (bad) {
      f.setErrors(bad);
      return;
    }
    setConfirm({ request: r, audience: await audience(r) });
  }, composerError);
  const send = once(async () => {
    const r = confirm.request;
    setConfirm(null);
    try {
      let answer;
      if (draftId) {
        // The draft becomes exactly the form, then goes as saved.
        await call('PATCH', '/notifications/' + encodeURIComponent(draftId), draftPatch(r));
        answer = await call('POST', '/notifications/' + encodeURIComponent(draftId) + '/send');
      } else {
        answer = await call('POST', '/notifications', r);
      }
      go('notifications/' + answer.notificationId);
    } catch (err) {
      f.setErrors(composerError(err, r));
    }
  });
  const saveDraft = once(async () => {
    const bad = formErrors();
    if (bad) {
      f.setErrors(bad);
      return;
    }
    const r = sendRequest(v, site, true);
    try {
      if (draftId) {
        await call('PATCH', '/notifications/' + encodeURIComponent(draftId), draftPatch(r));
      } else {
        await call('POST', '/notifications', r);
      }
      go('notifications?status=draft');
    } catch (err) {
      f.setErrors(composerError(err, r));
    }
  });
  const [tested, setTested] = useState('');
  // test sends the content alone to the website's test devices.
  const test = once(async () => {
    setTested('');
    const r = sendRequest(v, site, false);
    const content = {};
    for (const k of contentMembers) {
      if (r[k] !== undefined) content[k] = r[k];
    }
    try {
      const a = await call('POST', '/test-devices/send', content);
      setTested('Test sent to ' + numbers.format(a.devices) + (a.devices === 1 ? ' test device.' : ' test devices.'));
    } catch (err) {
      f.setErrors(err instanceof ApiError && err.code === 'no_test_devices'
        ? { form: 'No test devices yet: subscribe a browser on the Install page first.' } : composerError(err));
    }
  });
  const insert = (field, tag) => f.set(field)(v[field] + tag);
  const radio = (group, value, label) => html`<label class="choice"><input type="radio" name=${group} value=${value}
    checked=${v[group] === value} onChange=${() => f.set(group)(value)} /> ${label}</label>`;
  const picker = (id, label, value, options, empty, error) => html`<div class="field"><label for=${id}>${label}</label>
    <select id=${id} value=${value} onChange=${(e) => f.set(id)(e.currentTarget.value)} aria-invalid=${error ? 'true' : undefined}
      aria-describedby=${error ? id + '-error' : undefined}>
      <option value="">${empty}</option>
      ${options.map((o) => html`<option value=${o.id}>${o.name}</option>`)}
    </select>${error && html`<p class="error" id=${id + '-error'}>${error}</p>`}</div>`;
  const setB = (k) => (x) => f.set('b')({ ...v.b, [k]: x });
  if (!loaded) {
    return html`<section><h1>Edit draft</h1><${FormError} errors=${f.errors} />${!f.errors.form && html`<p role="status">Loading…</p>`}</section>`;
  }
  return html`<section>
    <h1>${draftId ? 'Edit draft' : 'New notification'}</h1>
    <form onSubmit=${review} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="title" label="Title" value=${v.title} onInput=${f.set('title')} error=${f.errors.title} />
      <${Field} id="body" label="Message" value=${v.body} onInput=${f.set('body')} error=${f.errors.body} required=${false} />
      <${MergeTags} labels=${lists.labels} onInsert=${insert} />
      <${Field} id="url" label="Link" type="url" value=${v.url} onInput=${f.set('url')} error=${f.errors.url} required=${false} hint="Where a click goes; the website's default link when empty." />
      <${Field} id="icon" label="Icon" type="url" value=${v.icon} onInput=${f.set('icon')} required=${false} />
      <${Field} id="image" label="Image" type="url" value=${v.image} onInput=${f.set('image')} required=${false} />
      <${Field} id="badge" label="Badge" type="url" value=${v.badge} onInput=${f.set('badge')} required=${false}
        hint="A small one-colour PNG with a transparent background (about 96×96) for Android's status bar." />
      <fieldset><legend>Buttons (up to 2)</legend>
        ${v.actions.map((a, i) => html`<div class="row">
          <${Field} id=${'action' + i + '-title'} label=${'Button ' + (i + 1) + ' text'} value=${a.title} required=${false}
            onInput=${(t) => f.set('actions')(v.actions.map((x, j) => (j === i ? { ...x, title: t } : x)))} />
          <${Field} id=${'action' + i + '-url'} label=${'Button ' + (i + 1) + ' link'} type="url" value=${a.url} required=${false}
            onInput=${(u) => f.set('actions')(v.actions.map((x, j) => (j === i ? { ...x, url: u } : x)))} />
        </div>`)}
      </fieldset>
      <${Translations} rows=${v.translations} onChange=${f.set('translations')} />
      <${Disclosure} label="More options">
        <${Field} id="ttl" label="Time to live (seconds)" type="number" value=${v.ttl} onInput=${f.set('ttl')} required=${false} error=${f.errors.ttl}
          hint="How long a push service keeps trying an offline browser: 1 to 2,419,200; 24 hours when empty." />
        <${Field} id="tag" label="Tag" value=${v.tag} onInput=${f.set('tag')} required=${false} hint="A later notification with the same tag replaces this one." />
        <label class="choice"><input type="checkbox" checked=${v.requireInteraction} onChange=${(e) => f.set('requireInteraction')(e.currentTarget.checked)} /> Stays until clicked or closed</label>
        <label class="choice"><input type="checkbox" checked=${v.transactional} onChange=${(e) => f.set('transactional')(e.currentTarget.checked)} /> Transactional (goes out in quiet hours, skips the frequency cap)</label>
      <//>
      <fieldset><legend>A/B test</legend>
        <label class="choice"><input type="checkbox" checked=${v.ab} onChange=${(e) => f.set('ab')(e.currentTarget.checked)} /> Test a version B</label>
        ${v.ab && html`<div>
          <p class="hint">Each browser gets version A (the fields above) or B; B's empty fields come from A.</p>
          <${Field} id="b-title" label="Version B title" value=${v.b.title} onInput=${setB('title')} required=${false} />
          <${Field} id="b-body" label="Version B message" value=${v.b.body} onInput=${setB('body')} required=${false} />
          <${Field} id="b-url" label="Version B link" type="url" value=${v.b.url} onInput=${setB('url')} required=${false} />
          <${Field} id="b-image" label="Version B image" type="url" value=${v.b.image} onInput=${setB('image')} required=${false} />
          <label class="choice"><input type="checkbox" checked=${v.autoWinner} onChange=${(e) => f.set('autoWinner')(e.currentTarget.checked)} /> Send the winner to the rest automatically</label>
          ${v.autoWinner && html`<div class="row">
            <${Field} id="testPercent" label="Test group (% of the audience)" type="number" value=${v.testPercent} onInput=${f.set('testPercent')} hint="1 to 90." />
            <${Field} id="afterHours" label="Pick the winner after (hours)" type="number" value=${v.afterHours} onInput=${f.set('afterHours')} hint="1 to 168." />
          </div>`}
        </div>`}
      </fieldset>
      ${v.ab && html`<${Preview} v=${{ ...v, title: v.b.title || v.title, body: v.b.body || v.body, url: v.b.url || v.url, image: v.b.image || v.image }}
        site=${site} heading="Version B preview" id="preview-b" />`}
      <fieldset><legend>Audience</legend>
        ${radio('audience', 'everyone', 'Everyone')}
        ${radio('audience', 'topic', 'A topic')}
        ${v.audience === 'topic' && picker('topicId', 'Topic', v.topicId, lists.topics, 'Choose a topic', f.errors.topicId)}
        ${radio('audience', 'segment', 'A segment')}
        ${v.audience === 'segment' && picker('segmentId', 'Segment', v.segmentId, lists.segments, 'Choose a segment', f.errors.segmentId)}
        ${radio('audience', 'filters', 'People matching rules')}
        ${v.audience === 'filters' && html`<${RuleBuilder} filters=${v.filters} onChange=${f.set('filters')} name="audience" legend="Audience rules" error=${f.errors.filters} />`}
        ${radio('audience', 'users', 'Specific people')}
        ${v.audience === 'users' && html`<div class="field"><label for="externalIds">External ids</label>
          <textarea id="externalIds" rows="2" value=${v.externalIds} onInput=${(e) => f.set('externalIds')(e.currentTarget.value)}
            aria-invalid=${f.errors.externalIds ? 'true' : undefined} aria-describedby="externalIds-hint"></textarea>
          <p class="hint" id="externalIds-hint">Your own user ids, separated by commas or line breaks.</p>
          ${f.errors.externalIds && html`<p class="error">${f.errors.externalIds}</p>`}</div>`}
      </fieldset>
      ${v.audience !== 'users' && html`<fieldset><legend>Leave out</legend>
        ${radio('exclude', 'none', 'Leave out nobody')}
        ${radio('exclude', 'segment', 'Leave out a segment')}
        ${v.exclude === 'segment' && picker('excludeSegmentId', 'Segment to leave out', v.excludeSegmentId, lists.segments, 'Choose a segment', f.errors.excludeSegmentId)}
        ${radio('exclude', 'filters', 'Leave out people matching rules')}
        ${v.exclude === 'filters' && html`<${RuleBuilder} filters=${v.excludeFilters} onChange=${f.set('excludeFilters')} name="exclusion" legend="Rules of whom to leave out" error=${f.errors.excludeFilters} />`}
      </fieldset>`}
      <fieldset><legend>When</legend>
        ${radio('when', 'now', 'Now')}
        ${radio('when', 'later', 'Later')}
        ${v.when === 'later' && html`<div class="row">
          <${Field} id="sendAt" label=${'Send at (' + v.sendZone + ')'} type="datetime-local" value=${v.sendAt} onInput=${f.set('sendAt')} error=${f.errors.sendAt} />
          <div class="field"><label for="sendZone">Time zone of the send time</label>
            <select id="sendZone" value=${v.sendZone} onChange=${(e) => f.set('sendZone')(e.currentTarget.value)}>
              ${[...new Set([v.sendZone, ...timeZones()])].map((z) => html`<option value=${z}>${z}</option>`)}</select></div></div>`}
        ${radio('when', 'local', 'At a time in each subscriber’s time zone')}
        ${v.when === 'local' && html`<${Field} id="localTime" label="Local time" type="time" value=${v.localTime} onInput=${f.set('localTime')} />`}
        ${radio('when', 'smart', 'At each subscriber’s most active hour')}
      </fieldset>
      <div class="actions"><button type="submit" disabled=${f.busy}>Review and send</button>
        <button type="button" class="secondary" onClick=${saveDraft} disabled=${pending}>Save draft</button>
        <button type="button" class="secondary" onClick=${test} disabled=${pending}>Send a test</button></div>
      ${tested && html`<p role="status">${tested}</p>`}
    </form>
    <${Preview} v=${v} site=${site} />
    ${confirm && html`<div class="dialog" role="dialog" aria-modal="true" aria-labelledby="confirm-title"
      onKeyDown=${(e) => { if (e.key === 'Escape') setConfirm(null); }}>
      <h2 id="confirm-title">Send “${confirm.request.title}”?</h2>
      <p>It goes to ${confirm.audience}${when(confirm.request, site, v.sendZone)}.</p>
      <div class="actions"><button type="button" ref=${sendButton} onClick=${send} disabled=${pending}>Send</button>
        <button type="button" class="secondary" onClick=${() => setConfirm(null)}>Back</button></div>
    </div>`}
  </section>`;
}

// ---- settings: keys and team ----

const allScopes = ['full', 'send', 'events:write', 'subscribers:read', 'subscribers:write', 'segments:write', 'settings:write', 'webhooks:write'];

function Keys({ site, canChange }) {
  const [keys, setKeys] = useState(null);
  const [created, setCreated] = useState(null); // the secret, shown once
  const f = useForm({ name: '', scopes: ['full'], expiresAt: '' });
  const load = () => call('GET', '/keys').then((a) => setKeys(a.keys), (err) => f.setErrors(errorsOf(err)));
  useEffect(() => { setCreated(null); load(); }, [site.projectId]);
  const toggle = (scope) => f.set('scopes')(f.values.scopes.includes(scope) ? f.values.scopes.filter((x) => x !== scope) : [...f.values.scopes, scope]);
  const create = f.submit(async (v) => {
    const body = { name: v.name.trim() || 'API key', scopes: v.scopes };
    if (v.expiresAt) body.expiresAt = zonedToUTC(v.expiresAt + 'T23:59', site.timezone); // the day's end on the website's clock
    const answer = await call('POST', '/keys', body);
    setCreated(answer);
    f.set('name')('');
    load();
  });
  return html`<section aria-labelledby="keys-title">
    <h2 id="keys-title">API keys</h2>
    <${FormError} errors=${f.errors} />
    ${created && html`<div class="notice" role="status">
      <p>The key “${created.key.name}” is made. Copy it now: it is never shown again.</p>
      <label for="new-key">New API key</label>
      <input id="new-key" readonly value=${created.apiKey} />
    </div>`}
    ${keys && keys.length === 0 && html`<p>No keys yet.</p>`}
    ${keys && keys.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">API keys</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Scopes</th><th scope="col">Expires</th><th scope="col">Last used</th>
        ${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${keys.map((k) => html`<tr>
        <td>${k.name}</td><td><code>${k.prefix}…</code></td><td>${k.scopes.join(', ')}</td>
        <td>${k.expires_at ? formatTime(k.expires_at, site.timezone) : 'never'}${k.expired ? ' (expired)' : ''}</td>
        <td>${k.last_used_at ? formatTime(k.last_used_at, site.timezone) : 'never'}</td>
        ${canChange && html`<td><button type="button" class="secondary" aria-label=${'Revoke ' + k.name} onClick=${actions(load, (err) => f.setErrors(errorsOf(err)))(
          'DELETE', '/keys/' + encodeURIComponent(k.id), undefined, 'Revoke the key “' + k.name + '”? Servers using it stop working.')}>Revoke</button></td>`}
      </tr>`)}</tbody></table></div>`}
    ${canChange && html`<form onSubmit=${create} novalidate>
      <h3>New key</h3>
      <${Field} id="key-name" label="Key name" value=${f.values.name} onInput=${f.set('name')} error=${f.errors.name} required=${false} />
      <fieldset><legend>Scopes</legend>
        ${allScopes.map((scope) => html`<label class="choice"><input type="checkbox" checked=${f.values.scopes.includes(scope)}
          onChange=${() => toggle(scope)} /> ${scope}</label>`)}
      </fieldset>
      <${Field} id="key-expires" label="Expires on" type="date" value=${f.values.expiresAt} onInput=${f.set('expiresAt')} required=${false} hint="Empty: never." />
      <button type="submit" disabled=${f.busy}>Create key</button>
    </form>`}
  </section>`;
}

function Team({ site, canChange }) {
  const [team, setTeam] = useState(null);
  const f = useForm({ email: '', role: 'viewer' });
  const load = () => call('GET', '/members').then(setTeam, (err) => f.setErrors(errorsOf(err)));
  useEffect(() => { load(); }, [site.projectId]);
  const invite = f.submit(async (v) => {
    await call('POST', '/members', { email: v.email.trim(), role: v.role });
    f.set('email')('');
    load();
  });
  const act = actions(load, (err) => f.setErrors(errorsOf(err)));
  const roles = ['owner', 'admin', 'viewer'];
  return html`<section aria-labelledby="team-title">
    <h2 id="team-title">Team</h2>
    <${FormError} errors=${f.errors} />
    ${team && html`<div class="scroll"><table>
      <caption class="visually-hidden">Team</caption>
      <thead><tr><th scope="col">Person</th><th scope="col">Role</th>${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>
        ${team.members.map((m) => html`<tr><td>${m.name ? m.name + ' · ' : ''}${m.email}</td>
          <td>${canChange ? html`<select aria-label=${'Role of ' + m.email} value=${m.role}
              onChange=${(e) => act('PUT', '/members/' + encodeURIComponent(m.userId), { role: e.currentTarget.value })()}>
              ${roles.map((r) => html`<option value=${r}>${r}</option>`)}</select>` : m.role}</td>
          ${canChange && html`<td><button type="button" class="secondary" aria-label=${'Remove ' + m.email}
            onClick=${act('DELETE', '/members/' + encodeURIComponent(m.userId))}>Remove</button></td>`}</tr>`)}
        ${team.invites.map((i) => html`<tr><td>${i.email} (invited)</td><td>${i.role}</td>
          ${canChange && html`<td><button type="button" class="secondary" aria-label=${'Withdraw the invitation of ' + i.email}
            onClick=${act('DELETE', '/members/invites/' + encodeURIComponent(i.email))}>Withdraw</button></td>`}</tr>`)}
      </tbody></table></div>`}
    ${canChange && html`<form onSubmit=${invite} novalidate class="inline">
      <h3>Invite someone</h3>
      <${Field} id="invite-email" label="Email to invite" type="email" value=${f.values.email} onInput=${f.set('email')} error=${f.errors.email} />
      <div class="field"><label for="invite-role">Role</label>
        <select id="invite-role" value=${f.values.role} onChange=${(e) => f.set('role')(e.currentTarget.value)}>
          ${roles.map((r) => html`<option value=${r}>${r}</option>`)}</select></div>
      <button type="submit" disabled=${f.busy}>Invite</button>
    </form>`}
  </section>`;
}

// settingsErrors puts a refused PUT /settings next to the field its
// message names (the API names the member first).
const settingsFields = [['timezone', 'timezone'], ['defaultUrl', 'defaultUrl'], ['defaultIcon', 'defaultIcon'], ['utm', 'utmSource'],
  ['quietHours', 'quietStart'], ['frequencyCap', 'capMax'], ['revenueCurrency', 'currency'], ['conversion', 'conversionEvents'],
  ['attributionWindowHours', 'attribution']];

function settingsErrors(err) {
  const out = errorsOf(err);
  if (err instanceof ApiError && out.form) {
    const hit = settingsFields.find(([member]) => err.message.startsWith(member) || err.message.includes(' ' + member));
    if (hit) {
      return { [hit[1]]: err.message };
    }
  }
  return out;
}

// websiteForm is the settings as the form edits them (text fields).
function websiteForm(st) {
  return {
    timezone: st.timezone, defaultUrl: st.defaultUrl || '', defaultIcon: st.defaultIcon || '',
    utmSource: st.utm.source, utmMedium: st.utm.medium, utmCampaign: st.utm.campaign,
    quiet: !!st.quietHours, quietStart: st.quietHours ? st.quietHours.start : '22:00', quietEnd: st.quietHours ? st.quietHours.end : '08:00',
    capped: !!st.frequencyCap, capMax: String(st.frequencyCap ? st.frequencyCap.max : 3), capHours: String(st.frequencyCap ? st.frequencyCap.hours : 24),
    currency: st.revenueCurrency || '', conversionEvents: st.conversionEvents.join(', '), attribution: String(st.attributionWindowHours),
  };
}

function WebsiteSettings({ site, canChange, onSaved }) {
  const f = useForm(null);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    call('GET', '/settings').then((a) => f.setValues(websiteForm(a.settings)), (err) => f.setErrors(errorsOf(err)));
  }, [site.projectId]);
  if (!f.values) {
    return html`<section><h2>Website</h2><${FormError} errors=${f.errors} /></section>`;
  }
  const v = f.values;
  const save = f.submit(async () => {
    setSaved(false);
    const body = {
      timezone: v.timezone, defaultUrl: v.defaultUrl.trim() || null, defaultIcon: v.defaultIcon.trim() || null,
      utm: { source: v.utmSource.trim(), medium: v.utmMedium.trim(), campaign: v.utmCampaign.trim() },
      quietHours: v.quiet ? { start: v.quietStart, end: v.quietEnd } : null,
      frequencyCap: v.capped ? { max: Number(v.capMax), hours: Number(v.capHours) } : null,
      revenueCurrency: v.currency.trim() || null,
      conversionEvents: v.conversionEvents.split(',').map((x) => x.trim()).filter(Boolean),
      attributionWindowHours: Number(v.attribution),
    };
    if (body.conversionEvents.length === 0) body.conversionEvents = null;
    const a = await call('PUT', '/settings', body);
    f.setValues(websiteForm(a.settings));
    setSaved(true);
    onSaved();
  }, settingsErrors);
  const text = (id, label, hint, type = 'text') => html`<${Field} id=${id} label=${label} type=${type} value=${v[id]}
    onInput=${f.set(id)} error=${f.errors[id]} required=${false} hint=${hint} />`;
  const check = (id, label) => html`<label class="choice"><input type="checkbox" checked=${v[id]} onChange=${(e) => f.set(id)(e.currentTarget.checked)} /> ${label}</label>`;
  return html`<section aria-labelledby="website-title">
    <h2 id="website-title">Website</h2>
    <form onSubmit=${save} novalidate>
      <fieldset disabled=${!canChange}>
        <legend class="visually-hidden">Website settings</legend>
        <${FormError} errors=${f.errors} />
        <div class="field"><label for="timezone">Time zone</label>
          <select id="timezone" value=${v.timezone} onChange=${(e) => f.set('timezone')(e.currentTarget.value)}>
            ${timeZones().map((z) => html`<option value=${z}>${z}</option>`)}</select>
          ${f.errors.timezone && html`<p class="error">${f.errors.timezone}</p>`}</div>
        ${text('defaultUrl', 'Default link', 'Where a send without a link goes; your website when empty.', 'url')}
        ${text('defaultIcon', 'Default icon', 'The logo of sends without an icon.', 'url')}
        ${text('utmSource', 'UTM source')} ${text('utmMedium', 'UTM medium')} ${text('utmCampaign', 'UTM campaign')}
        ${check('quiet', 'Quiet hours')}
        ${v.quiet && html`<div class="row">${text('quietStart', 'Quiet from', '', 'time')} ${text('quietEnd', 'Quiet until', '', 'time')}</div>`}
        ${check('capped', 'Frequency cap')}
        ${v.capped && html`<div class="row">${text('capMax', 'At most (pushes)', '', 'number')} ${text('capHours', 'Within (hours)', '', 'number')}</div>`}
        ${text('currency', 'Revenue currency', 'Three letters, such as EUR.')}
        ${text('conversionEvents', 'Conversion events', 'Event names, separated by commas.')}
        ${text('attribution', 'Attribution window (hours)', 'How long after a delivery a conversion counts for it.', 'number')}
        ${canChange && html`<div class="actions"><button type="submit" disabled=${f.busy}>Save settings</button>
          ${saved && html`<span role="status">Saved.</span>`}</div>`}
      </fieldset>
    </form>
  </section>`;
}

function IdentitySettings({ site, canChange }) {
  const [state, setState] = useState(null);
  const [secret, setSecret] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setSecret(null);
    call('GET', '/identity').then(setState, (err) => setError(messageOf(err)));
  }, [site.projectId]);
  const change = async (body) => {
    setError(null);
    try {
      const a = await call('PUT', '/identity', body);
      setState(a);
      setSecret(a.newSecret || null);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const modes = [['off', 'Off: a browser links any external id'], ['report', 'Report: links without a valid hash go through and are counted'],
    ['enforce', 'Enforce: links without a valid hash are refused']];
  return html`<section aria-labelledby="identity-title">
    <h2 id="identity-title">Identity verification</h2>
    <p class="hint">Your server signs each external id with a secret (HMAC-SHA256); the SDK's login(id, hash) passes the hash.</p>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${state && html`<fieldset disabled=${!canChange}><legend>Mode</legend>
      ${modes.map(([m, label]) => html`<label class="choice"><input type="radio" name="identity-mode" checked=${state.mode === m}
        onChange=${() => change({ mode: m })} /> ${label}</label>`)}
    </fieldset>
    ${secret && html`<div class="notice" role="status"><p>Copy the new secret now: it is never shown again.</p>
      <label for="identity-secret">New identity secret</label><input id="identity-secret" readonly value=${secret.secret} /></div>`}
    ${state.secrets.length === 0 ? html`<p>No secrets yet.</p>` : html`<div class="scroll"><table>
      <caption class="visually-hidden">Identity secrets</caption>
      <thead><tr><th scope="col">Secret</th><th scope="col">Made</th>${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${state.secrets.map((x) => html`<tr><td><code>${x.prefix}…</code></td><td>${formatTime(x.created_at, site.timezone)}</td>
        ${canChange && html`<td><button type="button" class="secondary" aria-label=${'Remove secret ' + x.prefix}
          onClick=${() => window.confirm('Remove this secret? Hashes made with it stop working.') && change({ removeSecretId: x.id })}>Remove</button></td>`}</tr>`)}</tbody>
    </table></div>`}
    ${canChange && state.secrets.length < 2 && html`<p><button type="button" onClick=${() => change({ addSecret: true })}>Add a secret</button></p>`}`}
  </section>`;
}

function Settings({ site, onMe }) {
  const canChange = site.role !== 'viewer';
  return html`<section>
    <h1>Settings</h1>
    ${!canChange && html`<p role="note">You can see this website as a viewer; an owner or admin can change it.</p>`}
    <${WebsiteSettings} site=${site} canChange=${canChange} onSaved=${onMe} />
    <${Keys} site=${site} canChange=${canChange} />
    <${IdentitySettings} site=${site} canChange=${canChange} />
    <${Team} site=${site} canChange=${canChange} />
  </section>`;
}

// ---- the signed-in shell ----

function Shell({ me, route, onMe, onSignOut }) {
  const websites = me.websites || [];
  const [current, setCurrent] = useState(() => localStorage.getItem('relaybell.project'));
  const site = websites.find((w) => w.projectId === current) || websites[0];
  // An owner or admin of an account adds websites to it; someone with no
  // account yet makes their own with their first website.
  const accounts = me.accounts || [];
  const canAddWebsite = accounts.length === 0 || accounts.some((a) => a.role !== 'viewer');

  setProject(site ? site.projectId : null);
  const choose = (projectId) => {
    localStorage.setItem('relaybell.project', projectId);
    setCurrent(projectId);
  };
  const added = async (w) => {
    choose(w.projectId);
    onMe(await call('GET', '/auth/me'));
    go('install');
  };
  let page;
  if (!site && !canAddWebsite) {
    page = html`<section><h1>No website yet</h1><p>Ask the owner of a RelayBell account to invite you to theirs.</p></section>`;
  } else if (!site || route.path === 'websites/new') {
    page = html`<${AddWebsite} first=${!site} onAdded=${added} />`;
  } else if (route.path === 'install') {
    page = html`<${Install} site=${site} me=${me} />`;
  } else if (route.path === 'people') {
    page = html`<${Audience} site=${site} />`;
  } else if (route.path.startsWith('people/')) {
    page = html`<${Person} site=${site} id=${decodeURIComponent(route.path.slice('people/'.length))} />`;
  } else if (route.path === 'segments') {
    page = html`<${SegmentsAndTopics} site=${site} />`;
  } else if (route.path === 'webhooks') {
    page = html`<${Webhooks} site=${site} />`;
  } else if (route.path.startsWith('webhooks/')) {
    const [id, , deliveryId] = route.path.slice('webhooks/'.length).split('/');
    page = html`<${WebhookLog} site=${site} id=${id} deliveryId=${deliveryId} />`;
  } else if (route.path === 'settings') {
    page = html`<${Settings} site=${site} onMe=${async () => onMe(await call('GET', '/auth/me'))} />`;
  } else if (route.path === 'compose' && site.role !== 'viewer') {
    page = html`<${Composer} site=${site} />`;
  } else if (route.path.startsWith('compose/') && site.role !== 'viewer') {
    page = html`<${Composer} site=${site} draftId=${route.path.slice('compose/'.length)} key=${route.path} />`;
  } else if (route.path === 'notifications') {
    page = html`<${Notifications} site=${site} status=${route.query.get('status') || ''} key=${route.query.toString()} />`;
  } else if (route.path.startsWith('notifications/')) {
    page = html`<${NotificationDetail} site=${site} id=${route.path.slice('notifications/'.length)} />`;
  } else {
    page = html`<${Home} site=${site} />`;
  }
  const link = (path, label) => html`<a href=${'#/' + path} aria-current=${route.path === path ? 'page' : undefined}>${label}</a>`;
  return html`<div class="shell">
    <header>
      <span class="brand"><span class="logo" aria-hidden="true"></span>RelayBell</span>
      ${site && html`<span class="switcher"><label for="website">Website</label>
        <select id="website" value=${site.projectId} onChange=${(e) => choose(e.currentTarget.value)}>
          ${websites.map((w) => html`<option value=${w.projectId}>${w.name}</option>`)}
        </select></span>`}
      <nav aria-label="Main">${site && [link('', 'Home'), site.role !== 'viewer' && link('compose', 'New notification'), link('notifications', 'Notifications'),
        link('people', 'Audience'), link('segments', 'Segments'), link('webhooks', 'Webhooks'), link('install', 'Install'), link('settings', 'Settings')]}
        ${canAddWebsite && link('websites/new', 'Add website')}</nav>
      <span class="who">${me.user.email}</span>
      <button type="button" onClick=${onSignOut}>Sign out</button>
    </header>
    <main key=${site ? site.projectId : ''}>${page}</main>
  </div>`;
}

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
