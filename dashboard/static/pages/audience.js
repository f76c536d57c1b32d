// Audience: the list of people with every filter, bulk labels and
// deletion, import and export.
import { html, useState, useEffect } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { errorsOf, Disclosure, FormError } from '../forms.js';
import { ruleBlank, ruleError, apiFilters, builderFilters, RuleBuilder } from '../rules.js';
import { numbers, formatTime } from '../format.js';
import { Import } from './import.js';

export function Audience({ site }) {
  const canChange = site.role !== 'viewer';
  const blank = { q: '', status: 'all', country: '', device: '', language: '', topic: '', tag: '', tagValue: '',
    joinedFrom: '', joinedTo: '', seenFrom: '', seenTo: '', rules: builderFilters(null) };
  const [filters, setFilters] = useState(blank);
  const [applied, setApplied] = useState(blank);
  const [facets, setFacets] = useState(null);
  const [list, setList] = useState({ items: [], next: null, total: null, loading: true });
  const [picked, setPicked] = useState([]);
  const [errors, setErrors] = useState({});
  const [label, setLabel] = useState({ key: '', value: '' });
  const [done, setDone] = useState('');
  const query = (cursor) => {
    const p = new URLSearchParams({ count: '1' });
    if (applied.q.trim()) p.set('q', applied.q.trim());
    if (applied.status !== 'all') p.set('status', applied.status);
    if (applied.country) p.set('country', applied.country);
    if (applied.device) p.set('device', applied.device);
    if (applied.language) p.set('language', applied.language);
    if (applied.topic) p.set('topic', applied.topic);
    if (applied.tag) p.set('tag', applied.tag + (applied.tagValue ? ':' + applied.tagValue : ''));
    for (const k of ['joinedFrom', 'joinedTo', 'seenFrom', 'seenTo']) if (applied[k]) p.set(k, applied[k]);
    if (['joinedFrom', 'joinedTo', 'seenFrom', 'seenTo'].some((k) => applied[k])) p.set('tz', site.timezone);
    const rules = apiFilters({ ...applied.rules, rules: applied.rules.rules.filter((r) => !ruleBlank(r)) }); // checked on submit
    if (rules.rules.length) p.set('filters', JSON.stringify(rules));
    if (cursor) p.set('cursor', cursor);
    return p.toString();
  };
  const load = async (cursor) => {
    setList((old) => ({ ...old, loading: true }));
    try {
      const a = await call('GET', '/audience/subscribers?' + query(cursor));
      setList((old) => ({ items: cursor ? old.items.concat(a.items) : a.items, next: a.nextCursor, total: a.total, loading: false }));
      if (!cursor) setPicked([]);
    } catch (err) {
      const at = { invalid_range: 'joinedFrom', invalid_filters: 'rules' };
      setErrors(err instanceof ApiError && at[err.code] ? { [at[err.code]]: err.message } : errorsOf(err));
      setList({ items: [], next: null, total: null, loading: false });
    }
  };
  useEffect(() => { setErrors({}); load(null); }, [site.projectId, applied]);
  useEffect(() => { call('GET', '/audience/subscribers/facets').then(setFacets, () => {}); }, [site.projectId]);
  const set = (name) => (e) => setFilters({ ...filters, [name]: e.currentTarget.value });
  const pick = (id) => setPicked(picked.includes(id) ? picked.filter((x) => x !== id) : [...picked, id]);
  const bulk = async (path, body, what) => {
    setErrors({});
    try {
      await call('POST', path, { ids: picked, ...body });
      setDone(what);
      load(null);
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
  const date = (id, text) => html`<div class="field"><label for=${'people-' + id}>${text}</label>
    <input id=${'people-' + id} type="date" value=${filters[id]} onInput=${set(id)} aria-invalid=${id === 'joinedFrom' && errors.joinedFrom ? 'true' : undefined}
      aria-describedby=${id === 'joinedFrom' && errors.joinedFrom ? 'people-joinedFrom-error' : undefined} />
    ${id === 'joinedFrom' && errors.joinedFrom && html`<p class="error" id="people-joinedFrom-error">${errors.joinedFrom}</p>`}</div>`;
  return html`<section>
    <h1>Audience</h1>
    <form class="filters" role="search" onSubmit=${(e) => {
      e.preventDefault();
      const started = { ...filters.rules, rules: filters.rules.rules.filter((r) => !ruleBlank(r)) };
      const bad = started.rules.length > 0 && ruleError(started);
      if (bad) setErrors({ rules: bad });
      else setApplied(filters);
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
      <${Disclosure} label="More filters" className="wide">
        <div class="row">${date('joinedFrom', 'Joined from')}${date('joinedTo', 'Joined to')}${date('seenFrom', 'Last seen from')}${date('seenTo', 'Last seen to')}</div>
        <${RuleBuilder} filters=${filters.rules} onChange=${(rules) => setFilters({ ...filters, rules })} name="people" legend="People matching rules"
          error=${errors.rules} />
      <//>
      <div class="actions"><button type="submit">Filter</button>
        <a class="button secondary" href=${'/api/v1/subscribers/export?projectId=' + encodeURIComponent(site.projectId)} download>Export CSV</a></div>
    </form>
    ${canChange && html`<${Import} onDone=${() => load(null)} />`}
    <${FormError} errors=${errors} />
    ${done && html`<p role="status">${done}</p>`}
    ${list.total !== null && list.total !== undefined && html`<p>${numbers.format(list.total)} ${list.total === 1 ? 'person' : 'people'}</p>`}
    ${list.items.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">People</caption>
      <thead><tr>${canChange && html`<th scope="col"><span class="visually-hidden">Pick</span></th>`}<th scope="col">Person</th><th scope="col">Status</th>
        <th scope="col">Country</th><th scope="col">Devices</th><th scope="col">Labels</th><th scope="col">Last seen</th></tr></thead>
      <tbody>${list.items.map((p) => html`<tr>
        ${canChange && html`<td><input type="checkbox" aria-label=${'Pick ' + (p.externalId || p.id)} checked=${picked.includes(p.id)} onChange=${() => pick(p.id)} /></td>`}
        <td><a href=${'#/people/' + encodeURIComponent(p.id)}>${p.externalId || p.id}</a></td><td>${p.status.replace('_', ' ')}</td>
        <td>${p.country}</td><td>${p.devices.join(', ')}</td>
        <td>${p.tags.map((t) => (t.value === null ? t.key : t.key + '=' + t.value)).join(', ')}</td>
        <td>${formatTime(p.lastSeenAt, site.timezone)}</td></tr>`)}</tbody></table></div>`}
    ${!list.loading && list.items.length === 0 && !errors.form && html`<p>Nobody matches.</p>`}
    ${list.loading && html`<p role="status">Loading…</p>`}
    ${list.next && !list.loading && html`<button type="button" onClick=${() => load(list.next)}>Load more</button>`}
    ${canChange && picked.length > 0 && html`<form class="bulk" onSubmit=${tag}>
      <h2>${numbers.format(picked.length)} picked</h2>
      <div class="row">
        <div class="field"><label for="label-key">Label</label><input id="label-key" value=${label.key}
          aria-invalid=${errors.label ? 'true' : undefined} onInput=${(e) => setLabel({ ...label, key: e.currentTarget.value })} />
          ${errors.label && html`<p class="error">${errors.label}</p>`}</div>
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
