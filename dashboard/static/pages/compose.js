// The composer: writes a send or changes a draft. The form stays in this
// browser until it is sent, saved or discarded (unsent.js); the push's
// size and the texts' lengths show as they are typed (budget.js).
import { html, useState, useEffect, useRef } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { go } from '../router.js';
import { Alert, Field, useForm, FormError } from '../forms.js';
import { useLoad } from '../lists.js';
import { ruleError, RuleBuilder } from '../rules.js';
import { composerValues, contentValues, sendRequest, representable, contentMembers, draftPatch, composerError, when } from '../sends.js';
import { readUnsent, useUnsent } from '../unsent.js';
import { numbers, zonedToUTC, timeZones } from '../format.js';
import { Preview } from './preview.js';
import { Content } from './content.js';
import { payloadSize, Budget } from './budget.js';
import { templateBody, templateError } from './templates.js';

// Composer writes a send, or changes the draft draftId.
export function Composer({ site, draftId }) {
  const unsentKey = 'relaybell.unsent.' + site.projectId + (draftId ? '.' + draftId : '');
  // The form starts as a duplicated send, the unsent form kept from
  // before (restored), or empty; a draft's once it loads.
  const [start] = useState(() => {
    const blank = composerValues(null, site.timezone);
    const duplicated = sessionStorage.getItem('relaybell.duplicate');
    sessionStorage.removeItem('relaybell.duplicate');
    if (duplicated && !draftId) return { blank, values: composerValues(JSON.parse(duplicated), site.timezone), restored: false };
    const kept = !draftId && readUnsent(unsentKey);
    return { blank, values: kept ? { ...blank, ...kept } : blank, restored: !!kept };
  });
  const f = useForm(start.values);
  const [baseline, setBaseline] = useState(start.blank); // what the form holds with nothing unsent
  const [restored, setRestored] = useState(start.restored);
  const choices = useLoad(() => Promise.all([call('GET', '/topics'), call('GET', '/segments')]), [site.projectId]);
  const facets = useLoad(() => call('GET', '/audience/subscribers/facets'), [site.projectId]);
  const settings = useLoad(() => call('GET', '/settings'), [site.projectId]); // the default link and icon, and UTM tags, of the push's size
  const lists = {
    topics: (choices.data && choices.data[0].topics) || [],
    segments: (choices.data && choices.data[1].segments) || [],
    labels: ((facets.data && facets.data.tags) || []).map((t) => t.key),
  };
  const draft = useLoad(() => (draftId ? call('GET', '/notifications/' + encodeURIComponent(draftId)) : Promise.resolve(null)), [draftId]);
  const [loaded, setLoaded] = useState(!draftId);
  const [confirm, setConfirm] = useState(null); // {request, audience, none}
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
    const saved = composerValues(d.sendBody, site.timezone);
    const kept = readUnsent(unsentKey);
    setBaseline(saved);
    f.setValues(kept ? { ...saved, ...kept } : saved);
    setRestored(!!kept);
    setLoaded(true);
  }, [draft.data]);
  const v = f.values;
  const unsent = useUnsent(unsentKey, v, baseline, loaded, draftId ? 'Leave this draft? Your unsaved changes will be discarded.'
    : 'Leave the composer? Your unsent notification will be discarded.');
  const startOver = () => {
    unsent.forget();
    f.setValues(baseline);
    f.setErrors({});
    setRestored(false);
  };
  // audience counts who a send would reach before it goes: {text, count}
  // (count null when not counted).
  const audience = async (r) => {
    if (r.externalIds) {
      return { text: numbers.format(r.externalIds.length) + (r.externalIds.length === 1 ? ' person' : ' people') + ' named', count: null };
    }
    const body = {};
    if (r.topicId) body.topicId = r.topicId;
    if (r.filters) body.filters = r.filters;
    if (r.segmentId) {
      const seg = lists.segments.find((g) => g.id === r.segmentId);
      if (!seg) return { text: 'the segment’s browsers (not counted: the segments did not load)', count: null };
      body.filters = seg.filters;
    }
    const answer = await call('POST', '/segments/preview', body);
    const n = numbers.format(answer.count) + (answer.count === 1 ? ' browser' : ' browsers');
    return { text: r.excludeSegmentId || r.excludeFilters ? 'at most ' + n + ' (before leaving out the excluded)' : n, count: answer.count };
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
    const a = await audience(r);
    setConfirm({ request: r, audience: a.text, none: a.count === 0 });
  }, (err) => composerError(err, null, v));
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
      unsent.forget();
      go('notifications/' + answer.notificationId);
    } catch (err) {
      f.setErrors(composerError(err, r, v));
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
      unsent.forget();
      go('notifications?status=draft');
    } catch (err) {
      f.setErrors(composerError(err, r, v));
    }
  });
  // The website's templates: the form starts from one (its content
  // replaces the form's; the audience and timing stay), and the form's
  // content saves as a new one.
  const templateList = useLoad(() => call('GET', '/templates'), [site.projectId]);
  const templates = (templateList.data && templateList.data.templates) || [];
  const [templateId, setTemplateId] = useState('');
  const fromTemplate = (id) => {
    setTemplateId(id);
    const t = templates.find((x) => x.id === id);
    if (t) f.setValues((old) => ({ ...old, ...contentValues(t) }));
  };
  const [saving, setSaving] = useState(null); // null, or {name, error} while naming a new template
  const [savedTemplate, setSavedTemplate] = useState('');
  const saveTemplate = once(async () => {
    setSavedTemplate('');
    try {
      const t = await call('POST', '/templates', templateBody({ ...v, name: saving.name }, false));
      setSaving(null);
      setSavedTemplate('Saved as template “' + t.name + '”.');
      templateList.reload();
    } catch (err) {
      const errors = templateError(err, v, 'templateName');
      if (errors.templateName) setSaving({ ...saving, error: errors.templateName });
      else {
        setSaving({ ...saving, error: undefined });
        f.setErrors(errors);
      }
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
        ? { form: 'No test devices yet: subscribe a browser on the Install page first.' } : composerError(err, content, v));
    }
  });
  const radio = (group, value, label) => html`<label class="choice"><input type="radio" name=${group} value=${value}
    checked=${v[group] === value} onChange=${() => f.set(group)(value)} /> ${label}</label>`;
  const picker = (id, label, value, options, empty, error) => html`<div class="field"><label for=${id}>${label}</label>
    <select id=${id} value=${value} onChange=${(e) => f.set(id)(e.currentTarget.value)} aria-invalid=${error ? 'true' : undefined}
      aria-describedby=${error ? id + '-error' : undefined}>
      <option value="">${empty}</option>
      ${options.map((o) => html`<option value=${o.id}>${o.name}</option>`)}
    </select>${error && html`<p class="error" id=${id + '-error'}>${error}</p>`}</div>`;
  // link is an optional field of a link or an image's address.
  const link = (id, label, value, onInput, hint) => html`<${Field} id=${id} label=${label} type="url" value=${value} onInput=${onInput}
    error=${f.errors[id]} required=${false} hint=${hint} />`;
  const setB = (k) => (x) => f.set('b')({ ...v.b, [k]: x });
  if (!loaded) {
    return html`<section><h1>Edit draft</h1><${FormError} errors=${f.errors} /><${Alert} error=${draft.error} />
      ${!f.errors.form && !draft.error && html`<p role="status">Loading…</p>`}</section>`;
  }
  return html`<section class="composer">
    <h1>${draftId ? 'Edit draft' : 'New notification'}</h1>
    <form onSubmit=${review} novalidate>
      ${restored && html`<div class="notice"><p>${draftId ? 'Restored your unsaved changes to this draft.' : 'Restored your unsent notification.'}</p>
        <button type="button" class="secondary" onClick=${startOver}>${draftId ? 'Discard changes' : 'Start over'}</button></div>`}
      <${FormError} errors=${f.errors} />
      <${Alert} error=${facets.error} what="The labels for merge tags did not load" />
      ${!draftId && html`<div class="field"><label for="template">Start from a template</label>
        <select id="template" value=${templateId} onChange=${(e) => fromTemplate(e.currentTarget.value)} aria-describedby="template-hint">
          <option value="">No template</option>
          ${templates.map((t) => html`<option value=${t.id}>${t.name}</option>`)}</select>
        <p class="hint" id="template-hint">${templateList.data && templates.length === 0 ? 'No templates yet: save this one as a template, or make one on the Templates page.'
          : 'Its content fills the fields below; change what this send needs.'}</p></div>`}
      <${Alert} error=${templateList.error} what="The templates did not load" />
      <${Content} v=${v} set=${f.set} errors=${f.errors} labels=${lists.labels}>
        <label class="choice"><input type="checkbox" checked=${v.transactional} onChange=${(e) => f.set('transactional')(e.currentTarget.checked)} /> Transactional (goes out in quiet hours, skips the frequency cap)</label>
      <//>
      <fieldset><legend>A/B test</legend>
        <label class="choice"><input type="checkbox" checked=${v.ab} onChange=${(e) => f.set('ab')(e.currentTarget.checked)} /> Test a version B</label>
        ${v.ab && html`<div>
          <p class="hint">Each browser gets version A (the fields above) or B; B's empty fields come from A.</p>
          <${Field} id="b-title" label="Version B title" value=${v.b.title} onInput=${setB('title')} required=${false} error=${f.errors['b-title']} />
          <${Field} id="b-body" label="Version B message" value=${v.b.body} onInput=${setB('body')} required=${false} error=${f.errors['b-body']} />
          ${link('b-url', 'Version B link', v.b.url, setB('url'))}
          ${link('b-image', 'Version B image', v.b.image, setB('image'))}
          <label class="choice"><input type="checkbox" checked=${v.autoWinner} onChange=${(e) => f.set('autoWinner')(e.currentTarget.checked)} /> Send the winner to the rest automatically</label>
          ${v.autoWinner && html`<div class="row">
            <${Field} id="testPercent" label="Test group (% of the audience)" type="number" value=${v.testPercent} onInput=${f.set('testPercent')} hint="1 to 90." />
            <${Field} id="afterHours" label="Pick the winner after (hours)" type="number" value=${v.afterHours} onInput=${f.set('afterHours')} hint="1 to 168." />
          </div>`}
        </div>`}
      </fieldset>
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
      <${Budget} size=${payloadSize(sendRequest(v, site, false), site, settings.data && settings.data.settings)} />
      <div class="actions"><button type="submit" disabled=${f.busy}>Review and send</button>
        <button type="button" class="secondary" onClick=${saveDraft} disabled=${pending}>Save draft</button>
        <button type="button" class="secondary" onClick=${test} disabled=${pending}>Send a test</button>
        ${!saving && html`<button type="button" class="secondary" onClick=${() => { setSavedTemplate(''); setSaving({ name: '' }); }}>Save as template</button>`}</div>
      ${tested && html`<p role="status">${tested}</p>`}
      ${saving && html`<fieldset><legend>Save the content as a template</legend>
        <${Field} id="templateName" label="Template name" value=${saving.name} onInput=${(x) => setSaving({ name: x })} error=${saving.error} />
        <div class="actions"><button type="button" onClick=${saveTemplate} disabled=${pending}>Save template</button>
          <button type="button" class="secondary" onClick=${() => setSaving(null)}>Cancel</button></div></fieldset>`}
      ${savedTemplate && html`<p role="status">${savedTemplate}</p>`}
    </form>
    <aside aria-label="Previews">
      <${Preview} v=${v} site=${site} />
      ${v.ab && html`<${Preview} v=${{ ...v, title: v.b.title || v.title, body: v.b.body || v.body, url: v.b.url || v.url, image: v.b.image || v.image }}
        site=${site} heading="Version B preview" id="preview-b" />`}
    </aside>
    ${confirm && html`<div class="dialog" role="dialog" aria-modal="true" aria-labelledby="confirm-title"
      onKeyDown=${(e) => { if (e.key === 'Escape') setConfirm(null); }}>
      <h2 id="confirm-title">Send “${confirm.request.title}”?</h2>
      <p>It goes to ${confirm.audience}${when(confirm.request, site, v.sendZone)}.</p>
      ${confirm.none && html`<p class="warning">This reaches no one yet: no subscribed browser matches this audience.
        Choose another audience, or save it as a draft until people subscribe.</p>`}
      <div class="actions">${!confirm.none && html`<button type="button" ref=${sendButton} onClick=${send} disabled=${pending}>Send</button>`}
        <button type="button" class="secondary" ref=${confirm.none ? sendButton : undefined} onClick=${() => setConfirm(null)}>Back</button></div>
    </div>`}
  </section>`;
}
