// Goals (issue 32): what counts as success, an event or a label taking a
// value, and the sends credited with it. The list shows each goal's
// results by source (an automation, a journey, a notification), each
// linked to its page; the form makes and changes goals; delete asks first.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { Alert, Field, useForm, FormError, errorsOf, actions } from '../forms.js';
import { useLoad } from '../lists.js';
import { numbers } from '../format.js';

// sourceNames are a result's sources in words.
const sourceNames = { automation: 'Automation', journey: 'Journey', notification: 'Notification' };

// goalText is what reaches goal g, in words.
export function goalText(g) {
  return g.tag ? 'Label ' + g.tag.name + (g.tag.value ? ' = ' + g.tag.value : '') : 'Event ' + g.event;
}

// goalValues is the form of goal g, or of a new one.
function goalValues(g) {
  return {
    name: g ? g.name : '', kind: g && g.tag ? 'tag' : 'event', event: (g && g.event) || '',
    tagName: (g && g.tag && g.tag.name) || '', tagValue: (g && g.tag && g.tag.value) || '', windowHours: g ? String(g.windowHours) : '24',
  };
}

// goalBody is the form v as the body of POST or PUT /goals: every member,
// so that a change from an event to a label (or back) is whole.
export function goalBody(v) {
  const body = { name: v.name };
  if (v.kind === 'tag') body.tag = { name: v.tagName.trim(), value: v.tagValue };
  else body.event = v.event;
  if (v.windowHours.trim()) body.windowHours = Number(v.windowHours);
  return body;
}

// goalError maps a refusal to the field it concerns.
function goalError(err, v) {
  if (!(err instanceof ApiError)) return errorsOf(err);
  const at = { name_required: 'name', invalid_name: 'name', event_required: 'event', invalid_label: 'tagName', reserved_label: 'tagName',
    invalid_window: 'windowHours', invalid_goal: v.kind === 'tag' ? 'tagName' : 'event' };
  return at[err.code] ? { [at[err.code]]: err.message } : errorsOf(err);
}

// GoalForm makes a goal (goal absent) or changes goal; done(saved) ends it.
function GoalForm({ goal, done }) {
  const f = useForm(goalValues(goal));
  const v = f.values;
  const save = f.submit(async () => {
    if (v.windowHours.trim() && !/^\d+$/.test(v.windowHours.trim())) {
      f.setErrors({ windowHours: 'A whole number of hours, 1 to 2,160.' });
      return;
    }
    const body = goalBody(v);
    done(goal ? await call('PUT', '/goals/' + encodeURIComponent(goal.id), body) : await call('POST', '/goals', body));
  }, (err) => goalError(err, v));
  return html`<form class="goal-form" onSubmit=${save} novalidate aria-label=${goal ? 'Goal “' + goal.name + '”' : 'New goal'}>
    <h2>${goal ? 'Change goal “' + goal.name + '”' : 'New goal'}</h2>
    <${FormError} errors=${f.errors} />
    <${Field} id="goal-name" label="Goal name" value=${v.name} onInput=${f.set('name')} error=${f.errors.name} />
    <fieldset><legend>Reached when</legend>
      <label class="choice"><input type="radio" name="goal-kind" checked=${v.kind === 'event'} onChange=${() => f.set('kind')('event')} /> An event arrives</label>
      <label class="choice"><input type="radio" name="goal-kind" checked=${v.kind === 'tag'} onChange=${() => f.set('kind')('tag')} /> A label takes a value</label>
      ${v.kind === 'event' ? html`<${Field} id="goal-event" label="Event name" value=${v.event} onInput=${f.set('event')} error=${f.errors.event}
          hint="Any event your website posts or tracks, such as order.paid; its properties.value (else revenue) is what it is worth." />`
        : html`<div class="row">
          <${Field} id="goal-tagName" label="Label name" value=${v.tagName} onInput=${f.set('tagName')} error=${f.errors.tagName} />
          <${Field} id="goal-tagValue" label="Label value" value=${v.tagValue} onInput=${f.set('tagValue')} error=${f.errors.tagValue} required=${false}
            hint="Empty for a label without a value." /></div>`}
    </fieldset>
    <${Field} id="goal-windowHours" label="Credit window (hours)" type="number" value=${v.windowHours} onInput=${f.set('windowHours')}
      error=${f.errors.windowHours} hint="A reach is credited to the send the person last clicked, else last had delivered, this long before it: 1 to 2,160." />
    <div class="actions"><button type="submit" disabled=${f.busy}>${goal ? 'Save goal' : 'Create goal'}</button>
      <button type="button" class="secondary" onClick=${() => done(null)}>Cancel</button></div>
  </form>`;
}

// Results is a goal's results table, each source linked to its page.
function Results({ goal, names }) {
  if (goal.results.length === 0) return html`<p class="empty">No conversions credited yet.</p>`;
  const link = (r) => {
    const name = names[r.source + ':' + r.id];
    const path = { automation: 'automations/', journey: 'journeys/', notification: 'notifications/' }[r.source];
    return path ? html`<a href=${'#/' + path + encodeURIComponent(r.id)}>${name || r.id}</a>` : r.id;
  };
  return html`<div class="scroll"><table>
    <caption class="visually-hidden">${'Results of ' + goal.name}</caption>
    <thead><tr><th scope="col">Source</th><th scope="col">Sent by</th><th scope="col">Conversions</th><th scope="col">Revenue</th></tr></thead>
    <tbody>${goal.results.map((r) => html`<tr><td>${sourceNames[r.source] || r.source}</td><td><span class="cut">${link(r)}</span></td>
      <td class="num">${numbers.format(r.conversions)}</td><td class="num">${numbers.format(r.revenue)}</td></tr>`)}</tbody>
  </table></div>`;
}

export function Goals({ site }) {
  const canChange = site.role !== 'viewer';
  const list = useLoad(() => call('GET', '/goals'), [site.projectId]);
  // The names of what results link to: automations and journeys.
  const sources = useLoad(() => Promise.all([call('GET', '/automations'), call('GET', '/journeys').catch(() => ({ journeys: [] }))]), [site.projectId]);
  const names = {};
  if (sources.data) {
    for (const a of sources.data[0].automations) names['automation:' + a.id] = a.name;
    for (const j of sources.data[1].journeys) names['journey:' + j.id] = j.name;
  }
  const [editing, setEditing] = useState(null); // null, 'new', or the goal changed
  const [failed, setFailed] = useState(null); // why a deletion failed
  const act = actions(() => {
    setFailed(null);
    list.reload();
  }, setFailed);
  const done = (saved) => {
    setEditing(null);
    if (saved) list.reload();
  };
  const goals = list.data && list.data.goals;
  return html`<section>
    <h1>Goals</h1>
    <p>What counts as success, an event or a label taking a value, and which sends get the credit: the one the person last clicked, else last had delivered, within the goal’s window.</p>
    ${canChange && !editing && html`<p><button type="button" onClick=${() => setEditing('new')}>New goal</button></p>`}
    ${editing && html`<${GoalForm} goal=${editing === 'new' ? null : editing} done=${done} key=${editing === 'new' ? 'new' : editing.id} />`}
    <${Alert} error=${list.error} />
    <${Alert} error=${failed} what="The deletion failed" />
    <${Alert} error=${sources.error} what="The names of automations and journeys did not load" />
    ${!goals && !list.error && html`<p role="status">Loading…</p>`}
    ${goals && goals.length === 0 && html`<p class="empty">No goals yet. ${canChange ? 'Make one with New goal' : 'An owner or admin makes them here'}:
      an order paid, for one, credits the push that brought the person back.</p>`}
    ${goals && goals.map((g) => html`<article class="goal" key=${g.id} aria-labelledby=${'goal-' + g.id}>
      <h2 id=${'goal-' + g.id}>${g.name}</h2>
      <dl class="facts"><dt>Reached by</dt><dd>${goalText(g)}</dd><dt>Credit window</dt><dd>${numbers.format(g.windowHours) + ' h'}</dd>
        <dt>Conversions, revenue</dt><dd>${numbers.format(g.results.reduce((n, r) => n + r.conversions, 0))}, ${numbers.format(g.results.reduce((n, r) => n + r.revenue, 0))}</dd></dl>
      <${Results} goal=${g} names=${names} />
      ${canChange && html`<div class="actions">
        <button type="button" class="secondary" aria-label=${'Change goal ' + g.name} onClick=${() => setEditing(g)}>Change</button>
        <button type="button" class="secondary" aria-label=${'Delete goal ' + g.name}
          onClick=${act('DELETE', '/goals/' + encodeURIComponent(g.id), undefined, 'Delete the goal “' + g.name + '”? Its results go with it.')}>Delete</button>
      </div>`}
    </article>`)}
  </section>`;
}
