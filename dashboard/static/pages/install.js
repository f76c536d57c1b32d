// Install: the snippet, this browser as a test device, the test devices.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { actions, Alert, Copy } from '../forms.js';
import { useLoad } from '../lists.js';
import { formatTime } from '../format.js';

// loadSDK loads the browser SDK of a website into this page, once; the
// dashboard's root worker (/relaybell-sw.js) serves that website.
function loadSDK(projectId) {
  if (window.RelayBell) {
    return window.__relaybellProject === projectId ? Promise.resolve(window.RelayBell)
      : Promise.reject(new Error('This page already subscribed for another website: reload it first.'));
  }
  window.__relaybellProject = projectId;
  return new Promise((resolve, reject) => {
    const tag = document.createElement('script');
    tag.src = '/api/v1/projects/' + projectId + '/sdk.js';
    tag.dataset.prompt = 'manual';
    tag.dataset.worker = '/relaybell-sw.js?project=' + projectId;
    tag.onload = () => resolve(window.RelayBell);
    tag.onerror = () => reject(new Error('The SDK did not load.'));
    document.head.appendChild(tag);
  });
}

// browserName is a name for this browser as a test device.
function browserName(me) {
  const ua = navigator.userAgent;
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrom(e|ium)\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'Browser';
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : '';
  return ((me.user.name || me.user.email) + ': ' + browser + (os ? ' on ' + os : '')).slice(0, 60);
}

// TryHere subscribes this browser to the website, makes it a test device
// and sends it a test notification.
function TryHere({ site, me, onAdded }) {
  const [state, setState] = useState({ step: 'start' });
  const subscribe = async () => {
    setState({ step: 'busy' });
    try {
      const sdk = await loadSDK(site.projectId);
      const ids = await sdk.subscribe();
      if (!ids) {
        setState({ step: 'start', error: 'Notifications are blocked for this page: allow them in the browser first.' });
        return;
      }
      await call('POST', '/test-devices', { endpointId: ids.endpointId, name: browserName(me) });
      setState({ step: 'subscribed' });
      onAdded();
    } catch (err) {
      setState({ step: 'start', error: err.message });
    }
  };
  const send = async () => {
    setState({ step: 'sending' });
    try {
      const a = await call('POST', '/test-devices/send', { title: 'Hello from RelayBell', body: 'Your first notification reached this browser.' });
      setState({ step: 'sent', id: a.notificationId });
    } catch (err) {
      setState({ step: 'subscribed', error: err.message });
    }
  };
  return html`<section aria-labelledby="try-title">
    <h2 id="try-title">Try it in this browser</h2>
    <p>Subscribes this browser to ${site.name} as one of its test devices, then sends it a test notification.</p>
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
    <div class="actions">
      <button type="button" onClick=${subscribe} disabled=${state.step !== 'start'}>Subscribe this browser</button>
      <button type="button" onClick=${send} disabled=${state.step !== 'subscribed' && state.step !== 'sent'}>Send a test notification</button>
    </div>
    ${state.step === 'subscribed' && html`<p role="status">Subscribed.</p>`}
    ${state.step === 'sent' && html`<p role="status">Sent. <a href=${'#/notifications/' + state.id}>Watch it go</a>.</p>`}
  </section>`;
}

// TestDevices lists the browsers that get the website's test sends.
function TestDevices({ site, version }) {
  const canChange = site.role !== 'viewer';
  const devices = useLoad(() => call('GET', '/test-devices'), [site.projectId, version]);
  const list = devices.data && devices.data.testDevices;
  const [error, setError] = useState(null); // a removal refused
  const act = actions(() => { setError(null); devices.reload(); }, setError);
  return html`<section aria-labelledby="devices-title">
    <h2 id="devices-title">Test devices</h2>
    <p>Test sends from the composer go to these browsers only, at most 120 an hour.</p>
    <${Alert} error=${error || devices.error} />
    ${list && list.length === 0 && html`<p class="empty">No test devices yet. ${site.role !== 'viewer' ? 'Subscribe this browser above' : 'An owner or admin subscribes one here'}, and the composer’s “Send a test” reaches it before everyone.</p>`}
    ${list && list.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Test devices</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Device</th><th scope="col">Person</th><th scope="col">Last seen</th>
        ${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${list.map((d) => html`<tr><td><span class="cut" title=${d.name}>${d.name}</span></td><td>${d.device}</td><td>${d.externalId || '—'}</td>
        <td>${formatTime(d.last_seen_at, site.timezone)}</td>
        ${canChange && html`<td><button type="button" class="secondary" aria-label=${'Remove test device ' + d.name} onClick=${act('DELETE', '/test-devices/' + encodeURIComponent(d.id))}>Remove</button></td>`}</tr>`)}</tbody>
    </table></div>`}
  </section>`;
}

export function Install({ site, me }) {
  const [version, setVersion] = useState(0);
  const base = location.origin + '/api/v1/projects/' + site.projectId;
  const snippet = '<script src="' + base + '/sdk.js" async></script>';
  const worker = "importScripts('" + base + "/sw.js');";
  // code is a text to put on the website, with a copy button for those
  // who install (a viewer selects the text: the page shows them no control).
  const code = (id, label, value, hint, copy) => html`<div class="field">
    <label for=${id}>${label}</label>
    <textarea id=${id} readonly rows=${Math.min(3, Math.ceil(value.length / 70))} aria-describedby=${id + '-hint'} value=${value}></textarea>
    <p class="hint" id=${id + '-hint'}>${hint}</p>
    ${site.role !== 'viewer' && html`<${Copy} source=${id} label=${copy} />`}
  </div>`;
  return html`<section>
    <h1>Install on ${site.name}</h1>
    <p>Three steps put the subscribe prompt on <span class="url">${site.url}</span>.</p>
    ${code('snippet', 'Script tag', snippet, 'Put it in the <head> of every page.', 'Copy snippet')}
    ${code('worker', 'Service worker file', worker, 'Serve this one line at /relaybell-sw.js on your website.', 'Copy service worker line')}
    ${code('vapid', 'VAPID public key', site.vapidPublicKey, 'The SDK fetches it itself; here for other clients.', 'Copy VAPID key')}
    ${site.role !== 'viewer' && html`<${TryHere} site=${site} me=${me} onAdded=${() => setVersion(version + 1)} />`}
    <${TestDevices} site=${site} version=${version} />
  </section>`;
}
