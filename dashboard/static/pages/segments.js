// Segments: their sizes, rules and what waits on them; the rule builder
// to make and change one. The page holds the topics too.
import { html, useState, useRef } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { errorsOf, actions, Alert, Field, useForm, FormError } from '../forms.js';
import { useLoad } from '../lists.js';
import { ruleError, buildable, apiFilters, builderFilters, describeFilters, RuleBuilder } from '../rules.js';
import { numbers, formatTime } from '../format.js';
import { Topics } from './topics.js';

function Segments({ site }) {
  const canChange = site.role !== 'viewer';
  const [editing, setEditing] = useState(null); // the segment being changed, or null for a new one
  const f = useForm({ name: '' });
  const [filters, setFilters] = useState(builderFilters(null));
  const form = useRef(null);
  const list = useLoad(() => call('GET', '/segments'), [site.projectId]);
  const sizes = useLoad(() => call('GET', '/audience/segments'), [site.projectId]);
  const segments = list.data && list.data.segments;
  const counts = {};
  for (const g of (sizes.data && sizes.data.segments) || []) counts[g.id] = g;
  const load = () => {
    list.reload();
    sizes.reload();
  };
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
    <${Alert} error=${list.error} />
    <${Alert} error=${sizes.error} what="The sizes of the segments did not load" />
    <${FormError} errors=${f.errors} />
    ${segments && segments.length === 0 && html`<p class="empty">No segments yet. ${canChange ? 'Make one below' : 'An owner or admin makes them here'}: a segment is a saved set of rules (country, language, a label…) to send to, or to leave out of a send.</p>`}
    ${segments && segments.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Segments</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Browsers</th><th scope="col">Rules</th><th scope="col">Used by</th>${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${segments.map((g) => html`<tr><td><span class="cut" title=${g.name}>${g.name}</span></td><td class="num">${size(g)}</td>
        <td><span class="cut" title=${describeFilters(g.filters)}>${describeFilters(g.filters)}</span></td><td>${uses(g)}</td>
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

export function SegmentsAndTopics({ site }) {
  return html`<section><h1>Segments and topics</h1><${Segments} site=${site} /><${Topics} site=${site} /></section>`;
}
