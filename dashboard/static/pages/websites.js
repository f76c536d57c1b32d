// Adding a website.
import { html } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { Field, useForm, FormError } from '../forms.js';
import { timeZones } from '../format.js';

export function AddWebsite({ onAdded, first }) {
  const here = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  const f = useForm({ name: '', url: '', timezone: here });
  const add = async (v) => {
    const answer = await call('POST', '/websites', v);
    await onAdded(answer.website);
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

