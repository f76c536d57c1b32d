// Webhooks: the list, create (the secret shown once), edit, on/off.
import { html, useState, useRef } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { errorsOf, actions, Alert, Field, useForm, FormError, Copy } from '../forms.js';
import { useLoad } from '../lists.js';
import { formatTime } from '../format.js';

export function Webhooks({ site }) {
  const canChange = site.role !== 'viewer';
  const hooks = useLoad(() => call('GET', '/webhooks'), [site.projectId]);
  const list = hooks.data;
  const load = hooks.reload;
  const [created, setCreated] = useState(null);
  const [editing, setEditing] = useState(null); // the webhook being changed, or null for a new one
  const f = useForm({ url: '', events: [] });
  const form = useRef(null);
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
    <${Alert} error=${hooks.error} />
    <${FormError} errors=${f.errors} />
    ${created && html`<div class="notice" role="status">
      <p>The webhook to <span class="url">${created.url}</span> is made. Copy its signing secret now: it is never shown again.</p>
      <label for="new-secret">Signing secret</label><input id="new-secret" readonly value=${created.secret} />
      <${Copy} source="new-secret" label="Copy signing secret" /></div>`}
    ${list && list.webhooks.length === 0 && html`<p class="empty">No webhooks yet. ${canChange ? 'Add one below' : 'An owner or admin adds them here'} to get sends’ results, clicks and new subscribers on your server as they happen, each signed so your server can check it came from RelayBell.</p>`}
    ${list && list.webhooks.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Webhooks</caption>
      <thead><tr><th scope="col">Address</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Last answer</th>
        ${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${list.webhooks.map((h) => html`<tr>
        <td><a class="cut" href=${'#/webhooks/' + h.id} title=${h.url}>${h.url}</a></td><td>${h.events.length ? h.events.join(', ') : 'every event'}</td>
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
