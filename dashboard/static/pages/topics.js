// Topics with their opt-ins.
import { html } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { errorsOf, actions, Alert, Field, useForm, FormError } from '../forms.js';
import { useLoad } from '../lists.js';
import { numbers } from '../format.js';

export function Topics({ site }) {
  const canChange = site.role !== 'viewer';
  const list = useLoad(() => call('GET', '/topics'), [site.projectId]);
  const topics = list.data && list.data.topics;
  const load = list.reload;
  const f = useForm({ name: '', slug: '' });
  const create = f.submit(async (v) => {
    const body = { name: v.name };
    if (v.slug.trim()) body.slug = v.slug.trim();
    await call('POST', '/topics', body);
    f.setValues({ name: '', slug: '' });
    load();
  }, (err) => (err instanceof ApiError && /slug/i.test(err.message) ? { slug: err.message } : errorsOf(err)));
  return html`<section aria-labelledby="topics-title">
    <h2 id="topics-title">Topics</h2>
    <${Alert} error=${list.error} />
    <${FormError} errors=${f.errors} />
    ${topics && topics.length === 0 && html`<p class="empty">No topics yet. ${canChange ? 'Make one below' : 'An owner or admin makes them here'}: subscribers opt in to topics (news, deals…) through the SDK, and a send can go to one topic’s subscribers.</p>`}
    ${topics && topics.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Topics</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Slug</th><th scope="col">Opted in</th>${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${topics.map((tp) => html`<tr><td><span class="cut" title=${tp.name}>${tp.name}</span></td><td><code>${tp.slug}</code></td><td class="num">${numbers.format(tp.subscribers)}</td>
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
