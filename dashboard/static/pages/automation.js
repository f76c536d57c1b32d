// The automation editor: makes an automation or changes one (issue 32):
// its trigger, stop events, caps and 1 to 10 pushes, each a delay after
// the trigger with the content the composer writes (content.js), and the
// goal that credits it. Leaving with unsaved changes asks first.
import { html, useState, useEffect } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { go } from '../router.js';
import { Alert, Field, useForm, FormError, errorsOf, selectField, removeAndLeave, canonical } from '../forms.js';
import { useLoad } from '../lists.js';
import { useGuard } from '../unsent.js';
import { RuleBuilder, eventRules, apiFilters, builderFilters, buildable, ruleBlank, ruleError } from '../rules.js';
import { contentValues, contentRequest, contentField } from '../sends.js';
import { Content } from './content.js';
import { statusNames } from './automations.js';

const maxPushes = 10;
const maxDelay = 31536000; // seconds: a year

// units of a push's delay; seconds only for a delay made through the API
// that is no whole number of minutes.
const units = [['seconds', 1], ['minutes', 60], ['hours', 3600], ['days', 86400]];
const unitSeconds = Object.fromEntries(units);

const triggers = [['event', 'An event arrives'], ['subscribed', 'A browser subscribes'],
  ['topic_opt_in', 'Someone opts in to a topic'], ['segment_entered', 'Someone enters a segment']];

// pushValues is the form of one message: its content and its delay in the
// largest unit that holds it whole.
function pushValues(m) {
  const seconds = (m && m.delaySeconds) || 0;
  const [unit, n] = [...units].reverse().find(([, s]) => seconds % s === 0 && (seconds > 0 || s === 3600));
  return { ...contentValues(m), delay: String(seconds / n), unit };
}

// editorValues is the form of automation a, or of a new one.
export function editorValues(a) {
  if (!a) {
    return { name: '', status: 'draft', goalId: '', type: 'event', event: '', conditions: builderFilters(null, eventRules), topicId: '', segmentId: '',
      stopEvents: '', restart: true, transactional: false, perDay: '', perWeek: '', pushes: [pushValues({ delaySeconds: 3600 })] };
  }
  const t = a.trigger;
  return {
    name: a.name, status: a.status, goalId: a.goalId || '', type: t.type, event: t.event || '', conditions: builderFilters(t.conditions, eventRules),
    topicId: t.topicId || '', segmentId: t.segmentId || '', stopEvents: a.stopEvents.join('\n'), restart: a.restart,
    transactional: a.transactional, perDay: a.caps.perDay ? String(a.caps.perDay) : '', perWeek: a.caps.perWeek ? String(a.caps.perWeek) : '',
    pushes: a.messages.map(pushValues),
  };
}

// editable reports whether the form shows automation a exactly, so that
// saving it changes only what the person changed: conditions the rule
// builder can show, stop events without line breaks, and messages with no
// member the push form leaves out.
export function editable(a) {
  const c = a.trigger.conditions;
  return (!c || buildable(c, eventRules)) && a.stopEvents.every((e) => !/\n/.test(e)) &&
    a.messages.every((m) => {
      const { delaySeconds, ...content } = m;
      return canonical(contentRequest(contentValues(m))) === canonical(content);
    });
}

// triggerBody is the trigger of type the form v says (an automation's
// trigger, a journey's entry): its event and conditions, topic or segment.
export function triggerBody(type, v) {
  const trigger = { type };
  if (type === 'event') {
    trigger.event = v.event.trim();
    if (!v.conditions.rules.every(ruleBlank)) trigger.conditions = apiFilters(v.conditions);
  }
  if (type === 'topic_opt_in') trigger.topicId = v.topicId;
  if (type === 'segment_entered') trigger.segmentId = v.segmentId;
  return trigger;
}

// automationBody is the form v as the body of POST or PUT /automations.
export function automationBody(v) {
  const trigger = triggerBody(v.type, v);
  const cap = (x) => (x.trim() ? Number(x) : null);
  return {
    name: v.name, status: v.status, goalId: v.goalId || null, trigger, stopEvents: v.stopEvents.split('\n').map((e) => e.trim()).filter(Boolean),
    restart: v.restart, transactional: v.transactional, caps: { perDay: cap(v.perDay), perWeek: cap(v.perWeek) },
    messages: v.pushes.map((p) => ({ delaySeconds: Math.round(Number(p.delay) * unitSeconds[p.unit]), ...contentRequest(p) })),
  };
}

// formErrors are what the form refuses before asking the API: an
// incomplete condition, a cap that is no whole number (JSON would carry it
// as no bound), a delay that is no number of 0 to a year.
function formErrors(v) {
  const errors = {};
  for (const k of ['perDay', 'perWeek']) {
    if (v[k].trim() && !/^\d+$/.test(v[k].trim())) errors[k] = 'A whole number of 1 to 1,000, or empty for no bound.';
  }
  if (v.type === 'event' && !v.conditions.rules.every(ruleBlank) && ruleError(v.conditions)) errors.conditions = ruleError(v.conditions);
  v.pushes.forEach((p, i) => {
    const s = Number(p.delay) * unitSeconds[p.unit];
    if (!p.delay.trim() || !Number.isFinite(s) || s < 0 || s > maxDelay) errors['m' + i + '-delay'] = 'A delay of 0 to 365 days.';
  });
  return errors;
}

// automationError maps a refusal to the field it concerns: a message's
// member ("messages[1]: …") to that push's field.
function automationError(err, v) {
  if (!(err instanceof ApiError)) return errorsOf(err);
  const at = { goal_not_found: 'goalId', name_required: 'name', invalid_name: 'name', invalid_status: 'status', unknown_topic: 'topicId', segment_not_found: 'segmentId',
    invalid_filters: 'conditions', invalid_stop_events: 'stopEvents', invalid_trigger: v.type === 'event' ? 'event' : 'type' };
  if (at[err.code]) return { [at[err.code]]: err.message };
  if (err.code === 'invalid_caps') return { [/perWeek/.test(err.message) ? 'perWeek' : 'perDay']: err.message };
  const delay = /^messages\[(\d+)\]\.delaySeconds/.exec(err.message);
  if (delay) return { ['m' + delay[1] + '-delay']: err.message };
  const member = /^messages\[(\d+)\]: (.*)$/.exec(err.message);
  if (member && v.pushes[Number(member[1])]) {
    // At the push's field, the API's words without the push's index.
    const field = contentField(err.code, member[2], v.pushes[Number(member[1])]);
    return field === 'form' ? { form: err.message } : { ['m' + member[1] + '-' + field]: member[2] };
  }
  return errorsOf(err);
}

// AutomationEditor makes an automation (id absent) or changes automation id.
export function AutomationEditor({ site, id }) {
  const f = useForm(editorValues(null));
  const v = f.values;
  const saved = useLoad(() => (id ? call('GET', '/automations/' + encodeURIComponent(id)) : Promise.resolve(null)), [id]);
  const choices = useLoad(() => Promise.all([call('GET', '/topics'), call('GET', '/segments'), call('GET', '/goals')]), [site.projectId]);
  const facets = useLoad(() => call('GET', '/audience/subscribers/facets'), [site.projectId]);
  const templateList = useLoad(() => call('GET', '/templates'), [site.projectId]);
  const templates = (templateList.data && templateList.data.templates) || [];
  const topics = (choices.data && choices.data[0].topics) || [];
  const segments = (choices.data && choices.data[1].segments) || [];
  const goals = (choices.data && choices.data[2].goals) || [];
  const labels = ((facets.data && facets.data.tags) || []).map((t) => t.key);
  const [state, setState] = useState(id ? 'loading' : 'ready'); // loading, ready, or why the form cannot show it
  useEffect(() => {
    if (!saved.data) return;
    if (!editable(saved.data)) {
      setState('This automation holds conditions or push members the editor cannot show; change it through the API.');
      return;
    }
    f.setValues(editorValues(saved.data));
    setBaseline(JSON.stringify(automationBody(editorValues(saved.data))));
    setState('ready');
  }, [saved.data]);
  const [baseline, setBaseline] = useState(() => JSON.stringify(automationBody(editorValues(null))));
  const guard = useGuard(state === 'ready' && JSON.stringify(automationBody(v)) !== baseline,
    'Leave this automation? Your unsaved changes will be discarded.');
  const setPush = (i) => (name) => (x) => f.set('pushes')(v.pushes.map((p, j) => (j === i ? { ...p, [name]: x } : p)));
  const save = f.submit(async () => {
    const bad = formErrors(v);
    if (Object.keys(bad).length) {
      f.setErrors(bad);
      return;
    }
    const body = automationBody(v);
    if (id) await call('PUT', '/automations/' + encodeURIComponent(id), body);
    else await call('POST', '/automations', body);
    guard.forget();
    go('automations');
  }, (err) => automationError(err, v));
  const remove = () => removeAndLeave(f, guard, 'Delete the automation “' + saved.data.name + '”? Its pending pushes will not go.',
    '/automations/' + encodeURIComponent(id), 'automations');
  const title = id ? (saved.data ? 'Automation “' + saved.data.name + '”' : 'Automation') : 'New automation';
  if (state !== 'ready') {
    return html`<section><h1>${title}</h1><${Alert} error=${saved.error} /><${FormError} errors=${f.errors} />
      ${state === 'loading' ? !saved.error && html`<p role="status">Loading…</p>` : html`<p class="warning">${state}</p>`}
      ${saved.data && html`<div class="actions"><button type="button" class="secondary" onClick=${remove}>Delete automation</button></div>`}
    </section>`;
  }
  const select = selectField(f, !!choices.data);
  const box = (name, label) => html`<label class="choice"><input type="checkbox" checked=${v[name]}
    onChange=${(e) => f.set(name)(e.currentTarget.checked)} /> ${label}</label>`;
  return html`<section class="automation">
    <h1>${title}</h1>
    <form onSubmit=${save} novalidate>
      <${FormError} errors=${f.errors} />
      <${Field} id="name" label="Automation name" value=${v.name} onInput=${f.set('name')} error=${f.errors.name} />
      ${select('status', 'Status', Object.entries(statusNames))}
      <p class="hint">Only an active automation starts runs; pausing one keeps its pending pushes, which go if it is active again when they are due.</p>
      <fieldset><legend>Trigger</legend>
        <${Alert} error=${choices.error} what="The topics and segments did not load" />
        ${select('type', 'Starts when', triggers)}
        ${v.type === 'event' && html`<${Field} id="event" label="Event name" value=${v.event} onInput=${f.set('event')} error=${f.errors.event}
            hint="The name your website posts to /events, such as cart.updated." />
          <${RuleBuilder} filters=${v.conditions} onChange=${f.set('conditions')} kind=${eventRules} name="condition"
            legend="Conditions on the event’s properties (optional)" error=${f.errors.conditions} />`}
        ${v.type === 'topic_opt_in' && select('topicId', 'Topic', topics.map((t) => [t.id, t.name]),
          { empty: 'Choose a topic', none: 'No topics yet: make one on the Segments page.' })}
        ${v.type === 'segment_entered' && select('segmentId', 'Segment', segments.map((g) => [g.id, g.name]),
          { empty: 'Choose a segment', none: 'No segments yet: make one on the Segments page.' })}
      </fieldset>
      <div class="field"><label for="stopEvents">Stop events</label>
        <textarea id="stopEvents" rows="2" value=${v.stopEvents} onInput=${(e) => f.set('stopEvents')(e.currentTarget.value)}
          aria-invalid=${f.errors.stopEvents ? 'true' : undefined} aria-describedby=${'stopEvents-hint' + (f.errors.stopEvents ? ' stopEvents-error' : '')}></textarea>
        <p class="hint" id="stopEvents-hint">Event names, one a line: when the person does one, their pushes still waiting are dropped (a purchase, after a cart).</p>
        ${f.errors.stopEvents && html`<p class="error" id="stopEvents-error">${f.errors.stopEvents}</p>`}</div>
      ${select('goalId', 'Goal', goals.map((g) => [g.id, g.name]), { empty: 'No goal', none: 'No goals yet: make one on the Goals page.' })}
      <p class="hint">What this automation works toward; the Goals page shows what its pushes earned.</p>
      ${box('restart', 'Start the countdown again when it triggers during a run')}
      ${box('transactional', 'Transactional (goes out in quiet hours, skips the frequency cap)')}
      <fieldset><legend>At most, per person</legend><div class="row">
        <${Field} id="perDay" label="Pushes a day" type="number" value=${v.perDay} onInput=${f.set('perDay')} error=${f.errors.perDay} required=${false} hint="1 to 1,000; no bound when empty." />
        <${Field} id="perWeek" label="Pushes a week" type="number" value=${v.perWeek} onInput=${f.set('perWeek')} error=${f.errors.perWeek} required=${false} hint="1 to 1,000; no bound when empty." />
      </div></fieldset>
      <${Alert} error=${facets.error} what="The labels for merge tags did not load" />
      <${Alert} error=${templateList.error} what="The templates did not load" />
      ${v.pushes.map((p, i) => {
        const of = ' (push ' + (i + 1) + ')';
        const pid = 'm' + i + '-';
        return html`<fieldset class="push" key=${i}><legend>${'Push ' + (i + 1)}</legend>
          <div class="row">
            <${Field} id=${pid + 'delay'} label=${'Delay' + of} type="number" value=${p.delay} onInput=${setPush(i)('delay')} error=${f.errors[pid + 'delay']}
              hint="After the trigger." />
            <div class="field"><label for=${pid + 'unit'}>${'Delay unit' + of}</label>
              <select id=${pid + 'unit'} value=${p.unit} onChange=${(e) => setPush(i)('unit')(e.currentTarget.value)}>
                ${units.filter(([u]) => u !== 'seconds' || p.unit === 'seconds').map(([u]) => html`<option value=${u}>${u}</option>`)}</select></div>
          </div>
          <${Content} v=${p} set=${setPush(i)} errors=${f.errors} labels=${labels} prefix=${pid} of=${of} templates=${templates} />
          ${v.pushes.length > 1 && html`<button type="button" class="secondary" onClick=${() => f.set('pushes')(v.pushes.filter((_, j) => j !== i))}>
            ${'Remove push ' + (i + 1)}</button>`}
        </fieldset>`;
      })}
      ${v.pushes.length < maxPushes && html`<button type="button" class="secondary"
        onClick=${() => f.set('pushes')([...v.pushes, pushValues({ delaySeconds: 86400 })])}>Add push</button>`}
      <div class="actions"><button type="submit" disabled=${f.busy}>${id ? 'Save automation' : 'Create automation'}</button>
        <a class="button secondary" href="#/automations">Cancel</a>
        ${id && html`<button type="button" class="secondary" onClick=${remove}>Delete automation</button>`}</div>
    </form>
  </section>`;
}
