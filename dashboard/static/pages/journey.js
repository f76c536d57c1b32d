// The journey builder (issue 32): makes a journey or changes one, as a
// vertical list of steps (steps.js) whose ways out name other steps by id:
// no free canvas. On a journey's page each step shows its figures, and the
// version is shown; a save that makes a new version says so.
import { html, useState, useEffect } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { go } from '../router.js';
import { Alert, Field, useForm, FormError, errorsOf, selectField, removeAndLeave, canonical } from '../forms.js';
import { useLoad } from '../lists.js';
import { useGuard } from '../unsent.js';
import { RuleBuilder, eventRules, audienceRules, builderFilters, buildable, ruleBlank, ruleError } from '../rules.js';
import { contentField } from '../sends.js';
import { statusNames } from './automations.js';
import { triggerBody } from './automation.js';
import { Step, stepValues, stepBody, stepTypes, durationSeconds, Figures } from './steps.js';

const maxSeconds = 31536000; // a year

// entries are what enrols a person: the API, or an automation's trigger.
const entries = [['api', 'Only by the API (POST /journeys/{id}/enrollments)'], ['event', 'An event arrives'], ['subscribed', 'A browser subscribes'],
  ['topic_opt_in', 'Someone opts in to a topic'], ['segment_entered', 'Someone enters a segment']];

// journeyValues is the form of journey j, or of a new one.
export function journeyValues(j) {
  if (!j) {
    return { name: '', status: 'draft', entry: 'api', event: '', conditions: builderFilters(null, eventRules), topicId: '', segmentId: '',
      reentry: 'never', reentryHours: '24', exitEvents: '', goalId: '', exitOnGoal: false,
      steps: [stepValues({ id: 'step-1', type: 'send' })] };
  }
  const e = j.entry;
  return {
    name: j.name, status: j.status, entry: e.type, event: e.event || '', conditions: builderFilters(e.conditions, eventRules),
    topicId: e.topicId || '', segmentId: e.segmentId || '', reentry: j.reentry.mode, reentryHours: String(j.reentry.hours || 24),
    exitEvents: j.exitEvents.join('\n'), goalId: j.goal ? j.goal.goalId : '', exitOnGoal: !!(j.goal && j.goal.exitOnGoal),
    steps: j.steps.map(stepValues),
  };
}

// journeyBody is the form v as the body of POST or PUT /journeys.
export function journeyBody(v) {
  const entry = triggerBody(v.entry, v);
  const body = {
    name: v.name, status: v.status, entry,
    reentry: v.reentry === 'after' ? { mode: 'after', hours: Number(v.reentryHours) } : { mode: 'never' },
    exitEvents: v.exitEvents.split('\n').map((x) => x.trim()).filter(Boolean),
    steps: v.steps.map(stepBody),
  };
  body.goal = v.goalId ? { goalId: v.goalId, exitOnGoal: v.exitOnGoal } : null;
  return body;
}

// editable reports whether the builder shows journey j exactly, so that
// saving it changes only what the person changed.
export function editable(j) {
  const c = j.entry.conditions;
  return (!c || buildable(c, eventRules)) && j.exitEvents.every((e) => !/\n/.test(e)) &&
    j.steps.every((s) => (!s.filters || buildable(s.filters, audienceRules)) && canonical(stepBody(stepValues(s))) === canonical(s));
}

// formErrors are what the form refuses before asking the API.
function formErrors(v) {
  const errors = {};
  if (v.entry === 'event' && !v.conditions.rules.every(ruleBlank) && ruleError(v.conditions)) errors.conditions = ruleError(v.conditions);
  if (v.reentry === 'after' && !/^\d+$/.test(v.reentryHours.trim())) errors.reentryHours = 'A whole number of hours, 1 to 8,760.';
  v.steps.forEach((s, i) => {
    const pid = 'st' + i + '-';
    const bad = (d) => !Number.isFinite(durationSeconds(d)) || durationSeconds(d) < 1 || durationSeconds(d) > maxSeconds;
    if (s.type === 'wait' && bad(s.wait)) errors[pid + 'wait'] = 'A wait of 1 second to 365 days.';
    if (s.type === 'wait_until' && bad(s.timeout)) errors[pid + 'timeout'] = 'A timeout of 1 second to 365 days.';
    if (s.type === 'condition' && s.cond === 'filters' && ruleError(s.filters)) errors[pid + 'filters'] = ruleError(s.filters);
    s.branches.forEach((b, j) => {
      if (s.type === 'split' && !/^\d+$/.test(b.weight.trim())) errors[pid + 'b' + j + '-weight'] = 'A whole percent, 1 to 99.';
    });
  });
  return errors;
}

// journeyError maps a refusal to the field it concerns: one naming a
// step (400 invalid_graph, a step's content…) to that step.
export function journeyError(err, v) {
  if (!(err instanceof ApiError)) return errorsOf(err);
  const step = err.body.step;
  const i = step ? v.steps.findIndex((s) => s.id.trim() === step) : -1;
  if (i >= 0) {
    const pid = 'st' + i + '-';
    const s = v.steps[i];
    const field = { segment_not_found: 'segmentId', invalid_filters: 'filters' }[err.code] ||
      (s.type === 'send' ? contentField(err.code, err.message.replace(/^step "[^"]*": /, ''), s.c) : 'form');
    const at = field === 'form' ? 'id' : field;
    return { [pid + at]: err.message, form: 'Step ' + (i + 1) + ' (' + step + ') was refused: see it below.' };
  }
  const at = { name_required: 'name', invalid_name: 'name', invalid_status: 'status', unknown_topic: 'topicId', segment_not_found: 'segmentId',
    invalid_filters: 'conditions', invalid_entry: v.entry === 'event' ? 'event' : 'entry', invalid_reentry: 'reentryHours',
    invalid_exit_events: 'exitEvents', goal_not_found: 'goalId' };
  return at[err.code] ? { [at[err.code]]: err.message } : errorsOf(err);
}

// newStepId is an id no step of steps has.
const newStepId = (steps) => {
  let n = steps.length + 1;
  while (steps.some((s) => s.id.trim() === 'step-' + n)) n++;
  return 'step-' + n;
};

// JourneyPage is the builder of a new journey (id absent) or journey id's
// page: its form, its figures by step, and its version.
export function JourneyPage({ site, id }) {
  const canChange = site.role !== 'viewer';
  const f = useForm(journeyValues(null));
  const v = f.values;
  const saved = useLoad(() => (id ? call('GET', '/journeys/' + encodeURIComponent(id)) : Promise.resolve(null)), [id]);
  const choices = useLoad(() => Promise.all([call('GET', '/topics'), call('GET', '/segments'), call('GET', '/goals')]), [site.projectId]);
  const facets = useLoad(() => call('GET', '/audience/subscribers/facets'), [site.projectId]);
  const templateList = useLoad(() => call('GET', '/templates'), [site.projectId]);
  const templates = (templateList.data && templateList.data.templates) || [];
  const [topics, segments, goals] = choices.data ? [choices.data[0].topics, choices.data[1].segments, choices.data[2].goals] : [[], [], []];
  const labels = ((facets.data && facets.data.tags) || []).map((t) => t.key);
  const [state, setState] = useState(id ? 'loading' : 'ready'); // loading, ready, or why the form cannot show it
  const [baseline, setBaseline] = useState(() => canonical(journeyBody(journeyValues(null))));
  const [said, setSaid] = useState(''); // what the last save did
  const [newType, setNewType] = useState('wait');
  useEffect(() => {
    if (!saved.data) return;
    if (!editable(saved.data)) {
      setState('This journey holds conditions or push members the builder cannot show; change it through the API.');
      return;
    }
    const start = journeyValues(saved.data);
    f.setValues(start);
    setBaseline(canonical(journeyBody(start)));
    setState('ready');
  }, [saved.data]);
  const dirty = state === 'ready' && canChange && canonical(journeyBody(v)) !== baseline;
  const guard = useGuard(dirty, 'Leave this journey? Your unsaved changes will be discarded.');
  const setSteps = (steps) => f.set('steps')(steps);
  const save = f.submit(async () => {
    setSaid('');
    const bad = formErrors(v);
    if (Object.keys(bad).length) {
      f.setErrors(bad);
      return;
    }
    const body = journeyBody(v);
    if (!id) {
      const made = await call('POST', '/journeys', body);
      guard.forget();
      go('journeys/' + encodeURIComponent(made.id));
      return;
    }
    const before = saved.data.version;
    const answer = await call('PUT', '/journeys/' + encodeURIComponent(id), body);
    setBaseline(canonical(body));
    saved.set(answer);
    setSaid(answer.version > before ? 'Saved as version ' + answer.version + ': people already in the journey stay on version ' + before + '.'
      : 'Saved (version ' + answer.version + ').');
  }, (err) => journeyError(err, v));
  const remove = () => removeAndLeave(f, guard, 'Delete the journey “' + saved.data.name + '”? Its enrolments end and their pending steps will not run.',
    '/journeys/' + encodeURIComponent(id), 'journeys');
  const j = saved.data;
  const title = id ? (j ? 'Journey “' + j.name + '”' : 'Journey') : 'New journey';
  const version = j && html`<p class="version">Version ${j.version}, ${(statusNames[j.status] || j.status).toLowerCase()}.</p>`;
  // Steps of earlier versions that have figures, and are no step now.
  const earlier = j ? Object.keys(j.stats).filter((s) => !v.steps.some((x) => x.id.trim() === s) && !j.steps.some((x) => x.id === s)) : [];
  const figuresOf = (s) => (j && state === 'ready' && j.steps.some((x) => x.id === s.id.trim()) ? j.stats[s.id.trim()] || null : undefined);
  if (state !== 'ready' || !canChange) {
    return html`<section><h1>${title}</h1>${version}<${Alert} error=${saved.error} /><${FormError} errors=${f.errors} />
      ${state === 'loading' ? !saved.error && html`<p role="status">Loading…</p>` : state !== 'ready' && html`<p class="warning">${state}</p>`}
      ${j && html`<h2>Figures by step</h2><ol class="steps">${[...j.steps.map((s) => s.id), ...earlier].map((s) => html`<li class="step">
        <h3>${s}</h3><${Figures} id=${s} stats=${j.stats[s]} send=${true} /></li>`)}</ol>`}
      ${j && canChange && html`<div class="actions"><button type="button" class="secondary" onClick=${remove}>Delete journey</button></div>`}
    </section>`;
  }
  const select = selectField(f, !!choices.data);
  return html`<section class="journey">
    <h1>${title}</h1>${version}
    ${said && html`<p class="notice" role="status">${said}</p>`}
    <form onSubmit=${save} novalidate>
      <${FormError} errors=${f.errors} />
      <${Alert} error=${choices.error} what="The topics, segments and goals did not load" />
      <${Field} id="name" label="Journey name" value=${v.name} onInput=${f.set('name')} error=${f.errors.name} />
      ${select('status', 'Status', Object.entries(statusNames))}
      <p class="hint">Only an active journey enrols; pausing one holds everyone where they are.</p>
      <fieldset><legend>Entry</legend>
        ${select('entry', 'People enter when', entries)}
        ${v.entry === 'event' && html`<${Field} id="event" label="Event name" value=${v.event} onInput=${f.set('event')} error=${f.errors.event} />
          <${RuleBuilder} filters=${v.conditions} onChange=${f.set('conditions')} kind=${eventRules} name="entry condition"
            legend="Conditions on the event’s properties (optional)" error=${f.errors.conditions} />`}
        ${v.entry === 'topic_opt_in' && select('topicId', 'Topic', topics.map((t) => [t.id, t.name]), { empty: 'Choose a topic', none: 'No topics yet.' })}
        ${v.entry === 'segment_entered' && select('segmentId', 'Segment', segments.map((g) => [g.id, g.name]), { empty: 'Choose a segment', none: 'No segments yet.' })}
        ${select('reentry', 'Re-entry', [['never', 'Never: once per person'], ['after', 'Again, some hours after their last entry']])}
        ${v.reentry === 'after' && html`<${Field} id="reentryHours" label="Hours before re-entry" type="number" value=${v.reentryHours}
          onInput=${f.set('reentryHours')} error=${f.errors.reentryHours} hint="1 to 8,760, counted from their last entry." />`}
      </fieldset>
      <div class="field"><label for="exitEvents">Exit events</label>
        <textarea id="exitEvents" rows="2" value=${v.exitEvents} onInput=${(e) => f.set('exitEvents')(e.currentTarget.value)}
          aria-invalid=${f.errors.exitEvents ? 'true' : undefined} aria-describedby=${'exitEvents-hint' + (f.errors.exitEvents ? ' exitEvents-error' : '')}></textarea>
        <p class="hint" id="exitEvents-hint">Event names, one a line: when the person does one, their enrolment ends, even mid-wait.</p>
        ${f.errors.exitEvents && html`<p class="error" id="exitEvents-error">${f.errors.exitEvents}</p>`}</div>
      <fieldset><legend>Goal</legend>
        ${select('goalId', 'Goal', goals.map((g) => [g.id, g.name]), { empty: 'No goal', none: 'No goals yet: make one on the Goals page.' })}
        ${v.goalId && html`<label class="choice"><input type="checkbox" checked=${v.exitOnGoal} onChange=${(e) => f.set('exitOnGoal')(e.currentTarget.checked)} />
          Exit the journey when the person reaches the goal</label>`}
      </fieldset>
      <h2>Steps</h2>
      <p class="hint">People start at step 1 and go where each step says; a step with nowhere to go ends the journey.</p>
      <ol class="steps">${v.steps.map((s, i) => html`<${Step} key=${s.key} v=${s} n=${i + 1} steps=${v.steps} errors=${f.errors} labels=${labels}
        segments=${segments} templates=${templates} stats=${figuresOf(s)}
        change=${(patch) => setSteps(v.steps.map((x) => (x.key === s.key ? { ...x, ...patch } : x)))}
        move=${(by) => {
          const steps = [...v.steps];
          [steps[i], steps[i + by]] = [steps[i + by], steps[i]];
          setSteps(steps);
        }}
        remove=${() => setSteps(v.steps.filter((x) => x.key !== s.key))} />`)}</ol>
      <div class="row add-step">
        <div class="field"><label for="new-step-type">New step’s type</label>
          <select id="new-step-type" value=${newType} onChange=${(e) => setNewType(e.currentTarget.value)}>
            ${stepTypes.map(([o, l]) => html`<option value=${o}>${l}</option>`)}</select></div>
        <div class="field"><span aria-hidden="true"> </span><button type="button" class="secondary"
          onClick=${() => setSteps([...v.steps, stepValues({ id: newStepId(v.steps), type: newType })])}>Add step</button></div>
      </div>
      ${earlier.length > 0 && html`<h2>Steps of earlier versions</h2><ol class="steps">${earlier.map((s) => html`<li class="step">
        <h3>${s}</h3><${Figures} id=${s} stats=${j.stats[s]} send=${true} /></li>`)}</ol>`}
      <div class="actions"><button type="submit" disabled=${f.busy}>${id ? 'Save journey' : 'Create journey'}</button>
        <a class="button secondary" href="#/journeys">${id ? 'Back to journeys' : 'Cancel'}</a>
        ${id && html`<button type="button" class="secondary" onClick=${remove}>Delete journey</button>`}</div>
    </form>
  </section>`;
}
