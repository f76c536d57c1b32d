// A person's profile: their labels, browsers, sends, journeys (with each
// enrolment's history) and events; erasure.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { go } from '../router.js';
import { actions, Alert } from '../forms.js';
import { useLoad, Breakdown } from '../lists.js';
import { numbers, formatTime } from '../format.js';
import { Enrolments } from './enrolments.js';

export function Person({ site, id }) {
  const load = useLoad(() => call('GET', '/subscribers/' + encodeURIComponent(id) + '/profile'), [id, site.projectId]);
  const [error, setError] = useState(null); // the erasure refused
  const p = load.data;
  const erase = actions(() => go('people'), setError)(
    'DELETE', '/subscribers/' + encodeURIComponent(id), undefined, 'Erase this person and everything about them? This cannot be undone.');
  if (load.error) {
    return html`<section><h1>Person</h1><${Alert} error=${load.error} /></section>`;
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
    <${Breakdown} title="Labels" rows=${p.tags.map((t) => ({ key: t.key, value: t.value === null ? '' : t.value }))} columns=${[['key', 'Label'], ['value', 'Value']]}
      empty="No labels. Your server sets them with an import or the Audience page’s bulk labels; sends can then target them." />
    <${Breakdown} title="Browsers" rows=${p.endpoints.map((e) => ({ device: e.device, seen: formatTime(e.last_seen_at, site.timezone) }))} columns=${[['device', 'Device'], ['seen', 'Last seen']]}
      empty="No browser: this person was imported and is reached once they allow notifications on your website." />
    <${Breakdown} title="Sends" rows=${p.sends.map((x) => ({ title: x.title, type: x.type, at: formatTime(x.created_at, site.timezone) }))} columns=${[['title', 'Title'], ['type', 'Type'], ['at', 'Sent']]}
      empty="No sends reached this person yet." />
    <${Enrolments} site=${site} id=${id} />
    <${Breakdown} title="Events" rows=${p.events.map((e) => ({ name: e.name, properties: JSON.stringify(e.properties), at: formatTime(e.created_at, site.timezone) }))}
      columns=${[['name', 'Event'], ['properties', 'Properties'], ['at', 'When']]}
      empty="No events yet. Your server posts them (POST /events) or the page calls RelayBell.track; purchases count as conversions." />
    <${Alert} error=${error} />
    ${site.role !== 'viewer' && html`<p><button type="button" class="secondary" onClick=${erase}>Erase this person</button></p>`}
  </section>`;
}
