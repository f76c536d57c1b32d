// Automations: the website's automations with their figures (issue 32),
// each opening its editor (automation.js); pausing and activating from the
// list.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { actions, Alert } from '../forms.js';
import { useLoad } from '../lists.js';
import { describeFilters } from '../rules.js';
import { numbers } from '../format.js';

// statusNames are an automation's statuses in words.
export const statusNames = { draft: 'Draft', active: 'Active', paused: 'Paused' };

// figures are the columns of an automation's stats, in the list's order.
export const figures = [['triggered', 'Triggered'], ['pending', 'Pending'], ['sent', 'Sent'], ['delivered', 'Delivered'],
  ['clicked', 'Clicked'], ['converted', 'Converted'], ['revenue', 'Revenue'], ['stopped', 'Stopped']];

// triggerText is what starts an automation, in words; topics and segments
// name the ids (a deleted one shows as "a deleted …").
export function triggerText(t, topics, segments) {
  const named = (list, id, what) => {
    const found = list.find((x) => x.id === id);
    return found ? '“' + found.name + '”' : 'a deleted ' + what;
  };
  switch (t.type) {
    case 'event':
      return 'Event ' + t.event + (t.conditions ? ' where ' + describeFilters(t.conditions) : '');
    case 'subscribed':
      return 'A browser subscribes';
    case 'topic_opt_in':
      return 'Opt-in to ' + named(topics, t.topicId, 'topic');
    case 'segment_entered':
      return 'Enters ' + named(segments, t.segmentId, 'segment');
  }
  return t.type;
}

export function Automations({ site }) {
  const canChange = site.role !== 'viewer';
  const list = useLoad(() => call('GET', '/automations'), [site.projectId]);
  const names = useLoad(() => Promise.all([call('GET', '/topics'), call('GET', '/segments')]), [site.projectId]);
  const topics = (names.data && names.data[0].topics) || [];
  const segments = (names.data && names.data[1].segments) || [];
  const autos = list.data && list.data.automations;
  const [failed, setFailed] = useState(null); // why a pause or activation failed
  const act = actions(() => {
    setFailed(null);
    list.reload();
  }, setFailed);
  const toggle = (a) => {
    const to = a.status === 'active' ? 'paused' : 'active';
    return act('PUT', '/automations/' + encodeURIComponent(a.id), { status: to });
  };
  return html`<section>
    <h1>Automations</h1>
    <p>Pushes that go to one person a while after something they did: a cart left, a first subscription, a topic chosen, a segment entered.</p>
    ${canChange && html`<p><a class="button" href="#/automations/new">New automation</a></p>`}
    <${Alert} error=${list.error} />
    <${Alert} error=${failed} what="The change failed" />
    <${Alert} error=${names.error} what="The topics and segments did not load" />
    ${!autos && !list.error && html`<p role="status">Loading…</p>`}
    ${autos && autos.length === 0 && html`<p class="empty">No automations yet. ${canChange ? 'Make one with New automation' : 'An owner or admin makes them here'}:
      an abandoned-cart reminder, for one, sends a push an hour after a cart is updated, unless a purchase comes first.</p>`}
    ${autos && autos.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Automations</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Trigger</th>
        ${figures.map(([, label]) => html`<th scope="col">${label}</th>`)}
        ${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${autos.map((a) => html`<tr>
        <th scope="row">${canChange ? html`<a href=${'#/automations/' + encodeURIComponent(a.id)}>${a.name}</a>` : a.name}</th>
        <td>${statusNames[a.status] || a.status}</td>
        <td><span class="cut" title=${triggerText(a.trigger, topics, segments)}>${triggerText(a.trigger, topics, segments)}</span></td>
        ${figures.map(([k]) => html`<td class="num">${numbers.format(a.stats[k])}</td>`)}
        ${canChange && html`<td class="buttons">${a.status !== 'draft' && html`<button type="button" class="secondary"
          aria-label=${(a.status === 'active' ? 'Pause automation ' : 'Activate automation ') + a.name} onClick=${toggle(a)}>
          ${a.status === 'active' ? 'Pause' : 'Activate'}</button>`}</td>`}
      </tr>`)}</tbody>
    </table></div>`}
  </section>`;
}
