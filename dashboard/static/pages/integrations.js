// Inbound commerce integrations: each platform's receiver URL and latest
// deliveries, who the events name, and the signing secret's rotation.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { Alert } from '../forms.js';
import { useLoad } from '../lists.js';
import { formatTime } from '../format.js';

const platformNames = { shopify: 'Shopify', woocommerce: 'WooCommerce' };

export function Integrations({ site }) {
  const canChange = site.role !== 'viewer';
  const list = useLoad(() => call('GET', '/integrations'), [site.projectId]);
  const [error, setError] = useState(null);
  const [rotated, setRotated] = useState(null); // the new secret, shown once
  const [saved, setSaved] = useState('');
  const data = list.data;
  const rotate = async () => {
    if (!window.confirm('Rotate the signing secret? The current one stays valid for 24 hours.')) return;
    setError(null);
    try {
      setRotated(await call('POST', '/integrations/secret/rotate'));
      list.reload();
    } catch (err) {
      setError(err);
    }
  };
  const choose = async (by) => {
    setError(null);
    setSaved('');
    try {
      await call('PUT', '/settings', { commerceExternalId: by });
      setSaved('Saved.');
      list.reload();
    } catch (err) {
      setError(err);
    }
  };
  return html`<section>
    <h1>Integrations</h1>
    <p class="hint">Give your store’s webhooks these URLs, signed with this website’s commerce signing secret. Paid orders become purchases (credited to the notification that brought them), checkouts cart.updated and checkout.completed, lowered prices price_drop and restocked variants back_in_stock.</p>
    <${Alert} error=${error || list.error} />
    ${data && html`<div class="field"><label for="commerce-external-id">The events name the customer by</label>
      <select id="commerce-external-id" value=${data.externalId} disabled=${!canChange} onChange=${(e) => choose(e.currentTarget.value)}>
        <option value="customerId">Customer id</option><option value="email">E-mail address</option></select>
      ${saved && html`<p class="hint" role="status">${saved}</p>`}</div>`}
    ${data && data.integrations.map((p) => html`<section aria-labelledby=${'integration-' + p.platform}>
      <h2 id=${'integration-' + p.platform}>${platformNames[p.platform] || p.platform}</h2>
      <div class="field"><label for=${'receiver-' + p.platform}>${(platformNames[p.platform] || p.platform) + ' receiver URL'}</label>
        <input id=${'receiver-' + p.platform} readonly value=${p.receiverUrl} /></div>
      ${p.lastError && html`<p class="error">Last error: ${p.lastError.error} (${formatTime(p.lastError.receivedAt, site.timezone)})</p>`}
      ${p.deliveries.length === 0 ? html`<p class="empty">No deliveries yet.</p>` : html`<div class="scroll"><table>
        <caption class="visually-hidden">${(platformNames[p.platform] || p.platform) + ' deliveries'}</caption>
        <thead><tr><th scope="col">Topic</th><th scope="col">Event</th><th scope="col">Error</th><th scope="col">Received</th></tr></thead>
        <tbody>${p.deliveries.map((d) => html`<tr><td>${d.topic}</td><td>${d.event || '—'}</td><td><span class="cut" title=${d.error || ''}>${d.error || '—'}</span></td>
          <td>${formatTime(d.receivedAt, site.timezone)}</td></tr>`)}</tbody></table></div>`}
    </section>`)}
    ${canChange && html`<section aria-labelledby="secret-title">
      <h2 id="secret-title">Signing secret</h2>
      ${data && data.previousSecretValidUntil && !rotated && html`<p class="hint">The previous secret is valid until ${formatTime(data.previousSecretValidUntil, site.timezone)}.</p>`}
      ${rotated && html`<div class="field"><label for="new-secret">New signing secret</label><input id="new-secret" readonly value=${rotated.commerceSigningSecret} />
        <p class="hint">Shown once here: set it in your store. The previous secret is valid until ${formatTime(rotated.previousSecretValidUntil, site.timezone)}.</p></div>`}
      <p><button type="button" onClick=${rotate}>Rotate signing secret</button></p>
    </section>`}
  </section>`;
}
