// Notifications: the list of sends with its filters, paging and export.
import { html, useState, useEffect } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { go, withQuery } from '../router.js';
import { errorsOf, FormError } from '../forms.js';
import { useLoad } from '../lists.js';
import { numbers, formatTime } from '../format.js';

const statuses = ['draft', 'scheduled', 'queued', 'held_for_review', 'sending', 'sent', 'failed', 'canceled'];

// The filters live in the page's address (#/notifications?status=sent&q=sale),
// so back and reload show the same list: filtersOf reads them from the
// route's query, listQuery writes them as the list's query.
function filtersOf(query) {
  const p = new URLSearchParams(query);
  return { status: p.get('status') || '', q: p.get('q') || '', from: p.get('from') || '', to: p.get('to') || '', feedId: p.get('feedId') || '' };
}

function listQuery(f, cursor) {
  const p = new URLSearchParams();
  if (f.status) p.append('status', f.status);
  if (f.q.trim()) p.set('q', f.q.trim());
  if (f.from) p.set('from', f.from);
  if (f.to) p.set('to', f.to);
  if (f.feedId) p.set('feedId', f.feedId); // a feed's sends (its page links here)
  if (cursor) p.set('cursor', cursor);
  return p;
}

// listErrors puts a refused list next to the filter it concerns.
function listErrors(err) {
  return err instanceof ApiError && err.code === 'invalid_range' ? { from: err.message }
    : err instanceof ApiError && err.code === 'invalid_status' ? { status: err.message } : errorsOf(err);
}

export function Notifications({ site, query = '' }) {
  const applied = filtersOf(query);
  const [filters, setFilters] = useState(applied);
  useEffect(() => setFilters(filtersOf(query)), [query]); // back, forward, a link
  const list = useLoad(() => call('GET', '/notifications?' + listQuery(applied)), [site.projectId, query]);
  const apply = (e) => {
    e.preventDefault();
    const next = listQuery(filters).toString();
    if (next === query) list.reload();
    else go(withQuery('notifications', next));
  };
  const more = () => list.more(() => call('GET', '/notifications?' + listQuery(applied, list.data.nextCursor)),
    (old, a) => ({ items: old.items.concat(a.items), nextCursor: a.nextCursor }));
  const items = list.data ? list.data.items : [];
  const errors = list.error ? listErrors(list.error) : {};
  const set = (name) => (e) => setFilters({ ...filters, [name]: e.currentTarget.value });
  const exportHref = '/api/v1/notifications/export.csv?' + listQuery(applied) + '&projectId=' + encodeURIComponent(site.projectId);
  return html`<section>
    <h1>Notifications</h1>
    <form class="filters" role="search" onSubmit=${apply}>
      <div class="field"><label for="q">Search</label>
        <input id="q" type="search" value=${filters.q} onInput=${set('q')} /></div>
      <div class="field"><label for="status">Status</label>
        <select id="status" value=${filters.status} onChange=${set('status')} aria-invalid=${errors.status ? 'true' : undefined}>
          <option value="">Any but drafts</option>
          ${statuses.map((s) => html`<option value=${s}>${s.replace(/_/g, ' ')}</option>`)}
        </select>
        ${errors.status && html`<p class="error">${errors.status}</p>`}</div>
      <div class="field"><label for="from">From</label>
        <input id="from" type="date" value=${filters.from} onInput=${set('from')} aria-invalid=${errors.from ? 'true' : undefined}
          aria-describedby=${errors.from ? 'from-error' : undefined} />
        ${errors.from && html`<p class="error" id="from-error">${errors.from}</p>`}</div>
      <div class="field"><label for="to">To</label>
        <input id="to" type="date" value=${filters.to} onInput=${set('to')} /></div>
      <div class="actions"><button type="submit">Filter</button>
        <a class="button secondary" href=${exportHref} download>Export CSV</a></div>
    </form>
    <${FormError} errors=${errors} />
    ${!list.loading && items.length === 0 && !errors.form && (query ? html`<p class="empty">No sends match these filters. Change them, or <a href="#/notifications">list every send</a>.</p>`
      : html`<p class="empty">No sends yet. ${site.role !== 'viewer' ? html`<a href="#/compose">Write a notification</a>, or send` : 'Send'} one from your server with an API key (Settings).</p>`)}
    ${items.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Notifications</caption>
      <thead><tr><th scope="col">Title</th><th scope="col">Status</th><th scope="col">Audience</th><th scope="col">Sent</th>
        <th scope="col">Clicked</th><th scope="col">CTR</th><th scope="col">Created</th></tr></thead>
      <tbody>${items.map((n) => html`<tr>
        <td><a class="cut" href=${'#/notifications/' + n.id} title=${n.title}>${n.title}</a>${n.welcome && html` <span class="badge">Welcome</span>`}</td><td>${n.status.replace(/_/g, ' ')}</td>
        <td><span class="cut" title=${n.targetSummary}>${n.targetSummary}</span></td><td class="num">${numbers.format(n.sent)}</td><td class="num">${numbers.format(n.clicked)}</td>
        <td class="num">${numbers.format(n.ctr)} %</td><td>${formatTime(n.created_at, site.timezone)}</td></tr>`)}</tbody>
    </table></div>`}
    ${list.loading && html`<p role="status">Loading…</p>`}
    ${list.data && list.data.nextCursor && !list.loading && html`<button type="button" onClick=${more}>Load more</button>`}
  </section>`;
}
