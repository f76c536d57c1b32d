// A webhook's delivery log, one delivery's request and answer, resend
// and test.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { actions, Alert } from '../forms.js';
import { useLoad } from '../lists.js';
import { numbers, formatTime } from '../format.js';

export function WebhookLog({ site, id, deliveryId }) {
  const canChange = site.role !== 'viewer';
  const base = '/webhooks/' + encodeURIComponent(id);
  const deliveries = useLoad(() => call('GET', base + '/deliveries'), [id, deliveryId, site.projectId]);
  const delivery = useLoad(() => (deliveryId ? call('GET', base + '/deliveries/' + encodeURIComponent(deliveryId)) : Promise.resolve(null)),
    [id, deliveryId, site.projectId]);
  const log = deliveries.data;
  const one = delivery.data && delivery.data.delivery.id === deliveryId ? delivery.data.delivery : null; // not the one shown before
  const more = (cursor) => deliveries.more(() => call('GET', base + '/deliveries?cursor=' + encodeURIComponent(cursor)),
    (old, a) => ({ deliveries: old.deliveries.concat(a.deliveries), nextCursor: a.nextCursor }));
  const [error, setError] = useState(null); // a test or resend refused
  const post = (path) => actions(() => {
    setError(null);
    deliveries.reload();
    delivery.reload();
  }, setError)('POST', path);
  return html`<section>
    <p><a href="#/webhooks">Webhooks</a></p>
    <h1>Delivery log</h1>
    <${Alert} error=${error || deliveries.error || delivery.error} />
    ${canChange && html`<p><button type="button" onClick=${post(base + '/test')}>Send a test event</button></p>`}
    ${log && log.deliveries.length === 0 && html`<p class="empty">No deliveries yet. Each event this webhook takes is listed here with your server’s answer${canChange ? '; “Send a test event” sends one now' : ''}.</p>`}
    ${log && log.deliveries.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Deliveries</caption>
      <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Answer</th><th scope="col">Created</th></tr></thead>
      <tbody>${log.deliveries.map((x) => html`<tr><td><a href=${'#/webhooks/' + id + '/deliveries/' + x.id}>${x.event}</a></td><td>${x.status}</td>
        <td class="num">${numbers.format(x.attempts)}</td><td><span class="cut" title=${x.error || ''}>${x.last_status_code === null ? (x.error || '—') : x.last_status_code}</span></td>
        <td>${formatTime(x.created_at, site.timezone)}</td></tr>`)}</tbody></table></div>`}
    ${log && log.nextCursor && html`<button type="button" onClick=${() => more(log.nextCursor)}>Load more</button>`}
    ${one && html`<section aria-labelledby="delivery-title">
      <h2 id="delivery-title">Delivery ${one.id}</h2>
      <dl class="facts"><dt>Event</dt><dd>${one.event}</dd><dt>Status</dt><dd>${one.status}</dd>
        <dt>Answer</dt><dd>${one.last_status_code === null ? '—' : one.last_status_code}${one.duration_ms === null ? '' : ' in ' + numbers.format(one.duration_ms) + ' ms'}</dd>
        ${one.error && html`<dt>Error</dt><dd>${one.error}</dd>`}</dl>
      <div class="field"><label for="request-body">Request body</label><textarea id="request-body" readonly rows="6" value=${one.request_body}></textarea></div>
      <div class="field"><label for="request-headers">Request headers</label><textarea id="request-headers" readonly rows="4"
        value=${Object.entries(one.request_headers || {}).map(([k, v]) => k + ': ' + v).join('\n')}></textarea></div>
      <div class="field"><label for="response-body">Response body</label><textarea id="response-body" readonly rows="3" value=${one.response_body || ''}></textarea></div>
      ${canChange && html`<p><button type="button" onClick=${post(base + '/deliveries/' + encodeURIComponent(one.id) + '/resend')}>Resend</button></p>`}
    </section>`}
  </section>`;
}
