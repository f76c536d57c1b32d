// The composer: writes a send or changes a draft.
import { html, useState, useEffect, useRef } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { go } from '../router.js';
import { Alert, Field, useForm, Disclosure, FormError } from '../forms.js';
import { useLoad } from '../lists.js';
import { ruleError, RuleBuilder } from '../rules.js';
import { composerValues, sendRequest, representable, contentMembers, draftPatch, composerError, when } from '../sends.js';
import { numbers, zonedToUTC, timeZones } from '../format.js';
import { Preview } from './preview.js';

// mergeNames are the subscriber attributes merge tags know (spec 2.1).
const mergeNames = [['external_id', 'External id'], ['country', 'Country'], ['language', 'Language'], ['timezone', 'Time zone'], ['device', 'Device']];

// MergeTags inserts {name|fallback} into the title or the message.
function MergeTags({ labels, onInsert }) {
  const [name, setName] = useState('external_id');
  const [fallback, setFallback] = useState('');
  const tag = '{' + name + (fallback ? '|' + fallback.replace(/[{}]/g, '') : '') + '}';
  return html`<${Disclosure} label="Merge tags">
    <p class="hint">A merge tag is replaced by each subscriber’s value, or by the fallback when they have none.</p>
    <div class="row">
      <div class="field"><label for="merge-name">Value</label>
        <select id="merge-name" value=${name} onChange=${(e) => setName(e.currentTarget.value)}>
          ${mergeNames.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
          ${labels.filter((k) => /^[A-Za-z0-9_.:-]{1,64}$/.test(k) && !mergeNames.some(([a]) => a.toLowerCase() === k.toLowerCase()) &&
            !['externalid', 'subscriber_id'].includes(k.toLowerCase())).map((k) => html`<option value=${k}>${'Label: ' + k}</option>`)}
        </select></div>
      <div class="field"><label for="merge-fallback">Fallback</label>
        <input id="merge-fallback" value=${fallback} onInput=${(e) => setFallback(e.currentTarget.value)} /></div>
    </div>
    <p class="actions"><code>${tag}</code>
      <button type="button" class="secondary" onClick=${() => onInsert('title', tag)}>Insert into title</button>
      <button type="button" class="secondary" onClick=${() => onInsert('body', tag)}>Insert into message</button></p>
  <//>`;
}

// Translations edits the title and message per language.
function Translations({ rows, onChange }) {
  const edit = (i, change) => onChange(rows.map((t, j) => (j === i ? { ...t, ...change } : t)));
  return html`<${Disclosure} label="Translations" open=${rows.length > 0}>
    <p class="hint">Browsers in these languages get this title and message; others get the main text.</p>
    ${rows.map((t, i) => html`<div class="row translation" role="group" aria-label=${'Translation ' + (i + 1)}>
      <div class="field"><label for=${'tr' + i + '-language'}>${'Language of translation ' + (i + 1)}</label>
        <input id=${'tr' + i + '-language'} value=${t.language} maxlength="2" placeholder="fr" onInput=${(e) => edit(i, { language: e.currentTarget.value })} /></div>
      <div class="field"><label for=${'tr' + i + '-title'}>${'Title of translation ' + (i + 1)}</label>
        <input id=${'tr' + i + '-title'} value=${t.title} onInput=${(e) => edit(i, { title: e.currentTarget.value })} /></div>
      <div class="field"><label for=${'tr' + i + '-body'}>${'Message of translation ' + (i + 1)}</label>
        <input id=${'tr' + i + '-body'} value=${t.body} onInput=${(e) => edit(i, { body: e.currentTarget.value })} /></div>
      <button type="button" class="secondary" aria-label=${'Remove translation ' + (i + 1)} onClick=${() => onChange(rows.filter((_, j) => j !== i))}>Remove</button>
    </div>`)}
    <button type="button" class="secondary" onClick=${() => onChange([...rows, { language: '', title: '', body: '' }])}>Add translation</button>
  <//>`;
}

// Composer writes a send, or changes the draft draftId.
export function Composer({ site, draftId }) {
  const f = useForm(() => {
    const saved = sessionStorage.getItem('relaybell.duplicate');
    sessionStorage.removeItem('relaybell.duplicate');
    return composerValues(saved && !draftId ? JSON.parse(saved) : null, site.timezone);
  });
  const choices = useLoad(() => Promise.all([call('GET', '/topics'), call('GET', '/segments')]), [site.projectId]);
  const facets = useLoad(() => call('GET', '/audience/subscribers/facets'), [site.projectId]);
  const lists = {
    topics: (choices.data && choices.data[0].topics) || [],
    segments: (choices.data && choices.data[1].segments) || [],
    labels: ((facets.data && facets.data.tags) || []).map((t) => t.key),
  };
  const draft = useLoad(() => (draftId ? call('GET', '/notifications/' + encodeURIComponent(draftId)) : Promise.resolve(null)), [draftId]);
  const [loaded, setLoaded] = useState(!draftId);
  const [confirm, setConfirm] = useState(null); // {request, audience}
  const sendButton = useRef(null);
  useEffect(() => { if (confirm && sendButton.current) sendButton.current.focus(); }, [confirm]);
  useEffect(() => {
    const d = draft.data;
    if (!d) return;
    if (d.notification.status !== 'draft') {
      f.setErrors({ form: 'This notification is no longer a draft.' });
      return;
    }
    if (!representable(d.sendBody)) {
      f.setErrors({ form: 'This draft combines audience choices the composer cannot show; change or send it through the API.' });
      return;
    }
    f.setValues(composerValues(d.sendBody, site.timezone));
    setLoaded(true);
  }, [draft.data]);
  const v = f.values;
  // audience counts who a send would reach before it goes.
  const audience = async (r) => {
    if (r.externalIds) {
      return numbers.format(r.externalIds.length) + (r.externalIds.length === 1 ? ' person' : ' people') + ' named';
    }
    const body = {};
    if (r.topicId) body.topicId = r.topicId;
    if (r.filters) body.filters = r.filters;
    if (r.segmentId) {
      const seg = lists.segments.find((g) => g.id === r.segmentId);
      if (!seg) return 'the segment’s browsers (not counted: the segments did not load)';
      body.filters = seg.filters;
    }
    const answer = await call('POST', '/segments/preview', body);
    const n = numbers.format(answer.count) + (answer.count === 1 ? ' browser' : ' browsers');
    return r.excludeSegmentId || r.excludeFilters ? 'at most ' + n + ' (before leaving out the excluded)' : n;
  };
  // formErrors refuses a send or draft whose rules cannot go as they are,
  // or that is to go later with no time, or one past (it would go now).
  const formErrors = () => {
    const errors = {};
    const a = v.audience === 'filters' && ruleError(v.filters);
    const x = v.audience !== 'users' && v.exclude === 'filters' && ruleError(v.excludeFilters);
    if (a) errors.filters = a;
    if (x) errors.excludeFilters = x;
    if (v.when === 'later' && !v.sendAt) errors.sendAt = 'Choose when it goes.';
    else if (v.when === 'later' && Date.parse(zonedToUTC(v.sendAt, v.sendZone)) <= Date.now()) errors.sendAt = 'This time has passed.';
    return Object.keys(errors).length ? errors : null;
  };
  // Closing the confirmation on any change: it shows what goes.
  useEffect(() => setConfirm(null), [v]);
  // once runs one of the form's calls at a time (no double send).
  const [pending, setPending] = useState(false);
  const once = (fn) => async () => {
    if (pending) return;
    setPending(true);
    try {
      await fn();
    } finally {
      setPending(false);
    }
  };
  const review = f.submit(async () => {
    const r = sendRequest(v, site, false);
    if (!r.title.trim()) {
      f.setErrors({ title: 'A title is required to send.' });
      return;
    }
    const bad = formErrors();
    if (bad) {
      f.setErrors(bad);
      return;
    }
    setConfirm({ request: r, audience: await audience(r) });
  }, composerError);
  const send = once(async () => {
    const r = confirm.request;
    setConfirm(null);
    try {
      let answer;
      if (draftId) {
        // The draft becomes exactly the form, then goes as saved.
        await call('PATCH', '/notifications/' + encodeURIComponent(draftId), draftPatch(r));
        answer = await call('POST', '/notifications/' + encodeURIComponent(draftId) + '/send');
      } else {
        answer = await call('POST', '/notifications', r);
      }
      go('notifications/' + answer.notificationId);
    } catch (err) {
      f.setErrors(composerError(err, r));
    }
  });
  const saveDraft = once(async () => {
    const bad = formErrors();
    if (bad) {
      f.setErrors(bad);
      return;
    }
    const r = sendRequest(v, site, true);
    try {
      if (draftId) {
        await call('PATCH', '/notifications/' + encodeURIComponent(draftId), draftPatch(r));
      } else {
        await call('POST', '/notifications', r);
      }
      go('notifications?status=draft');
    } catch (err) {
      f.setErrors(composerError(err, r));
    }
  });
  const [tested, setTested] = useState('');
  // test sends the content alone to the website's test devices.
  const test = once(async () => {
    setTested('');
    const r = sendRequest(v, site, false);
    const content = {};
    for (const k of contentMembers) {
      if (r[k] !== undefined) content[k] = r[k];
    }
    try {
      const a = await call('POST', '/test-devices/send', content);
      setTested('Test sent to ' + numbers.format(a.devices) + (a.devices === 1 ? ' test device.' : ' test devices.'));
    } catch (err) {
      f.setErrors(err instanceof ApiError && err.code === 'no_test_devices'
        ? { form: 'No test devices yet: subscribe a browser on the Install page first.' } : composerError(err));
    }
  });
  const insert = (field, tag) => f.set(field)(v[field] + tag);
  const radio = (group, value, label) => html`<label class="choice"><input type="radio" name=${group} value=${value}
    checked=${v[group] === value} onChange=${() => f.set(group)(value)} /> ${label}</label>`;
  const picker = (id, label, value, options, empty, error) => html`<div class="field"><label for=${id}>${label}</label>
    <select id=${id} value=${value} onChange=${(e) => f.set(id)(e.currentTarget.value)} aria-invalid=${error ? 'true' : undefined}
      aria-describedby=${error ? id + '-error' : undefined}>
      <option value="">${empty}</option>
      ${options.map((o) => html`<option value=${o.id}>${o.name}</option>`)}
    </select>${error && html`<p class="error" id=${id + '-error'}>${error}</p>`}</div>`;
  const setB = (k) => (x) => f.set('b')({ ...v.b, [k]: x });
  if (!loaded) {
    return html`<section><h1>Edit draft</h1><${FormError} errors=${f.errors} /><${Alert} error=${draft.error} />
      ${!f.errors.form && !draft.error && html`<p role="status">Loading…</p>`}</section>`;
  }
  return html`<section>
    <h1>${draftId ? 'Edit draft' : 'New notification'}</h1>
    <form onSubmit=${review} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="title" label="Title" value=${v.title} onInput=${f.set('title')} error=${f.errors.title} />
      <${Field} id="body" label="Message" value=${v.body} onInput=${f.set('body')} error=${f.errors.body} required=${false} />
      <${Alert} error=${facets.error} what="The labels for merge tags did not load" />
      <${MergeTags} labels=${lists.labels} onInsert=${insert} />
      <${Field} id="url" label="Link" type="url" value=${v.url} onInput=${f.set('url')} error=${f.errors.url} required=${false} hint="Where a click goes; the website's default link when empty." />
      <${Field} id="icon" label="Icon" type="url" value=${v.icon} onInput=${f.set('icon')} required=${false} />
      <${Field} id="image" label="Image" type="url" value=${v.image} onInput=${f.set('image')} required=${false} />
      <${Field} id="badge" label="Badge" type="url" value=${v.badge} onInput=${f.set('badge')} required=${false}
        hint="A small one-colour PNG with a transparent background (about 96×96) for Android's status bar." />
      <fieldset><legend>Buttons (up to 2)</legend>
        ${v.actions.map((a, i) => html`<div class="row">
          <${Field} id=${'action' + i + '-title'} label=${'Button ' + (i + 1) + ' text'} value=${a.title} required=${false}
            onInput=${(t) => f.set('actions')(v.actions.map((x, j) => (j === i ? { ...x, title: t } : x)))} />
          <${Field} id=${'action' + i + '-url'} label=${'Button ' + (i + 1) + ' link'} type="url" value=${a.url} required=${false}
            onInput=${(u) => f.set('actions')(v.actions.map((x, j) => (j === i ? { ...x, url: u } : x)))} />
        </div>`)}
      </fieldset>
      <${Translations} rows=${v.translations} onChange=${f.set('translations')} />
      <${Disclosure} label="More options">
        <${Field} id="ttl" label="Time to live (seconds)" type="number" value=${v.ttl} onInput=${f.set('ttl')} required=${false} error=${f.errors.ttl}
          hint="How long a push service keeps trying an offline browser: 1 to 2,419,200; 24 hours when empty." />
        <${Field} id="tag" label="Tag" value=${v.tag} onInput=${f.set('tag')} required=${false} hint="A later notification with the same tag replaces this one." />
        <label class="choice"><input type="checkbox" checked=${v.requireInteraction} onChange=${(e) => f.set('requireInteraction')(e.currentTarget.checked)} /> Stays until clicked or closed</label>
        <label class="choice"><input type="checkbox" checked=${v.transactional} onChange=${(e) => f.set('transactional')(e.currentTarget.checked)} /> Transactional (goes out in quiet hours, skips the frequency cap)</label>
      <//>
      <fieldset><legend>A/B test</legend>
        <label class="choice"><input type="checkbox" checked=${v.ab} onChange=${(e) => f.set('ab')(e.currentTarget.checked)} /> Test a version B</label>
        ${v.ab && html`<div>
          <p class="hint">Each browser gets version A (the fields above) or B; B's empty fields come from A.</p>
          <${Field} id="b-title" label="Version B title" value=${v.b.title} onInput=${setB('title')} required=${false} />
          <${Field} id="b-body" label="Version B message" value=${v.b.body} onInput=${setB('body')} required=${false} />
          <${Field} id="b-url" label="Version B link" type="url" value=${v.b.url} onInput=${setB('url')} required=${false} />
          <${Field} id="b-image" label="Version B image" type="url" value=${v.b.image} onInput=${setB('image')} required=${false} />
          <label class="choice"><input type="checkbox" checked=${v.autoWinner} onChange=${(e) => f.set('autoWinner')(e.currentTarget.checked)} /> Send the winner to the rest automatically</label>
          ${v.autoWinner && html`<div class="row">
            <${Field} id="testPercent" label="Test group (% of the audience)" type="number" value=${v.testPercent} onInput=${f.set('testPercent')} hint="1 to 90." />
            <${Field} id="afterHours" label="Pick the winner after (hours)" type="number" value=${v.afterHours} onInput=${f.set('afterHours')} hint="1 to 168." />
          </div>`}
        </div>`}
      </fieldset>
      ${v.ab && html`<${Preview} v=${{ ...v, title: v.b.title || v.title, body: v.b.body || v.body, url: v.b.url || v.url, image: v.b.image || v.image }}
        site=${site} heading="Version B preview" id="preview-b" />`}
      <fieldset><legend>Audience</legend>
        <${Alert} error=${choices.error} what="The topics and segments did not load" />
        ${radio('audience', 'everyone', 'Everyone')}
        ${radio('audience', 'topic', 'A topic')}
        ${v.audience === 'topic' && picker('topicId', 'Topic', v.topicId, lists.topics, 'Choose a topic', f.errors.topicId)}
        ${radio('audience', 'segment', 'A segment')}
        ${v.audience === 'segment' && picker('segmentId', 'Segment', v.segmentId, lists.segments, 'Choose a segment', f.errors.segmentId)}
        ${radio('audience', 'filters', 'People matching rules')}
        ${v.audience === 'filters' && html`<${RuleBuilder} filters=${v.filters} onChange=${f.set('filters')} name="audience" legend="Audience rules" error=${f.errors.filters} />`}
        ${radio('audience', 'users', 'Specific people')}
        ${v.audience === 'users' && html`<div class="field"><label for="externalIds">External ids</label>
          <textarea id="externalIds" rows="2" value=${v.externalIds} onInput=${(e) => f.set('externalIds')(e.currentTarget.value)}
            aria-invalid=${f.errors.externalIds ? 'true' : undefined} aria-describedby="externalIds-hint"></textarea>
          <p class="hint" id="externalIds-hint">Your own user ids, separated by commas or line breaks.</p>
          ${f.errors.externalIds && html`<p class="error">${f.errors.externalIds}</p>`}</div>`}
      </fieldset>
      ${v.audience !== 'users' && html`<fieldset><legend>Leave out</legend>
        ${radio('exclude', 'none', 'Leave out nobody')}
        ${radio('exclude', 'segment', 'Leave out a segment')}
        ${v.exclude === 'segment' && picker('excludeSegmentId', 'Segment to leave out', v.excludeSegmentId, lists.segments, 'Choose a segment', f.errors.excludeSegmentId)}
        ${radio('exclude', 'filters', 'Leave out people matching rules')}
        ${v.exclude === 'filters' && html`<${RuleBuilder} filters=${v.excludeFilters} onChange=${f.set('excludeFilters')} name="exclusion" legend="Rules of whom to leave out" error=${f.errors.excludeFilters} />`}
      </fieldset>`}
      <fieldset><legend>When</legend>
        ${radio('when', 'now', 'Now')}
        ${radio('when', 'later', 'Later')}
        ${v.when === 'later' && html`<div class="row">
          <${Field} id="sendAt" label=${'Send at (' + v.sendZone + ')'} type="datetime-local" value=${v.sendAt} onInput=${f.set('sendAt')} error=${f.errors.sendAt} />
          <div class="field"><label for="sendZone">Time zone of the send time</label>
            <select id="sendZone" value=${v.sendZone} onChange=${(e) => f.set('sendZone')(e.currentTarget.value)}>
              ${[...new Set([v.sendZone, ...timeZones()])].map((z) => html`<option value=${z}>${z}</option>`)}</select></div></div>`}
        ${radio('when', 'local', 'At a time in each subscriber’s time zone')}
        ${v.when === 'local' && html`<${Field} id="localTime" label="Local time" type="time" value=${v.localTime} onInput=${f.set('localTime')} />`}
        ${radio('when', 'smart', 'At each subscriber’s most active hour')}
      </fieldset>
      <div class="actions"><button type="submit" disabled=${f.busy}>Review and send</button>
        <button type="button" class="secondary" onClick=${saveDraft} disabled=${pending}>Save draft</button>
        <button type="button" class="secondary" onClick=${test} disabled=${pending}>Send a test</button></div>
      ${tested && html`<p role="status">${tested}</p>`}
    </form>
    <${Preview} v=${v} site=${site} />
    ${confirm && html`<div class="dialog" role="dialog" aria-modal="true" aria-labelledby="confirm-title"
      onKeyDown=${(e) => { if (e.key === 'Escape') setConfirm(null); }}>
      <h2 id="confirm-title">Send “${confirm.request.title}”?</h2>
      <p>It goes to ${confirm.audience}${when(confirm.request, site, v.sendZone)}.</p>
      <div class="actions"><button type="button" ref=${sendButton} onClick=${send} disabled=${pending}>Send</button>
        <button type="button" class="secondary" onClick=${() => setConfirm(null)}>Back</button></div>
    </div>`}
  </section>`;
}
