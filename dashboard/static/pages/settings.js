// Settings: the website's settings, identity verification, reports by
// mail (reports.js), and the keys and team (keys.js, team.js); a viewer
// sees no control that changes anything.
import { html, useState, useEffect } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { errorsOf, Alert, Field, useForm, FormError, Copy } from '../forms.js';
import { useLoad } from '../lists.js';
import { formatTime, timeZones } from '../format.js';
import { Keys } from './keys.js';
import { Team } from './team.js';
import { Logo } from './logo.js';
import { Reports } from './reports.js';

// settingsErrors puts a refused PUT /settings next to the field its
// message names (the API names the member first).
const settingsFields = [['timezone', 'timezone'], ['defaultUrl', 'defaultUrl'], ['defaultIcon', 'defaultIcon'], ['utm', 'utmSource'],
  ['quietHours', 'quietStart'], ['frequencyCap', 'capMax'], ['revenueCurrency', 'currency'], ['conversion', 'conversionEvents'],
  ['attributionWindowHours', 'attribution']];

function settingsErrors(err) {
  const out = errorsOf(err);
  if (err instanceof ApiError && out.form) {
    const hit = settingsFields.find(([member]) => err.message.startsWith(member) || err.message.includes(' ' + member));
    if (hit) {
      return { [hit[1]]: err.message };
    }
  }
  return out;
}

// websiteForm is the settings as the form edits them (text fields).
function websiteForm(st) {
  return {
    timezone: st.timezone, defaultUrl: st.defaultUrl || '', defaultIcon: st.defaultIcon || '',
    utmSource: st.utm.source, utmMedium: st.utm.medium, utmCampaign: st.utm.campaign,
    quiet: !!st.quietHours, quietStart: st.quietHours ? st.quietHours.start : '22:00', quietEnd: st.quietHours ? st.quietHours.end : '08:00',
    capped: !!st.frequencyCap, capMax: String(st.frequencyCap ? st.frequencyCap.max : 3), capHours: String(st.frequencyCap ? st.frequencyCap.hours : 24),
    currency: st.revenueCurrency || '', conversionEvents: st.conversionEvents.join(', '), attribution: String(st.attributionWindowHours),
  };
}

function WebsiteSettings({ site, canChange, onSaved }) {
  const f = useForm(null);
  const [saved, setSaved] = useState(false);
  const settings = useLoad(() => call('GET', '/settings'), [site.projectId]);
  useEffect(() => {
    if (settings.data) f.setValues(websiteForm(settings.data.settings));
  }, [settings.data]);
  if (!f.values) {
    return html`<section><h2>Website</h2><${Alert} error=${settings.error} /></section>`;
  }
  const v = f.values;
  const save = f.submit(async () => {
    setSaved(false);
    const body = {
      timezone: v.timezone, defaultUrl: v.defaultUrl.trim() || null, defaultIcon: v.defaultIcon.trim() || null,
      utm: { source: v.utmSource.trim(), medium: v.utmMedium.trim(), campaign: v.utmCampaign.trim() },
      quietHours: v.quiet ? { start: v.quietStart, end: v.quietEnd } : null,
      frequencyCap: v.capped ? { max: Number(v.capMax), hours: Number(v.capHours) } : null,
      revenueCurrency: v.currency.trim() || null,
      conversionEvents: v.conversionEvents.split(',').map((x) => x.trim()).filter(Boolean),
      attributionWindowHours: Number(v.attribution),
    };
    if (body.conversionEvents.length === 0) body.conversionEvents = null;
    const a = await call('PUT', '/settings', body);
    f.setValues(websiteForm(a.settings));
    setSaved(true);
    await onSaved();
  }, settingsErrors);
  const text = (id, label, hint, type = 'text') => html`<${Field} id=${id} label=${label} type=${type} value=${v[id]}
    onInput=${f.set(id)} error=${f.errors[id]} required=${false} hint=${hint} />`;
  const check = (id, label) => html`<label class="choice"><input type="checkbox" checked=${v[id]} onChange=${(e) => f.set(id)(e.currentTarget.checked)} /> ${label}</label>`;
  return html`<section aria-labelledby="website-title">
    <h2 id="website-title">Website</h2>
    <form onSubmit=${save} novalidate>
      <fieldset disabled=${!canChange}>
        <legend class="visually-hidden">Website settings</legend>
        <${FormError} errors=${f.errors} />
        <div class="field"><label for="timezone">Time zone</label>
          <select id="timezone" value=${v.timezone} onChange=${(e) => f.set('timezone')(e.currentTarget.value)}>
            ${timeZones().map((z) => html`<option value=${z}>${z}</option>`)}</select>
          ${f.errors.timezone && html`<p class="error">${f.errors.timezone}</p>`}</div>
        ${text('defaultUrl', 'Default link', 'Where a send without a link goes; your website when empty.', 'url')}
        ${text('defaultIcon', 'Default icon', 'The logo of sends without an icon.', 'url')}
        ${text('utmSource', 'UTM source')} ${text('utmMedium', 'UTM medium')} ${text('utmCampaign', 'UTM campaign')}
        ${check('quiet', 'Quiet hours')}
        ${v.quiet && html`<div class="row">${text('quietStart', 'Quiet from', '', 'time')} ${text('quietEnd', 'Quiet until', '', 'time')}</div>`}
        ${check('capped', 'Frequency cap')}
        ${v.capped && html`<div class="row">${text('capMax', 'At most (pushes)', '', 'number')} ${text('capHours', 'Within (hours)', '', 'number')}</div>`}
        ${text('currency', 'Revenue currency', 'Three letters, such as EUR.')}
        ${text('conversionEvents', 'Conversion events', 'Event names, separated by commas.')}
        ${text('attribution', 'Attribution window (hours)', 'How long after a delivery a conversion counts for it.', 'number')}
        ${canChange && html`<div class="actions"><button type="submit" disabled=${f.busy}>Save settings</button>
          ${saved && html`<span role="status">Saved.</span>`}</div>`}
      </fieldset>
    </form>
  </section>`;
}

function IdentitySettings({ site, canChange }) {
  const identity = useLoad(() => call('GET', '/identity'), [site.projectId]);
  const state = identity.data;
  const [secret, setSecret] = useState(null);
  const [error, setError] = useState(null); // a change refused
  const change = async (body) => {
    setError(null);
    try {
      const a = await call('PUT', '/identity', body);
      identity.set(a);
      setSecret(a.newSecret || null);
    } catch (err) {
      setError(err);
    }
  };
  const modes = [['off', 'Off: a browser links any external id'], ['report', 'Report: links without a valid hash go through and are counted'],
    ['enforce', 'Enforce: links without a valid hash are refused']];
  return html`<section aria-labelledby="identity-title">
    <h2 id="identity-title">Identity verification</h2>
    <p class="hint">Your server signs each external id with a secret (HMAC-SHA256); the SDK's login(id, hash) passes the hash.</p>
    <${Alert} error=${error || identity.error} />
    ${state && html`<fieldset disabled=${!canChange}><legend>Mode</legend>
      ${modes.map(([m, label]) => html`<label class="choice"><input type="radio" name="identity-mode" checked=${state.mode === m}
        onChange=${() => change({ mode: m })} /> ${label}</label>`)}
    </fieldset>
    ${secret && html`<div class="notice" role="status"><p>Copy the new secret now: it is never shown again.</p>
      <label for="identity-secret">New identity secret</label><input id="identity-secret" readonly value=${secret.secret} />
      <${Copy} source="identity-secret" label="Copy identity secret" /></div>`}
    ${state.secrets.length === 0 ? html`<p class="empty">No secrets yet. ${canChange ? 'Add one' : 'An owner or admin adds one'}, sign each user id with it on your server and pass the hash to the SDK’s login, then turn on Report or Enforce.</p>` : html`<div class="scroll"><table>
      <caption class="visually-hidden">Identity secrets</caption>
      <thead><tr><th scope="col">Secret</th><th scope="col">Made</th>${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${state.secrets.map((x) => html`<tr><td><code>${x.prefix}…</code></td><td>${formatTime(x.created_at, site.timezone)}</td>
        ${canChange && html`<td><button type="button" class="secondary" aria-label=${'Remove secret ' + x.prefix}
          onClick=${() => window.confirm('Remove this secret? Hashes made with it stop working.') && change({ removeSecretId: x.id })}>Remove</button></td>`}</tr>`)}</tbody>
    </table></div>`}
    ${canChange && state.secrets.length < 2 && html`<p><button type="button" onClick=${() => change({ addSecret: true })}>Add a secret</button></p>`}`}
  </section>`;
}

export function Settings({ site, onMe }) {
  const canChange = site.role !== 'viewer';
  return html`<section>
    <h1>Settings</h1>
    ${!canChange && html`<p role="note">You can see this website as a viewer; an owner or admin can change it.</p>`}
    <${WebsiteSettings} site=${site} canChange=${canChange} onSaved=${onMe} />
    <${Logo} site=${site} canChange=${canChange} />
    <section aria-labelledby="onsite-title"><h2 id="onsite-title">On your website</h2>
      <p>What the RelayBell script does on your pages: <a href="#/prompt">Prompt</a> (how and when it asks visitors to subscribe),
        <a href="#/welcome">Welcome</a> (the notification each new browser gets) and <a href="#/onsite">On-site messages</a> (banners, modals and slide-ins).</p></section>
    <section aria-labelledby="stores-title"><h2 id="stores-title">Your store</h2>
      <p><a href="#/integrations">Integrations</a>: Shopify and WooCommerce webhooks that turn paid orders, checkouts, price drops and restocks into events.</p></section>
    <${Keys} site=${site} canChange=${canChange} />
    <${IdentitySettings} site=${site} canChange=${canChange} />
    <${Reports} site=${site} canChange=${canChange} />
    <${Team} site=${site} canChange=${canChange} />
  </section>`;
}
