// A send's detail: its funnel and breakdowns, cancel, duplicate, a draft's
// edit and delete.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { go } from '../router.js';
import { actions, Alert } from '../forms.js';
import { useLoad, Breakdown } from '../lists.js';
import { representable, duplicate } from '../sends.js';
import { numbers, formatTime } from '../format.js';
import { isHTTPURL } from './budget.js';

export function NotificationDetail({ site, id }) {
  const load = useLoad(() => call('GET', '/notifications/' + encodeURIComponent(id)), [id, site.projectId]);
  const [error, setError] = useState(null); // a cancel or delete refused
  const d = load.data;
  if (load.error) {
    return html`<section><h1>Notification</h1><${Alert} error=${load.error} /></section>`;
  }
  if (!d) {
    return html`<p role="status">Loading…</p>`;
  }
  const n = d.notification;
  const money = d.currency ? new Intl.NumberFormat(undefined, { style: 'currency', currency: d.currency }) : numbers;
  const steps = [['recipients', 'Recipients'], ['sent', 'Sent'], ['delivered', 'Delivered'], ['clicked', 'Clicked'], ['converted', 'Converted']];
  const top = Math.max(1, d.funnel.recipients, d.funnel.sent);
  const path = '/notifications/' + encodeURIComponent(id);
  const cancel = actions(() => { setError(null); load.reload(); }, setError)('POST', path + '/cancel', undefined, 'Cancel this send? It will not go out.');
  const removeDraft = actions(() => go('notifications?status=draft'), setError)('DELETE', path, undefined, 'Delete this draft?');
  return html`<section>
    <p><a href="#/notifications">All notifications</a></p>
    <h1>${n.title}</h1>
    ${n.body && html`<p>${n.body}</p>`}
    <dl class="facts">
      <dt>Status</dt><dd>${n.status.replace(/_/g, ' ')}${n.error ? ' (' + n.error + ')' : ''}</dd>
      <dt>Audience</dt><dd>${n.targetSummary}</dd>
      ${n.url && html`<dt>Link</dt><dd>${isHTTPURL(n.url) ? html`<a href=${n.url} rel="noopener noreferrer" target="_blank">${n.url}</a>` : n.url}</dd>`}
      <dt>Created</dt><dd>${formatTime(n.created_at, site.timezone)}</dd>
      ${n.scheduled_at && html`<dt>Scheduled</dt><dd>${formatTime(n.scheduled_at, site.timezone)}</dd>`}
      ${n.local_time && html`<dt>Timing</dt><dd>${n.local_time === 'smart' ? 'Each subscriber’s most active hour' : n.local_time + ' in each subscriber’s time zone'}</dd>`}
      ${n.ab_test && n.ab_test.autoWinner && html`<dt>A/B test</dt><dd>${'Test group ' + numbers.format(n.ab_test.testPercent) + ' %, winner after ' + numbers.format(n.ab_test.afterHours) + ' h'}</dd>`}
      ${n.translations && Object.keys(n.translations).length > 0 && html`<dt>Translations</dt><dd>${Object.keys(n.translations).join(', ')}</dd>`}
      <dt>Revenue</dt><dd>${money.format(d.revenue)}</dd>
      <dt>Conversions</dt><dd>${numbers.format(n.conversions)} (${numbers.format(d.conversionsBy.clickThrough)} after a click, ${numbers.format(d.conversionsBy.influenced)} influenced)</dd>
    </dl>
    <${Alert} error=${error} />
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
    <${Breakdown} title="Devices" rows=${d.devices} columns=${[['device', 'Device'], ['sent', 'Sent'], ['clicked', 'Clicked']]}
      empty="None yet: browsers are counted here as the push services accept their pushes." />
    ${n.ab && html`<${Breakdown} title="Variants" rows=${d.variants} columns=${[['variant', 'Variant'], ['sent', 'Sent'], ['clicked', 'Clicked'], ['ctr', 'CTR %']]}
      empty="None yet: each version is counted here as its pushes go out." />`}
    <${Breakdown} title="Languages" rows=${d.languages} columns=${[['language', 'Language'], ['sent', 'Sent'], ['clicked', 'Clicked']]}
      empty="None yet: languages are counted here as the pushes go out." />
    <${Breakdown} title="Errors" rows=${d.errors} columns=${[['code', 'Answer'], ['count', 'Count']]}
      empty="None: every push service accepted its pushes so far." />
  </section>`;
}
