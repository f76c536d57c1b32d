// On-site messages (issue 36): banners, modals and slide-ins the browser
// SDK shows on the website's pages, targeted by URL, device, whether the
// visitor is subscribed and (for known subscribers) a segment, with their
// impressions, clicks and dismissals.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { Alert, Field, useForm, FormError, errorsOf, actions, selectField } from '../forms.js';
import { useLoad } from '../lists.js';
import { numbers, zonedToUTC, zonedLocal, formatTime } from '../format.js';

const kindNames = { banner: 'Banner', modal: 'Modal', 'slide-in': 'Slide-in' };
const statusNames = { draft: 'Draft', active: 'Active', paused: 'Paused' };
const frequencyNames = { once: 'Once per visitor', session: 'Once per session', every: 'Every page view' };
const subscribedNames = { any: 'Everyone', yes: 'Subscribed visitors', no: 'Visitors not subscribed' };
const deviceNames = [['desktop', 'Desktop'], ['android', 'Android'], ['ios', 'iOS'], ['mobile', 'Other mobile'], ['other', 'Other']];
const actionNames = [['', 'No button'], ['link', 'Open a link'], ['subscribe', 'Subscribe'], ['close', 'Close']];
const lines = (s) => s.split('\n').map((l) => l.trim()).filter(Boolean);

function messageValues(m, tz) {
  const b = (i, k) => (m && m.buttons[i] && m.buttons[i][k]) || '';
  return {
    name: m ? m.name : '', status: m ? m.status : 'draft', kind: m ? m.kind : 'banner', title: m ? m.title : '', text: m ? m.text : '',
    image: m ? m.image : '', b0label: b(0, 'label'), b0action: b(0, 'action'), b0url: b(0, 'url'),
    b1label: b(1, 'label'), b1action: b(1, 'action'), b1url: b(1, 'url'),
    startAt: m && m.startAt ? zonedLocal(m.startAt, tz) : '', endAt: m && m.endAt ? zonedLocal(m.endAt, tz) : '',
    include: m ? m.targeting.include.join('\n') : '', exclude: m ? m.targeting.exclude.join('\n') : '',
    devices: m ? m.targeting.devices : [], subscribed: m ? m.targeting.subscribed : 'any', segmentId: m ? m.targeting.segmentId : '',
    frequency: m ? m.frequency : 'once',
  };
}

// messageBody is form v as the body of POST or PUT /onsite: every member.
export function messageBody(v, tz) {
  const buttons = [];
  for (const i of [0, 1]) {
    const action = v['b' + i + 'action'];
    if (!action) continue;
    const b = { label: v['b' + i + 'label'], action };
    if (action === 'link') b.url = v['b' + i + 'url'].trim();
    buttons.push(b);
  }
  return {
    name: v.name, status: v.status, kind: v.kind, title: v.title, text: v.text, image: v.image.trim(), buttons,
    startAt: v.startAt ? zonedToUTC(v.startAt, tz) : null, endAt: v.endAt ? zonedToUTC(v.endAt, tz) : null,
    targeting: { include: lines(v.include), exclude: lines(v.exclude), devices: v.devices, subscribed: v.subscribed, segmentId: v.segmentId },
    frequency: v.frequency,
  };
}

function MessageForm({ message, segments, tz, done }) {
  const f = useForm(messageValues(message, tz));
  const v = f.values;
  const select = selectField(f, true);
  const save = f.submit(async () => {
    const body = messageBody(v, tz);
    done(message ? await call('PUT', '/onsite/' + encodeURIComponent(message.id), body) : await call('POST', '/onsite', body));
  }, (err) => (err instanceof ApiError && err.code === 'segment_not_found' ? { segmentId: err.message || 'No such segment.' } : errorsOf(err)));
  const area = (id, label, hint, rows = 2) => html`<div class="field"><label for=${'onsite-' + id}>${label}</label>
    <textarea id=${'onsite-' + id} rows=${rows} value=${v[id]} onInput=${(e) => f.set(id)(e.currentTarget.value)} aria-describedby=${hint ? 'onsite-' + id + '-hint' : undefined}></textarea>
    ${hint && html`<p class="hint" id=${'onsite-' + id + '-hint'}>${hint}</p>`}</div>`;
  const button = (i) => html`<div class="row">
    ${select('b' + i + 'action', 'Button ' + (i + 1), actionNames)}
    ${v['b' + i + 'action'] && html`<${Field} id=${'b' + i + 'label'} label=${'Button ' + (i + 1) + ' label'} value=${v['b' + i + 'label']} onInput=${f.set('b' + i + 'label')} />`}
    ${v['b' + i + 'action'] === 'link' && html`<${Field} id=${'b' + i + 'url'} label=${'Button ' + (i + 1) + ' link'} value=${v['b' + i + 'url']} onInput=${f.set('b' + i + 'url')} />`}
  </div>`;
  return html`<form class="onsite-form" onSubmit=${save} novalidate aria-label=${message ? 'Message “' + message.name + '”' : 'New message'}>
    <h2>${message ? 'Change message “' + message.name + '”' : 'New message'}</h2>
    <${FormError} errors=${{ form: f.errors.form }} />
    <${Field} id="onsite-name" label="Message name" value=${v.name} onInput=${f.set('name')} error=${f.errors.name} />
    <div class="row">${select('kind', 'Kind', Object.entries(kindNames))}${select('status', 'Status', Object.entries(statusNames))}${select('frequency', 'How often', Object.entries(frequencyNames))}</div>
    <${Field} id="onsite-title" label="Title" value=${v.title} onInput=${f.set('title')} required=${false} />
    ${area('text', 'Text', 'Shown as written: text, never markup.', 3)}
    <${Field} id="onsite-image" label="Image URL" value=${v.image} onInput=${f.set('image')} required=${false} hint="An https URL, or empty." />
    ${button(0)}${button(1)}
    <div class="row"><${Field} id="onsite-startAt" label=${'Starts (' + tz + ')'} type="datetime-local" value=${v.startAt} onInput=${f.set('startAt')} required=${false} />
      <${Field} id="onsite-endAt" label=${'Ends (' + tz + ')'} type="datetime-local" value=${v.endAt} onInput=${f.set('endAt')} required=${false} /></div>
    <fieldset><legend>Who sees it</legend>
      ${area('include', 'Show on pages', 'One URL pattern a line, * for any characters; none is every page.')}
      ${area('exclude', 'Never on pages', 'One a line.')}
      <fieldset><legend>Devices</legend>${deviceNames.map(([d, l]) => html`<label class="choice"><input type="checkbox" checked=${v.devices.includes(d)}
        onChange=${(e) => f.set('devices')(e.currentTarget.checked ? [...v.devices, d] : v.devices.filter((x) => x !== d))} /> ${l}</label>`)}
        <p class="hint">None ticked: every device.</p></fieldset>
      <div class="row">${select('subscribed', 'Visitors', Object.entries(subscribedNames))}
        ${select('segmentId', 'Segment (known subscribers)', segments.map((s) => [s.id, s.name]), { empty: 'No segment' })}</div>
    </fieldset>
    <div class="actions"><button type="submit" disabled=${f.busy}>${message ? 'Save message' : 'Create message'}</button>
      <button type="button" class="secondary" onClick=${() => done(null)}>Cancel</button></div>
  </form>`;
}

export function OnsiteMessages({ site }) {
  const canChange = site.role !== 'viewer';
  const tz = site.timezone || 'UTC';
  const list = useLoad(() => call('GET', '/onsite'), [site.projectId]);
  const segs = useLoad(() => call('GET', '/segments'), [site.projectId]);
  const [editing, setEditing] = useState(null);
  const [failed, setFailed] = useState(null);
  const act = actions(() => {
    setFailed(null);
    list.reload();
  }, setFailed);
  const done = (saved) => {
    setEditing(null);
    if (saved) list.reload();
  };
  const segments = (segs.data && segs.data.segments) || [];
  const messages = list.data && list.data.messages;
  const rate = (m) => (m.stats.impressions ? numbers.format(Math.round((m.stats.clicks / m.stats.impressions) * 1000) / 10) + ' %' : '–');
  return html`<section>
    <h1>On-site messages</h1>
    <p>Banners, modals and slide-ins on your website’s pages, shown by the RelayBell script to the visitors you choose.</p>
    ${canChange && !editing && html`<p><button type="button" onClick=${() => setEditing('new')}>New message</button></p>`}
    ${editing && html`<${MessageForm} message=${editing === 'new' ? null : editing} segments=${segments} tz=${tz} done=${done} key=${editing === 'new' ? 'new' : editing.id} />`}
    <${Alert} error=${list.error} />
    <${Alert} error=${failed} what="The deletion failed" />
    ${!messages && !list.error && html`<p role="status">Loading…</p>`}
    ${messages && messages.length === 0 && html`<p class="empty">No on-site messages yet.</p>`}
    ${messages && messages.length > 0 && html`<div class="scroll"><table><caption>On-site messages</caption>
      <thead><tr><th scope="col">Message</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Shown</th><th scope="col">Clicked</th>
        <th scope="col">Dismissed</th><th scope="col">Click rate</th>${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>${messages.map((m) => html`<tr key=${m.id}><th scope="row"><span class="cut">${m.name}</span>
          <span class="hint">${[m.title, frequencyNames[m.frequency], m.endAt ? 'until ' + formatTime(m.endAt, tz) : ''].filter(Boolean).join(' · ')}</span></th>
        <td>${kindNames[m.kind]}</td><td>${statusNames[m.status]}</td><td class="num">${numbers.format(m.stats.impressions)}</td>
        <td class="num">${numbers.format(m.stats.clicks)}</td><td class="num">${numbers.format(m.stats.dismissals)}</td><td class="num">${rate(m)}</td>
        ${canChange && html`<td><div class="actions">
          <button type="button" class="secondary" aria-label=${'Change message ' + m.name} onClick=${() => setEditing(m)}>Change</button>
          <button type="button" class="secondary" aria-label=${'Delete message ' + m.name}
            onClick=${act('DELETE', '/onsite/' + encodeURIComponent(m.id), undefined, 'Delete the message “' + m.name + '”? Its counts go with it.')}>Delete</button></div></td>`}
      </tr>`)}</tbody></table></div>`}
  </section>`;
}

// OnsiteArea is the on-site pages' own navigation (reached from
// Settings): on-site messages, the prompt, the welcome notification.
export function OnsiteArea({ route, children }) {
  const link = (path, label) => html`<a href=${'#/' + path} aria-current=${route === path ? 'page' : undefined}>${label}</a>`;
  return html`<nav class="subnav" aria-label="On-site">${link('onsite', 'On-site messages')}${link('prompt', 'Prompt')}${link('welcome', 'Welcome')}</nav>${children}`;
}
