// Audience: the list of people with every filter, bulk labels and
// deletion, import and export.
import { html, useState, useEffect } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { go, withQuery } from '../router.js';
import { errorsOf, Alert, Disclosure, FormError } from '../forms.js';
import { useLoad } from '../lists.js';
import { ruleBlank, ruleError, apiFilters, builderFilters, RuleBuilder } from '../rules.js';
import { numbers, formatTime } from '../format.js';
import { Import } from './import.js';

// listErrors puts a refused list next to the filter it concerns.
function listErrors(err) {
  const at = { invalid_range: 'joinedFrom', invalid_filters: 'rules' };
  return err instanceof ApiError && at[err.code] ? { [at[err.code]]: err.message } : errorsOf(err);
}

// The filters live in the page's address (#/people?country=FR&filters=…),
// so back and reload show the same list. Its query names are the list
// route's (spec 4.5), but for the label's value (tagValue) and the rules
// (filters, their JSON as the route takes it).
const dates = ['joinedFrom', 'joinedTo', 'seenFrom', 'seenTo'];
const blankFilters = { q: '', status: 'all', country: '', device: '', language: '', topic: '', tag: '', tagValue: '',
  joinedFrom: '', joinedTo: '', seenFrom: '', seenTo: '', rules: builderFilters(null) };

function filtersOf(query) {
  const p = new URLSearchParams(query);
  const f = { ...blankFilters };
  for (const k of Object.keys(blankFilters)) if (k !== 'rules' && p.get(k)) f[k] = p.get(k);
  try {
    f.rules = builderFilters(JSON.parse(p.get('filters') || 'null'));
  } catch (e) {
    // an address cut short: no rules
  }
  return f;
}

// labelsOf is a person's labels in words: plan=gold, vip.
const labelsOf = (p) => p.tags.map((t) => (t.value === null ? t.key : t.key + '=' + t.value)).join(', ');

// startedRules are the rules someone began to fill in.
const startedRules = (f) => ({ ...f.rules, rules: f.rules.rules.filter((r) => !ruleBlank(r)) });

function addressOf(f) {
  const p = new URLSearchParams();
  for (const k of Object.keys(blankFilters)) if (k !== 'rules' && f[k].trim() && f[k] !== blankFilters[k]) p.set(k, f[k].trim());
  if (!f.tag) p.delete('tagValue');
  const rules = startedRules(f);
  if (rules.rules.length) p.set('filters', JSON.stringify(apiFilters(rules)));
  return p.toString();
}

export function Audience({ site, query = '' }) {
  const canChange = site.role !== 'viewer';
  const applied = filtersOf(query);
  const [filters, setFilters] = useState(applied);
  useEffect(() => setFilters(filtersOf(query)), [query]); // back, forward, a link
  const [picked, setPicked] = useState([]);
  useEffect(() => setPicked([]), [query]);
  const [errors, setErrors] = useState({}); // of the filters or picks refused here
  const [label, setLabel] = useState({ key: '', value: '' });
  const [done, setDone] = useState('');
  const listQuery = (cursor) => {
    const p = new URLSearchParams({ count: '1' });
    if (applied.q.trim()) p.set('q', applied.q.trim());
    if (applied.status !== 'all') p.set('status', applied.status);
    if (applied.country) p.set('country', applied.country);
    if (applied.device) p.set('device', applied.device);
    if (applied.language) p.set('language', applied.language);
    if (applied.topic) p.set('topic', applied.topic);
    if (applied.tag) p.set('tag', applied.tag + (applied.tagValue ? ':' + applied.tagValue : ''));
    for (const k of dates) if (applied[k]) p.set(k, applied[k]);
    if (dates.some((k) => applied[k])) p.set('tz', site.timezone);
    const rules = apiFilters(startedRules(applied)); // checked on submit
    if (rules.rules.length) p.set('filters', JSON.stringify(rules));
    if (cursor) p.set('cursor', cursor);
    return p.toString();
  };
  const list = useLoad(() => call('GET', '/audience/subscribers?' + listQuery(null)), [site.projectId, query]);
  const more = () => list.more(() => call('GET', '/audience/subscribers?' + listQuery(list.data.nextCursor)),
    (old, a) => ({ items: old.items.concat(a.items), nextCursor: a.nextCursor, total: a.total }));
  const reload = () => {
    setPicked([]);
    list.reload();
  };
  const items = list.data ? list.data.items : [];
  const total = list.data ? list.data.total : null;
  const facetsLoad = useLoad(() => call('GET', '/audience/subscribers/facets'), [site.projectId]);
  const facets = facetsLoad.data;
  const set = (name) => (e) => setFilters({ ...filters, [name]: e.currentTarget.value });
  const pick = (id) => setPicked(picked.includes(id) ? picked.filter((x) => x !== id) : [...picked, id]);
  const bulk = async (path, body, what) => {
    setErrors({});
    try {
      await call('POST', path, { ids: picked, ...body });
      setDone(what);
      reload();
    } catch (err) {
      setErrors(errorsOf(err));
    }
  };
  const tag = (e) => {
    e.preventDefault();
    if (!label.key.trim()) {
      setErrors({ label: 'Give the label a name.' });
      return;
    }
    bulk('/audience/subscribers/bulk-tag', { set: { [label.key.trim()]: label.value } }, 'Labelled.');
  };
  const erase = () => {
    if (window.confirm('Delete ' + numbers.format(picked.length) + ' people and everything about them? This cannot be undone.')) {
      bulk('/audience/subscribers/bulk-delete', {}, 'Deleted.');
    }
  };
  const facetOptions = (name) => (facets && facets[name] ? facets[name] : []).map((x) => html`<option value=${x.value}>${x.value} (${numbers.format(x.count)})</option>`);
  const tagFacet = facets && (facets.tags || []).find((x) => x.key === filters.tag);
  // shown are the errors of the list's answer and of what was refused here.
  const shown = { ...(list.error ? listErrors(list.error) : {}), ...errors };
  const date = (id, text) => html`<div class="field"><label for=${'people-' + id}>${text}</label>
    <input id=${'people-' + id} type="date" value=${filters[id]} onInput=${set(id)} aria-invalid=${id === 'joinedFrom' && shown.joinedFrom ? 'true' : undefined}
      aria-describedby=${id === 'joinedFrom' && shown.joinedFrom ? 'people-joinedFrom-error' : undefined} />
    ${id === 'joinedFrom' && shown.joinedFrom && html`<p class="error" id="people-joinedFrom-error">${shown.joinedFrom}</p>`}</div>`;
  return html`<section>
    <h1>Audience</h1>
    <${Alert} error=${facetsLoad.error} what="The choices of the filters did not load" />
    <form class="filters" role="search" onSubmit=${(e) => {
      e.preventDefault();
      const started = startedRules(filters);
      const bad = started.rules.length > 0 && ruleError(started);
      setErrors(bad ? { rules: bad } : {});
      if (bad) return;
      const next = addressOf(filters);
      if (next === query) reload();
      else go(withQuery('people', next));
    }}>
      <div class="field"><label for="people-q">Search people</label>
        <input id="people-q" type="search" value=${filters.q} onInput=${set('q')} /></div>
      <div class="field"><label for="people-status">Status</label>
        <select id="people-status" value=${filters.status} onChange=${set('status')}>
          ${['all', 'subscribed', 'unsubscribed', 'no_device'].map((x) => html`<option value=${x}>${x.replace('_', ' ')}</option>`)}</select></div>
      <div class="field"><label for="people-country">Country</label>
        <select id="people-country" value=${filters.country} onChange=${set('country')}><option value="">Any</option>${facetOptions('countries')}</select></div>
      <div class="field"><label for="people-device">Device</label>
        <select id="people-device" value=${filters.device} onChange=${set('device')}><option value="">Any</option>${facetOptions('devices')}</select></div>
      <div class="field"><label for="people-language">Language</label>
        <select id="people-language" value=${filters.language} onChange=${set('language')}><option value="">Any</option>${facetOptions('languages')}</select></div>
      <div class="field"><label for="people-topic">Topic</label>
        <select id="people-topic" value=${filters.topic} onChange=${set('topic')}><option value="">Any</option>
          ${(facets ? facets.topics || [] : []).map((x) => html`<option value=${x.slug}>${x.name} (${numbers.format(x.count)})</option>`)}</select></div>
      <div class="field"><label for="people-tag">Label</label>
        <select id="people-tag" value=${filters.tag} onChange=${(e) => setFilters({ ...filters, tag: e.currentTarget.value, tagValue: '' })}><option value="">Any</option>
          ${(facets ? facets.tags || [] : []).map((x) => html`<option value=${x.key}>${x.key} (${numbers.format(x.count)})</option>`)}</select></div>
      ${filters.tag && html`<div class="field"><label for="people-tag-value">Label value</label>
        <select id="people-tag-value" value=${filters.tagValue} onChange=${set('tagValue')}><option value="">Any value</option>
          ${(tagFacet ? tagFacet.values : []).map((x) => html`<option value=${x}>${x}</option>`)}</select></div>`}
      <${Disclosure} label="More filters" className="wide" open=${dates.some((k) => applied[k]) || startedRules(applied).rules.length > 0}>
        <div class="row">${date('joinedFrom', 'Joined from')}${date('joinedTo', 'Joined to')}${date('seenFrom', 'Last seen from')}${date('seenTo', 'Last seen to')}</div>
        <${RuleBuilder} filters=${filters.rules} onChange=${(rules) => setFilters({ ...filters, rules })} name="people" legend="People matching rules"
          error=${shown.rules} />
      <//>
      <div class="actions"><button type="submit">Filter</button>
        <a class="button secondary" href=${'/api/v1/subscribers/export?projectId=' + encodeURIComponent(site.projectId)} download>Export CSV</a></div>
    </form>
    ${canChange && html`<${Import} onDone=${reload} />`}
    <${FormError} errors=${shown} />
    ${done && html`<p role="status">${done}</p>`}
    ${total !== null && total !== undefined && html`<p>${numbers.format(total)} ${total === 1 ? 'person' : 'people'}</p>`}
    ${items.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">People</caption>
      <thead><tr>${canChange && html`<th scope="col"><span class="visually-hidden">Pick</span></th>`}<th scope="col">Person</th><th scope="col">Status</th>
        <th scope="col">Country</th><th scope="col">Devices</th><th scope="col">Labels</th><th scope="col">Last seen</th></tr></thead>
      <tbody>${items.map((p) => html`<tr>
        ${canChange && html`<td><input type="checkbox" aria-label=${'Pick ' + (p.externalId || p.id)} checked=${picked.includes(p.id)} onChange=${() => pick(p.id)} /></td>`}
        <td><a class="cut" href=${'#/people/' + encodeURIComponent(p.id)} title=${p.externalId || p.id}>${p.externalId || p.id}</a></td><td>${p.status.replace('_', ' ')}</td>
        <td>${p.country}</td><td>${p.devices.join(', ')}</td>
        <td><span class="cut" title=${labelsOf(p)}>${labelsOf(p)}</span></td>
        <td>${formatTime(p.lastSeenAt, site.timezone)}</td></tr>`)}</tbody></table></div>`}
    ${!list.loading && items.length === 0 && !shown.form && (query ? html`<p class="empty">Nobody matches these filters. Change them, or <a href="#/people">list everyone</a>.</p>`
      : html`<p class="empty">Nobody has subscribed yet. Put the snippet on your website (<a href="#/install">Install</a>) and people who allow notifications appear here${canChange ? ', or import your users from a CSV file above' : ''}.</p>`)}
    ${list.loading && html`<p role="status">Loading…</p>`}
    ${list.data && list.data.nextCursor && !list.loading && html`<button type="button" onClick=${more}>Load more</button>`}
    ${canChange && picked.length > 0 && html`<form class="bulk" onSubmit=${tag}>
      <h2>${numbers.format(picked.length)} picked</h2>
      <div class="row">
        <div class="field"><label for="label-key">Label</label><input id="label-key" value=${label.key}
          aria-invalid=${shown.label ? 'true' : undefined} onInput=${(e) => setLabel({ ...label, key: e.currentTarget.value })} />
          ${shown.label && html`<p class="error">${shown.label}</p>`}</div>
        <div class="field"><label for="label-value">Value</label><input id="label-value" value=${label.value}
          onInput=${(e) => setLabel({ ...label, value: e.currentTarget.value })} /></div>
      </div>
      <div class="actions"><button type="submit">Add label</button>
        <button type="button" class="secondary" onClick=${() => (label.key.trim() ? bulk('/audience/subscribers/bulk-tag', { remove: [label.key.trim()] }, 'Label removed.')
          : setErrors({ label: 'Name the label to remove.' }))}>Remove label</button>
        <button type="button" class="secondary" onClick=${erase}>Delete picked</button></div>
    </form>`}
  </section>`;
}
