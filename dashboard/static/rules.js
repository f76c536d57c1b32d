// Rules: the Filters value of segments, sends and the audience list
// (spec 2.5), and the builder that edits it with a live count; the same
// builder edits an automation's conditions on its event's properties.
import { html } from './vendor/preact-htm.module.js';
import { call } from './api.js';
import { Alert } from './forms.js';
import { useLoad, pause } from './lists.js';
import { numbers } from './format.js';

const ruleFields = [['country', 'Country'], ['language', 'Language'], ['url', 'Last page'], ['external_id', 'External id'], ['tag', 'Label']];
const ruleOps = [['eq', 'is'], ['neq', 'is not'], ['in', 'is one of'], ['contains', 'contains'], ['exists', 'exists'], ['not_exists', 'does not exist']];
const numberOps = [['gt', 'is over'], ['gte', 'is at least'], ['lt', 'is under'], ['lte', 'is at most']];
const valueless = (op) => op === 'exists' || op === 'not_exists';
const numeric = (op) => numberOps.some(([v]) => v === op);

// A kind of rules: the fields and conditions the builder offers. A keyed
// field takes a name (a label's, a property's) after its API prefix.
// audienceRules are rules on subscribers (spec 2.5), counted as they are
// made; eventRules an automation's conditions on its event's properties,
// which compare numbers too (issue 32).
export const audienceRules = { fields: ruleFields, ops: ruleOps, keyed: { tag: ['tag:', 'Label name'] }, count: true, match: 'People must match' };
export const eventRules = { fields: [['property', 'Property']], ops: [...ruleOps, ...numberOps], keyed: { property: ['properties.', 'Property'] },
  count: false, match: 'Events must match' };
const blankRule = (kind = audienceRules) => ({ field: kind.fields[0][0], op: 'eq', value: '', key: '' });

// ruleComplete: a field (with its name for a label) and a value unless
// the condition needs none (spec 2.5). An incomplete rule is never dropped
// from a send or a segment (that would widen it): the form refuses it.
const listOf = (v) => v.split(',').map((x) => x.trim()).filter(Boolean);
const ruleComplete = (r) => !!r.field && (!['tag', 'property'].includes(r.field) || !!r.key.trim()) &&
  (valueless(r.op) || (r.op === 'in' ? listOf(r.value).length > 0 : r.value.trim() !== ''));
// ruleBlank: a rule nobody started to fill in.
export const ruleBlank = (r) => !r.value.trim() && !r.key.trim() && !valueless(r.op);

// ruleError is what keeps the builder's f from being sent or saved, ''
// when nothing: no rule, an incomplete rule, or several values for "is" or
// "is not" (the API reads them as one text, which "is not" never equals:
// everyone), or a comparison of numbers with something else.
export function ruleError(f) {
  if (f.rules.length === 0) return 'Add a rule.';
  const i = f.rules.findIndex((r) => !ruleComplete(r));
  if (i >= 0) return 'Complete rule ' + (i + 1) + ' or remove it.';
  const j = f.rules.findIndex((r) => (r.op === 'eq' || r.op === 'neq') && r.value.includes(','));
  if (j >= 0) return 'Rule ' + (j + 1) + ' has several values: use “is one of”, or one value.';
  const k = f.rules.findIndex((r) => numeric(r.op) && !Number.isFinite(Number(r.value.trim())));
  return k >= 0 ? 'Rule ' + (k + 1) + ' compares numbers: give it a number.' : '';
}

// buildable reports whether the builder shows the API Filters f exactly:
// what it would send back is f. A value list with another op than "in",
// an op or field it does not offer, a label name with spaces around it
// would all change meaning on the way through (and could widen a send).
export function buildable(f, kind = audienceRules) {
  if (!f || !Array.isArray(f.rules) || f.rules.length === 0 || !['all', 'any', undefined].includes(f.match)) return false;
  const fields = kind.fields.map(([v]) => v).filter((v) => !kind.keyed[v]);
  const prefixes = Object.values(kind.keyed).map(([p]) => p);
  const ops = kind.ops.map(([v]) => v);
  const same = {
    match: f.match || 'all',
    rules: f.rules.map((r) => {
      const o = { field: r.field === 'externalId' ? 'external_id' : r.field, op: r.op || 'eq' };
      if (!valueless(o.op) && r.value !== undefined) o.value = r.value;
      return o;
    }),
  };
  return same.rules.every((r) => typeof r.field === 'string' && (fields.includes(r.field) || prefixes.some((p) => r.field.startsWith(p))) && ops.includes(r.op)) &&
    JSON.stringify(apiFilters(builderFilters(f))) === JSON.stringify(same);
}

// apiFilters is a builder's value as the API takes it: every rule.
export function apiFilters(f) {
  return {
    match: f.match,
    rules: f.rules.map((r) => {
      const out = { field: r.field === 'tag' ? 'tag:' + r.key.trim() : r.field === 'property' ? 'properties.' + r.key.trim() : r.field, op: r.op };
      if (r.op === 'in') out.value = listOf(r.value);
      else if (numeric(r.op)) out.value = r.value.trim();
      else if (!valueless(r.op)) out.value = r.value;
      return out;
    }),
  };
}

// builderFilters is an API Filters value as the builder of kind edits it.
export function builderFilters(f, kind = audienceRules) {
  const rules = ((f && f.rules) || []).map((r) => {
    const field = r.field || '';
    const keyed = Object.entries(kind.keyed).find(([, [p]]) => field.startsWith(p));
    return {
      field: keyed ? keyed[0] : field === 'externalId' ? 'external_id' : field, key: keyed ? field.slice(keyed[1][0].length) : '',
      op: r.op || 'eq', value: Array.isArray(r.value) ? r.value.join(', ') : (r.value || ''),
    };
  });
  return { match: (f && f.match) || 'all', rules: rules.length ? rules : [blankRule(kind)] };
}

// describeFilters is a Filters value in words.
export function describeFilters(f) {
  const op = Object.fromEntries([...ruleOps, ...numberOps]);
  return ((f && f.rules) || []).map((r) => {
    const field = r.field.startsWith('tag:') ? 'label ' + r.field.slice(4) : r.field.startsWith('properties.') ? r.field.slice(11)
      : (Object.fromEntries(ruleFields)[r.field] || r.field).toLowerCase();
    const value = r.value === undefined ? '' : ' ' + (Array.isArray(r.value) ? r.value.join(', ') : r.value);
    return field + ' ' + (op[r.op || 'eq'] || r.op) + value;
  }).join(f.match === 'any' ? ' or ' : ' and ');
}

// RuleBuilder edits a Filters value of kind, with a live count of whom
// it reaches when the kind counts. name tells two builders on a page apart.
export function RuleBuilder({ filters, onChange, name = '', legend = 'Rules', error, kind = audienceRules }) {
  const rules = filters.rules;
  const of = (what, i) => what + ' of ' + (name ? name + ' ' : '') + 'rule ' + (i + 1);
  const body = apiFilters(filters);
  const complete = ruleError(filters) === '';
  // The count waits for typing to settle, and is asked only of complete rules.
  const counted = useLoad((stale) => (kind.count && complete ? pause(300).then(() => (stale() ? null : call('POST', '/segments/preview', { filters: body })))
    : Promise.resolve(null)), [JSON.stringify(body), complete]);
  const count = counted.data ? counted.data.count : null;
  const edit = (i, change) => onChange({ ...filters, rules: rules.map((r, j) => (j === i ? { ...r, ...change } : r)) });
  const matchId = (name ? name.replace(/\W+/g, '-') + '-' : '') + 'match';
  return html`<fieldset><legend>${legend}</legend>
    <div class="field"><label for=${matchId}>${kind.match}</label>
      <select id=${matchId} value=${filters.match} onChange=${(e) => onChange({ ...filters, match: e.currentTarget.value })}>
        <option value="all">every rule</option><option value="any">any rule</option></select></div>
    ${rules.map((r, i) => html`<div class="rule" role="group" aria-label=${(name ? name[0].toUpperCase() + name.slice(1) + ' rule ' : 'Rule ') + (i + 1)}>
      ${kind.fields.length > 1 && html`<select aria-label=${of('Field', i)} value=${r.field} onChange=${(e) => edit(i, { field: e.currentTarget.value })}>
        ${kind.fields.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select>`}
      ${kind.keyed[r.field] && html`<input aria-label=${of(kind.keyed[r.field][1], i)} value=${r.key} onInput=${(e) => edit(i, { key: e.currentTarget.value })} />`}
      <select aria-label=${of('Condition', i)} value=${r.op} onChange=${(e) => edit(i, { op: e.currentTarget.value })}>
        ${kind.ops.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select>
      ${!valueless(r.op) && html`<input aria-label=${of('Value', i)} value=${r.value} placeholder=${r.op === 'in' ? 'a, b, c' : undefined}
        inputmode=${numeric(r.op) ? 'decimal' : undefined} onInput=${(e) => edit(i, { value: e.currentTarget.value })} />`}
      <button type="button" class="secondary" aria-label=${'Remove ' + (name ? name + ' ' : '') + 'rule ' + (i + 1)}
        onClick=${() => onChange({ ...filters, rules: rules.filter((_, j) => j !== i) })}>Remove</button>
    </div>`)}
    <button type="button" class="secondary" aria-label=${'Add ' + (name ? name + ' ' : '') + 'rule'}
      onClick=${() => onChange({ ...filters, rules: [...rules, blankRule(kind)] })}>Add rule</button>
    ${kind.count && html`<p role="status" class="hint">${count === null ? 'Complete every rule to count whom it reaches.' : 'Reaches ' + numbers.format(count) + (count === 1 ? ' browser' : ' browsers') + ' now.'}</p>
    <${Alert} error=${counted.error} what="The count did not load" />`}
    <${Alert} error=${error} />
  </fieldset>`;
}
