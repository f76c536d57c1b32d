// Journey steps (issue 32): one step of the journey builder (journey.js)
// as a form and back, and its editor. Every control's accessible name ends
// in "(step N)", N its place in the list, so that several stay apart.
import { html } from '../vendor/preact-htm.module.js';
import { Field } from '../forms.js';
import { RuleBuilder, audienceRules, apiFilters, builderFilters } from '../rules.js';
import { contentValues, contentRequest } from '../sends.js';
import { numbers } from '../format.js';
import { Content } from './content.js';

// stepTypes are the step types in words.
export const stepTypes = [['send', 'Send a push'], ['wait', 'Wait'], ['wait_until', 'Wait until'], ['window', 'Wait for a time window'],
  ['split', 'Split'], ['condition', 'Condition'], ['set_tags', 'Set labels'], ['exit', 'Exit']];

const units = [['seconds', 1], ['minutes', 60], ['hours', 3600], ['days', 86400]];
const unitSeconds = Object.fromEntries(units);
export const dayNames = [['mon', 'Mon'], ['tue', 'Tue'], ['wed', 'Wed'], ['thu', 'Thu'], ['fri', 'Fri'], ['sat', 'Sat'], ['sun', 'Sun']];

// duration is seconds as a number in the largest unit that holds it whole.
const duration = (seconds) => {
  const s = seconds || 0;
  const [unit, n] = [...units].reverse().find(([, u]) => s % u === 0 && (s > 0 || u === 3600));
  return { n: String(s / n), unit };
};
// durationSeconds is a duration's form in seconds (NaN when no number).
export const durationSeconds = (d) => (d.n.trim() ? Math.round(Number(d.n) * unitSeconds[d.unit]) : NaN);

let keys = 0;

// stepValues is the form of step s (its API form), or of a new step of
// type with id.
export function stepValues(s) {
  return {
    key: ++keys, id: s.id, type: s.type, next: s.next || '',
    c: contentValues(s.content), transactional: !!s.transactional,
    wait: duration(s.seconds || 86400),
    until: s.delivered ? 'delivered' : s.clicked ? 'clicked' : 'event', event: s.event || '', send: s.delivered || s.clicked || '',
    timeout: duration(s.timeoutSeconds || 86400), timeoutNext: s.timeoutNext || '',
    from: s.from || '09:00', to: s.to || '18:00', everyDay: !s.days, days: s.days || [],
    branches: s.branches ? s.branches.map((b) => ({ weight: String(b.weight), next: b.next || '' }))
      : [{ weight: '50', next: '' }, { weight: '50', next: '' }],
    cond: s.segmentId ? 'segment' : 'filters', filters: builderFilters(s.filters || null, audienceRules), segmentId: s.segmentId || '',
    yes: s.yes || '', no: s.no || '',
    tags: Object.entries(s.tags || { '': '' }).map(([name, value]) => ({ name, value })),
  };
}

// stepBody is the form v of a step as the API takes it: the members of its
// type alone, and no empty way out.
export function stepBody(v) {
  const s = { id: v.id.trim(), type: v.type };
  const to = (name, id) => {
    if (id) s[name] = id;
  };
  switch (v.type) {
    case 'send':
      s.content = contentRequest(v.c);
      if (v.transactional) s.transactional = true;
      to('next', v.next);
      break;
    case 'wait':
      s.seconds = durationSeconds(v.wait);
      to('next', v.next);
      break;
    case 'wait_until':
      if (v.until === 'event') s.event = v.event.trim();
      else s[v.until] = v.send;
      s.timeoutSeconds = durationSeconds(v.timeout);
      to('next', v.next);
      to('timeoutNext', v.timeoutNext);
      break;
    case 'window':
      s.from = v.from;
      s.to = v.to;
      if (!v.everyDay) s.days = dayNames.map(([d]) => d).filter((d) => v.days.includes(d));
      to('next', v.next);
      break;
    case 'split':
      s.branches = v.branches.map((b) => (b.next ? { weight: Number(b.weight), next: b.next } : { weight: Number(b.weight) }));
      break;
    case 'condition':
      if (v.cond === 'segment') s.segmentId = v.segmentId;
      else s.filters = apiFilters(v.filters);
      to('yes', v.yes);
      to('no', v.no);
      break;
    case 'set_tags':
      s.tags = Object.fromEntries(v.tags.filter((t) => t.name.trim()).map((t) => [t.name.trim(), t.value]));
      to('next', v.next);
      break;
  }
  return s;
}

// figures are a step's figures (GET /journeys/{id} stats), in order.
export const stepFigures = [['entered', 'Entered'], ['waiting', 'Waiting'], ['completed', 'Completed'], ['exitedEarly', 'Exited early'],
  ['sent', 'Sent'], ['delivered', 'Delivered'], ['clicked', 'Clicked'], ['converted', 'Converted'], ['revenue', 'Revenue']];

// Figures shows one step's figures, a send's counters only for a send.
export function Figures({ id, stats, send }) {
  const shown = stepFigures.filter(([k]) => send || ['entered', 'waiting', 'completed', 'exitedEarly'].includes(k));
  return html`<dl class="step-figures" aria-label=${'Figures of step ' + id}>${shown.map(([k, label]) => html`<div><dt>${label}</dt>
    <dd>${numbers.format((stats && stats[k]) || 0)}</dd></div>`)}</dl>`;
}

// Step edits step v, number n (from 1) of steps (every step's form):
// change(patch) changes it; move(by) and remove() reorder and drop it.
// errors are the form's, keyed by field id; stats its figures, if any.
export function Step({ v, n, steps, change, move, remove, errors, labels, segments, templates, stats }) {
  const of = ' (step ' + n + ')';
  const pid = 'st' + (n - 1) + '-';
  const others = steps.filter((s) => s.key !== v.key && s.id.trim()).map((s) => s.id.trim());
  const sends = steps.filter((s) => s.key !== v.key && s.type === 'send' && s.id.trim()).map((s) => s.id.trim());
  const set = (name) => (x) => change({ [name]: x });
  const err = (name) => errors[pid + name];
  // choose is a select of label over options ([value, text]).
  const choose = (name, label, options, value = v[name], onChange = set(name)) => html`<div class="field">
    <label for=${pid + name}>${label + of}</label>
    <select id=${pid + name} value=${value} onChange=${(e) => onChange(e.currentTarget.value)}
      aria-invalid=${err(name) ? 'true' : undefined} aria-describedby=${err(name) ? pid + name + '-error' : undefined}>
      ${options.map(([o, l]) => html`<option value=${o}>${l}</option>`)}</select>
    ${err(name) && html`<p class="error" id=${pid + name + '-error'}>${err(name)}</p>`}</div>`;
  // way is a select of the step a way out goes to, or none (the end).
  const way = (name, label, value = v[name], onChange = set(name)) => choose(name, label,
    [['', 'End of the journey'], ...others.map((o) => [o, o]), ...(value && !others.includes(value) ? [[value, value + ' (no such step)']] : [])],
    value, onChange);
  const dur = (name, label, hint) => html`<div class="row">
    <${Field} id=${pid + name} label=${label + of} type="number" value=${v[name].n} onInput=${(x) => change({ [name]: { ...v[name], n: x } })}
      error=${err(name)} hint=${hint} />
    ${choose(name + 'Unit', label + ' unit', units.filter(([u]) => u !== 'seconds' || v[name].unit === 'seconds').map(([u]) => [u, u]),
      v[name].unit, (x) => change({ [name]: { ...v[name], unit: x } }))}</div>`;
  const setBranch = (i, k) => (x) => change({ branches: v.branches.map((b, j) => (j === i ? { ...b, [k]: x } : b)) });
  const setTag = (i, k) => (x) => change({ tags: v.tags.map((t, j) => (j === i ? { ...t, [k]: x } : t)) });
  return html`<li class="step" aria-labelledby=${pid + 'legend'}>
    <fieldset><legend id=${pid + 'legend'}>${'Step ' + n + (v.id.trim() ? ': ' + v.id.trim() : '')}</legend>
      ${errors[pid + 'step'] && html`<p class="error" role="alert">${errors[pid + 'step']}</p>`}
      ${stats !== undefined && html`<${Figures} id=${v.id} stats=${stats} send=${v.type === 'send'} />`}
      <div class="row">
        <${Field} id=${pid + 'id'} label=${'Step id' + of} value=${v.id} onInput=${set('id')} error=${err('id')} />
        ${choose('type', 'Step type', stepTypes)}
      </div>
      ${v.type === 'send' && html`<${Content} v=${v.c} set=${(name) => (x) => change({ c: { ...v.c, [name]: x } })} errors=${errors} labels=${labels}
          prefix=${pid} of=${of} templates=${templates} />
        <label class="choice"><input type="checkbox" checked=${v.transactional} onChange=${(e) => set('transactional')(e.currentTarget.checked)} />
          ${'Transactional (goes out in quiet hours, skips the frequency cap)' + of}</label>`}
      ${v.type === 'wait' && dur('wait', 'Wait')}
      ${v.type === 'wait_until' && html`
        ${choose('until', 'Wait for', [['event', 'An event'], ['delivered', 'A push delivered'], ['clicked', 'A push clicked']])}
        ${v.until === 'event' ? html`<${Field} id=${pid + 'event'} label=${'Event name' + of} value=${v.event} onInput=${set('event')} error=${err('event')} />`
          : choose('send', 'Push of step', [['', 'Choose a send step'], ...sends.map((s) => [s, s])])}
        ${dur('timeout', 'Timeout', 'How long to wait before the timeout way.')}
        ${way('timeoutNext', 'On timeout, go to')}`}
      ${v.type === 'window' && html`<div class="row">
          <${Field} id=${pid + 'from'} label=${'From' + of} type="time" value=${v.from} onInput=${set('from')} error=${err('from')}
            hint="In the person’s time zone." />
          <${Field} id=${pid + 'to'} label=${'To' + of} type="time" value=${v.to} onInput=${set('to')} error=${err('to')} /></div>
        <label class="choice"><input type="checkbox" checked=${v.everyDay} onChange=${(e) => set('everyDay')(e.currentTarget.checked)} /> ${'Every day' + of}</label>
        ${!v.everyDay && html`<fieldset><legend>${'Days' + of}</legend><div class="days">${dayNames.map(([d, l]) => html`<label class="choice">
          <input type="checkbox" checked=${v.days.includes(d)} onChange=${(e) => set('days')(e.currentTarget.checked ? [...v.days, d] : v.days.filter((x) => x !== d))} />
          ${l + of}</label>`)}</div></fieldset>`}`}
      ${v.type === 'split' && html`<fieldset><legend>${'Branches' + of}</legend>
        ${v.branches.map((b, i) => html`<div class="row branch">
          <${Field} id=${pid + 'b' + i + '-weight'} label=${'Weight of branch ' + (i + 1) + of} type="number" value=${b.weight}
            onInput=${setBranch(i, 'weight')} hint="Percent; the weights sum to 100." />
          ${way('b' + i + '-next', 'Branch ' + (i + 1) + ' goes to', b.next, setBranch(i, 'next'))}
          ${v.branches.length > 2 && html`<button type="button" class="secondary" onClick=${() => change({ branches: v.branches.filter((_, j) => j !== i) })}>
            ${'Remove branch ' + (i + 1) + of}</button>`}</div>`)}
        ${v.branches.length < 5 && html`<button type="button" class="secondary"
          onClick=${() => change({ branches: [...v.branches, { weight: '', next: '' }] })}>${'Add branch' + of}</button>`}</fieldset>`}
      ${v.type === 'condition' && html`
        ${choose('cond', 'Condition on', [['filters', 'Rules on the person'], ['segment', 'A segment']])}
        ${v.cond === 'segment' ? choose('segmentId', 'Segment', [['', 'Choose a segment'], ...segments.map((g) => [g.id, g.name])])
          : html`<${RuleBuilder} filters=${v.filters} onChange=${set('filters')} name=${'step ' + n} legend=${'People who match' + of} error=${err('filters')} />`}
        <div class="row">${way('yes', 'If yes, go to')}${way('no', 'If no, go to')}</div>`}
      ${v.type === 'set_tags' && html`<fieldset><legend>${'Labels' + of}</legend>
        ${v.tags.map((t, i) => html`<div class="row">
          <${Field} id=${pid + 't' + i + '-name'} label=${'Label ' + (i + 1) + ' name' + of} value=${t.name} onInput=${setTag(i, 'name')} required=${false} />
          <${Field} id=${pid + 't' + i + '-value'} label=${'Label ' + (i + 1) + ' value' + of} value=${t.value} onInput=${setTag(i, 'value')} required=${false} /></div>`)}
        <button type="button" class="secondary" onClick=${() => change({ tags: [...v.tags, { name: '', value: '' }] })}>${'Add label' + of}</button>
        ${err('tags') && html`<p class="error">${err('tags')}</p>`}</fieldset>`}
      ${!['split', 'condition', 'exit'].includes(v.type) && way('next', v.type === 'wait_until' ? 'When it comes, go to' : 'Then go to')}
      <div class="actions">
        ${n > 1 && html`<button type="button" class="secondary" onClick=${() => move(-1)}>${'Move step ' + n + ' up'}</button>`}
        ${n < steps.length && html`<button type="button" class="secondary" onClick=${() => move(1)}>${'Move step ' + n + ' down'}</button>`}
        ${steps.length > 1 && html`<button type="button" class="secondary" onClick=${remove}>${'Remove step ' + n}</button>`}
      </div>
    </fieldset>
  </li>`;
}
