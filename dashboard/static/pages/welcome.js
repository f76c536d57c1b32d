// The welcome notification (issue 36): sent once to each new browser, a
// delay after it subscribed. Its sends are listed with the others, marked
// as welcome.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { Alert, Field, useForm, FormError, errorsOf, selectField } from '../forms.js';
import { useLoad } from '../lists.js';

function welcomeValues(w) {
  return { enabled: w.enabled, delaySeconds: String(w.delaySeconds), title: w.title || '', body: w.body || '', url: w.url || '',
    icon: w.icon || '', templateId: w.templateId || '' };
}

// shown are the content members the form edits; the welcome's others
// (image, buttons, languages… set through the API) are sent back as they
// were, since PUT /welcome replaces the content as a whole.
const shown = ['title', 'body', 'url', 'icon'];

// welcomeBody is form v as the body of PUT /welcome over the stored
// welcome: a template, or the content members (those left empty are not
// sent).
export function welcomeBody(v, stored = {}) {
  const body = { enabled: v.enabled, delaySeconds: v.delaySeconds.trim() === '' ? 0 : Number(v.delaySeconds) };
  if (v.templateId) {
    body.templateId = v.templateId;
    return body;
  }
  body.templateId = null;
  for (const [k, x] of Object.entries(stored)) {
    if (!['enabled', 'delaySeconds', 'templateId', ...shown].includes(k)) body[k] = x;
  }
  for (const k of shown) {
    if (v[k].trim()) body[k] = v[k].trim();
  }
  return body;
}

const fieldOf = { title_required: 'title', invalid_url: 'url', invalid_icon: 'icon' };

function WelcomeForm({ welcome, canChange, site }) {
  const f = useForm(welcomeValues(welcome));
  const list = useLoad(() => call('GET', '/templates'), [site.projectId]);
  const templates = list.data ? list.data.templates.map((t) => [t.id, t.name]) : [];
  const select = selectField(f, !!list.data);
  const v = f.values;
  const [saved, setSaved] = useState(false);
  const save = f.submit(async () => {
    setSaved(false);
    await call('PUT', '/welcome', welcomeBody(v, welcome));
    setSaved(true);
  }, (err) => {
    if (!(err instanceof ApiError)) return errorsOf(err);
    if (err.code === 'template_not_found') return { templateId: err.message };
    if (err.code === 'invalid_welcome') {
      return { [/templateId/.test(err.message) ? 'templateId' : /delay/.test(err.message) ? 'delaySeconds' : 'form']: err.message };
    }
    return { [fieldOf[err.code] || 'form']: err.message };
  });
  return html`<form onSubmit=${save} novalidate aria-label="Welcome notification">
    <${FormError} errors=${{ form: f.errors.form }} />
    ${saved && html`<p role="status">Saved.</p>`}
    <label class="choice"><input type="checkbox" checked=${v.enabled} onChange=${(e) => f.set('enabled')(e.currentTarget.checked)} /> Send a welcome notification to each new browser</label>
    <${Field} id="welcome-delay" label="Delay (seconds)" type="number" value=${v.delaySeconds} onInput=${f.set('delaySeconds')} error=${f.errors.delaySeconds}
      hint="After the browser subscribed: 0 to 86,400 (a day)." required=${false} />
    <${Field} id="welcome-title" label="Title" value=${v.title} onInput=${f.set('title')} error=${f.errors.title} required=${false} />
    <${Field} id="welcome-body" label="Message" value=${v.body} onInput=${f.set('body')} error=${f.errors.body} required=${false} />
    <${Field} id="welcome-url" label="Link" value=${v.url} onInput=${f.set('url')} error=${f.errors.url} required=${false} hint="Opened on a click; the website’s default link when empty." />
    <${Field} id="welcome-icon" label="Icon URL" value=${v.icon} onInput=${f.set('icon')} error=${f.errors.icon} required=${false} hint="The website’s default icon (its logo) when empty." />
    ${list.data ? select('templateId', 'Template', templates, { empty: 'None: the content above', none: 'No templates yet: make one on the Templates page.' })
      : !list.error && html`<p role="status">Loading the templates…</p>`}
    <${Alert} error=${list.error} what="The templates did not load" />
    ${canChange && html`<div class="actions"><button type="submit" disabled=${f.busy}>Save welcome</button></div>`}
  </form>`;
}

export function Welcome({ site }) {
  const w = useLoad(() => call('GET', '/welcome'), [site.projectId]);
  return html`<section>
    <h1>Welcome notification</h1>
    <p>Sent once to each browser that subscribes, never again to one that subscribes again. Its sends are in Notifications, marked Welcome.</p>
    <${Alert} error=${w.error} />
    ${!w.data && !w.error && html`<p role="status">Loading…</p>`}
    ${w.data && html`<${WelcomeForm} welcome=${w.data} site=${site} canChange=${site.role !== 'viewer'} />`}
  </section>`;
}
