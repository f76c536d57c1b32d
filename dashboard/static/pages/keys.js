// API keys: scopes and expiry, the secret shown once, revoking.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { errorsOf, actions, Alert, Field, useForm, FormError, Copy } from '../forms.js';
import { useLoad } from '../lists.js';
import { formatTime, zonedToUTC } from '../format.js';

const allScopes = ['full', 'send', 'events:write', 'subscribers:read', 'subscribers:write', 'segments:write', 'settings:write', 'webhooks:write'];

export function Keys({ site, canChange }) {
  const list = useLoad(() => call('GET', '/keys'), [site.projectId]);
  const keys = list.data && list.data.keys;
  const load = list.reload;
  const [created, setCreated] = useState(null); // the secret, shown once
  const f = useForm({ name: '', scopes: ['full'], expiresAt: '' });
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
    <${Alert} error=${list.error} />
    <${FormError} errors=${f.errors} />
    ${created && html`<div class="notice" role="status">
      <p>The key “${created.key.name}” is made. Copy it now: it is never shown again.</p>
      <label for="new-key">New API key</label>
      <input id="new-key" readonly value=${created.apiKey} />
      <${Copy} source="new-key" label="Copy API key" />
    </div>`}
    ${keys && keys.length === 0 && html`<p class="empty">No keys yet. ${canChange ? 'Create one below' : 'An owner or admin creates them here'} to call the API from your server: sends, events and your audience.</p>`}
    ${keys && keys.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">API keys</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Scopes</th><th scope="col">Expires</th><th scope="col">Last used</th>
        ${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${keys.map((k) => html`<tr>
        <td><span class="cut" title=${k.name}>${k.name}</span></td><td><code>${k.prefix}…</code></td><td>${k.scopes.join(', ')}</td>
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
