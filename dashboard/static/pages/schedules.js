// Recurring schedules (issue 35, part 3): a send that goes out again and
// again by a rule, each occurrence once. The list shows each schedule's
// next runs on the website's clock, its last budget refusal, why it was
// paused, and its latest occurrences (sent, linked to the notification,
// or skipped after an outage); the form makes and changes schedules, their
// message from the fields or a saved template (the fields then override
// the template's).
import { html, useState } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { Alert, Field, useForm, FormError, errorsOf, actions, selectField } from '../forms.js';
import { useLoad } from '../lists.js';
import { formatTime, timeZones } from '../format.js';

const weekDays = [['MO', 'Monday'], ['TU', 'Tuesday'], ['WE', 'Wednesday'], ['TH', 'Thursday'], ['FR', 'Friday'], ['SA', 'Saturday'], ['SU', 'Sunday']];

// ruleOf is the RRULE the form's repeat choice writes.
export function ruleOf(v) {
  if (v.repeat === 'custom') return v.rule.trim();
  const [h, m] = v.at.split(':').map((x) => String(Number(x)));
  const at = ';BYHOUR=' + h + ';BYMINUTE=' + m;
  if (v.repeat === 'weekly') return 'FREQ=WEEKLY;BYDAY=' + (v.days.length ? v.days.join(',') : 'MO') + at;
  if (v.repeat === 'monthly') return 'FREQ=MONTHLY;BYMONTHDAY=' + v.monthDay + at;
  return 'FREQ=DAILY' + at;
}

// scheduleValues is the form of schedule s, or of a new one.
function scheduleValues(s, site) {
  const a = (s && s.audience) || { everyone: true };
  const c = (s && s.content) || {};
  return {
    name: s ? s.name : '', audience: a.topicId ? 'topic' : a.segmentId ? 'segment' : a.filters ? 'filters' : 'everyone', topic: a.topicId || '', segment: a.segmentId || '',
    title: c.title || '', body: c.body || '', url: c.url || '',
    repeat: s ? 'custom' : 'daily', at: '09:00', days: ['MO'], monthDay: '1', rule: s ? s.rule : '',
    timezone: s ? s.timezone : site.timezone || 'UTC', perTimezone: s ? s.perTimezone : false,
    catchUpMinutes: s ? String(s.catchUpMinutes) : '60', status: s ? s.status : 'active',
    templateId: (s && s.templateId) || '',
  };
}

// scheduleBody is the form v as the body of POST or PUT /schedules. The
// saved audience's filters and exclusions (made through the API, which
// the form does not edit) stay as they are.
export function scheduleBody(v, saved = {}) {
  const audience = v.audience === 'topic' ? { topicId: v.topic } : v.audience === 'segment' ? { segmentId: v.segment }
    : v.audience === 'filters' && saved.filters ? { filters: saved.filters } : { everyone: true };
  if (saved.excludeSegmentId) audience.excludeSegmentId = saved.excludeSegmentId;
  if (saved.excludeFilters) audience.excludeFilters = saved.excludeFilters;
  const content = {};
  if (v.title.trim() || !v.templateId) content.title = v.title;
  if (v.body.trim()) content.body = v.body;
  if (v.url.trim()) content.url = v.url.trim();
  // A schedule from a template (made through the API) keeps it; its
  // content is what overrides the template's.
  const body = { name: v.name, audience, content: Object.keys(content).length || !v.templateId ? content : null,
    templateId: v.templateId || null, rule: ruleOf(v), timezone: v.timezone, perTimezone: v.perTimezone, status: v.status };
  if (v.catchUpMinutes.trim()) body.catchUpMinutes = Number(v.catchUpMinutes);
  return body;
}

// scheduleError maps a refusal to the field it concerns.
function scheduleError(err) {
  if (!(err instanceof ApiError)) return errorsOf(err);
  const at = { name_required: 'name', invalid_rule: 'rule', invalid_tz: 'timezone', title_required: 'title', invalid_url: 'url',
    unknown_topic: 'topic', segment_not_found: 'segment', invalid_audience: 'audience', template_not_found: 'templateId' };
  return at[err.code] ? { [at[err.code]]: err.message } : errorsOf(err);
}

// ScheduleForm makes a schedule (schedule absent) or changes one; done(saved) ends it.
function ScheduleForm({ site, schedule, done }) {
  const f = useForm(scheduleValues(schedule, site));
  const v = f.values;
  const select = selectField(f, true);
  const lists = useLoad(() => Promise.all([call('GET', '/topics'), call('GET', '/segments'), call('GET', '/templates')]), [site.projectId]);
  const topics = lists.data ? lists.data[0].topics.map((t) => [t.id, t.name]) : [];
  const segments = lists.data ? lists.data[1].segments.map((s) => [s.id, s.name]) : [];
  const templates = lists.data ? lists.data[2].templates.map((t) => [t.id, t.name]) : [];
  const saved = (schedule && schedule.audience) || {};
  const save = f.submit(async () => {
    if (v.repeat !== 'custom' && !/^\d{1,2}:\d{2}$/.test(v.at)) {
      f.setErrors({ at: 'A time of day, such as 09:00.' });
      return;
    }
    const body = scheduleBody(v, saved);
    done(schedule ? await call('PUT', '/schedules/' + encodeURIComponent(schedule.id), body) : await call('POST', '/schedules', body));
  }, scheduleError);
  const toggleDay = (d) => f.set('days')(v.days.includes(d) ? v.days.filter((x) => x !== d) : [...v.days, d]);
  // A custom rule's text starts from what the choice above wrote.
  const setRepeat = (r) => {
    if (r === 'custom' && !v.rule) f.set('rule')(ruleOf(v));
    f.set('repeat')(r);
  };
  return html`<form class="schedule-form" onSubmit=${save} novalidate aria-label=${schedule ? 'Schedule “' + schedule.name + '”' : 'New schedule'}>
    <h2>${schedule ? 'Change schedule “' + schedule.name + '”' : 'New schedule'}</h2>
    <${FormError} errors=${f.errors} />
    <${Field} id="schedule-name" label="Schedule name" value=${v.name} onInput=${f.set('name')} error=${f.errors.name} />
    <fieldset><legend>Message</legend>
      ${lists.data ? select('templateId', 'Template', templates, { empty: 'None: the message below', none: 'No templates yet: make one on the Templates page.' })
        : !lists.error && html`<p role="status">Loading the templates…</p>`}
      <${Alert} error=${lists.error} what="The topics, segments and templates did not load" />
      ${v.templateId && html`<p class="hint">The template’s content goes out; a field filled in below takes the place of the template’s.</p>`}
      <${Field} id="schedule-title" label="Title" value=${v.title} onInput=${f.set('title')} error=${f.errors.title} required=${!v.templateId} />
      <${Field} id="schedule-body" label="Text" value=${v.body} onInput=${f.set('body')} error=${f.errors.body} required=${false} />
      <${Field} id="schedule-url" label="Link" value=${v.url} onInput=${f.set('url')} error=${f.errors.url} required=${false}
        hint="Where a click leads; the website's default link when empty." />
    </fieldset>
    <fieldset><legend>Audience</legend>
      ${select('audience', 'Send to', [['everyone', 'Every subscriber'], ['topic', 'A topic'], ['segment', 'A segment'],
        ...(saved.filters ? [['filters', 'People matching its rules (as saved)']] : [])])}
      ${v.audience === 'topic' && select('topic', 'Topic', topics, { empty: 'Choose a topic', none: 'No topics yet.' })}
      ${v.audience === 'segment' && select('segment', 'Segment', segments, { empty: 'Choose a segment', none: 'No segments yet.' })}
    </fieldset>
    <fieldset><legend>When</legend>
      ${select('repeat', 'Repeats', [['daily', 'Every day'], ['weekly', 'Every week'], ['monthly', 'Every month'], ['custom', 'Custom rule (RRULE)']])}
      ${v.repeat === 'weekly' && html`<fieldset class="days"><legend>On</legend>${weekDays.map(([d, name]) => html`<label class="choice">
        <input type="checkbox" checked=${v.days.includes(d)} onChange=${() => toggleDay(d)} /> ${name}</label>`)}</fieldset>`}
      ${v.repeat === 'monthly' && html`<${Field} id="schedule-monthDay" label="Day of the month" type="number" value=${v.monthDay}
        onInput=${f.set('monthDay')} hint="1 to 31, or -1 for the last day; a month without that day is passed over." />`}
      ${v.repeat !== 'custom' && html`<${Field} id="schedule-at" label="At" type="time" value=${v.at} onInput=${f.set('at')} error=${f.errors.at} />`}
      ${v.repeat === 'custom' && html`<${Field} id="schedule-rule" label="Rule" value=${v.rule} onInput=${f.set('rule')} error=${f.errors.rule}
        hint="An RRULE: FREQ (DAILY, WEEKLY, MONTHLY), INTERVAL, BYDAY, BYMONTHDAY, BYHOUR, BYMINUTE. For example FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=8;BYMINUTE=30." />`}
      ${select('timezone', 'Time zone', timeZones().map((z) => [z, z]))}
      <label class="choice"><input type="checkbox" checked=${v.perTimezone} onChange=${(e) => f.set('perTimezone')(e.currentTarget.checked)} />
        At that time in each subscriber’s own time zone</label>
      <${Field} id="schedule-catchUpMinutes" label="Catch up (minutes)" type="number" value=${v.catchUpMinutes} onInput=${f.set('catchUpMinutes')}
        error=${f.errors.catchUpMinutes} hint="After an outage, a run missed by less than this goes late, once; an older one is skipped." />
      ${select('status', 'Status', [['active', 'Active'], ['paused', 'Paused']])}
    </fieldset>
    <div class="actions"><button type="submit" disabled=${f.busy}>${schedule ? 'Save schedule' : 'Create schedule'}</button>
      <button type="button" class="secondary" onClick=${() => done(null)}>Cancel</button></div>
  </form>`;
}

// audienceText is who schedule s sends to, in words; a topic or segment
// not among the loaded ones (loaded true) was deleted.
function audienceText(s, names, loaded) {
  const a = s.audience;
  const name = (kind, id) => names[kind + ':' + id] || (loaded ? 'deleted' : id);
  if (a.topicId) return 'Topic ' + name('topic', a.topicId);
  if (a.segmentId) return 'Segment ' + name('segment', a.segmentId);
  if (a.filters) return 'Filters';
  return 'Every subscriber';
}

// History is a schedule's latest occurrences.
function History({ schedule, site }) {
  if (schedule.history.length === 0) return html`<p class="empty">No runs yet.</p>`;
  return html`<div class="scroll"><table>
    <caption class="visually-hidden">${'Latest runs of ' + schedule.name}</caption>
    <thead><tr><th scope="col">Run</th><th scope="col">Outcome</th><th scope="col">Notification</th></tr></thead>
    <tbody>${schedule.history.map((h) => html`<tr><td>${formatTime(h.occurrence, site.timezone)}</td>
      <td>${h.outcome === 'skipped' ? 'Skipped (missed by more than ' + schedule.catchUpMinutes + ' minutes)' : 'Sent'}</td>
      <td>${h.notificationId ? html`<a href=${'#/notifications/' + encodeURIComponent(h.notificationId)}>View</a>` : '—'}</td></tr>`)}</tbody>
  </table></div>`;
}

export function Schedules({ site }) {
  const canChange = site.role !== 'viewer';
  // The list, then each one's detail: its next runs and history.
  const list = useLoad(async () => {
    const { schedules } = await call('GET', '/schedules');
    return Promise.all(schedules.map((s) => call('GET', '/schedules/' + encodeURIComponent(s.id))));
  }, [site.projectId]);
  const sources = useLoad(() => Promise.all([call('GET', '/topics'), call('GET', '/segments')]), [site.projectId]);
  const names = {};
  if (sources.data) {
    for (const t of sources.data[0].topics) names['topic:' + t.id] = t.name;
    for (const s of sources.data[1].segments) names['segment:' + s.id] = s.name;
  }
  const [editing, setEditing] = useState(null); // null, 'new', or the schedule changed
  const [failed, setFailed] = useState(null);
  const act = actions(() => {
    setFailed(null);
    list.reload();
  }, setFailed);
  const done = (saved) => {
    setEditing(null);
    if (saved) list.reload();
  };
  const schedules = list.data;
  return html`<section>
    <h1>Schedules</h1>
    <p>Sends that go out again and again: a digest every morning, a reminder every Friday. Each run goes once; times are shown in the website’s time zone (${site.timezone || 'UTC'}).</p>
    ${canChange && !editing && html`<p><button type="button" onClick=${() => setEditing('new')}>New schedule</button></p>`}
    ${editing && html`<${ScheduleForm} site=${site} schedule=${editing === 'new' ? null : editing} done=${done} key=${editing === 'new' ? 'new' : editing.id} />`}
    <${Alert} error=${list.error} />
    <${Alert} error=${failed} what="The change failed" />
    ${!schedules && !list.error && html`<p role="status">Loading…</p>`}
    ${schedules && schedules.length === 0 && html`<p class="empty">No schedules yet. ${canChange ? 'Make one with New schedule.' : 'An owner or admin makes them here.'}</p>`}
    ${schedules && schedules.map((s) => html`<article class="schedule" key=${s.id} aria-labelledby=${'schedule-' + s.id}>
      <h2 id=${'schedule-' + s.id}>${s.name}</h2>
      <dl class="facts"><dt>Status</dt><dd>${s.status === 'active' ? 'Active' : 'Paused'}${s.pausedReason ? ': ' + s.pausedReason : ''}</dd>
        <dt>Sends</dt><dd>${(s.content && s.content.title) || 'From a template'}</dd>
        <dt>To</dt><dd>${audienceText(s, names, !!sources.data)}</dd>
        <dt>Rule</dt><dd><code>${s.rule}</code>${' in ' + s.timezone}${s.perTimezone ? ', at that time in each subscriber’s time zone' : ''}</dd>
        ${s.lastRefusal && html`<dt>Last held back</dt><dd>${'The run of ' + formatTime(s.lastRefusal.occurrence, site.timezone) + ' was held: ' + s.lastRefusal.reason +
          (s.lastRefusal.retryAt ? '; it is tried again at ' + formatTime(s.lastRefusal.retryAt, site.timezone) + '.' : '.')}</dd>`}
      </dl>
      <h3>Next runs</h3>
      ${s.nextRuns.length === 0 ? html`<p class="empty">None: the schedule is paused or has ended.</p>`
        : html`<ol aria-label=${'Next runs of ' + s.name}>${s.nextRuns.map((at) => html`<li><time datetime=${at}>${formatTime(at, site.timezone)}</time></li>`)}</ol>`}
      <h3>Latest runs</h3>
      <${History} schedule=${s} site=${site} />
      ${canChange && html`<div class="actions">
        <button type="button" class="secondary" aria-label=${'Change schedule ' + s.name} onClick=${() => setEditing(s)}>Change</button>
        <button type="button" class="secondary" aria-label=${(s.status === 'active' ? 'Pause schedule ' : 'Resume schedule ') + s.name}
          onClick=${act('PUT', '/schedules/' + encodeURIComponent(s.id), { status: s.status === 'active' ? 'paused' : 'active' })}>${s.status === 'active' ? 'Pause' : 'Resume'}</button>
        <button type="button" class="secondary" aria-label=${'Delete schedule ' + s.name}
          onClick=${act('DELETE', '/schedules/' + encodeURIComponent(s.id), undefined, 'Delete the schedule “' + s.name + '”? Its history goes with it; its notifications stay.')}>Delete</button>
      </div>`}
    </article>`)}
  </section>`;
}
