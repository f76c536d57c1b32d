// Home: the website's numbers over a period, as charts and a table by
// day, and the latest sends.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { Alert, Disclosure } from '../forms.js';
import { useLoad } from '../lists.js';
import { numbers, formatTime } from '../format.js';

const periods = [['7', 'last 7 days'], ['30', 'last 30 days'], ['90', 'last 90 days'], ['365', 'last 12 months']];

// dayOf is the day (YYYY-MM-DD) of the moment iso in timeZone.
function dayOf(iso, timeZone) {
  try {
    return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(iso));
  } catch (e) {
    return iso.slice(0, 10);
  }
}

const shortDay = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });

// DailyChart draws one value a day as bars, or as a line for a level such
// as subscribers (SVG, no library). Its accessible name says what it
// shows; the table under the charts holds the numbers.
function DailyChart({ label, days, value, period, line, summary }) {
  const top = Math.max(1, ...days.map(value));
  const w = 100 / Math.max(1, days.length);
  const y = (d) => 40 - (38 * value(d)) / top;
  const total = days.reduce((n, d) => n + value(d), 0);
  const name = summary || label + ' a day over the ' + period + ', ' + numbers.format(total) + ' in all';
  return html`<figure class="chart">
    <figcaption>${label}: ${line ? numbers.format(days.length ? value(days[days.length - 1]) : 0) : numbers.format(total)}</figcaption>
    <svg viewBox="0 0 100 40" preserveAspectRatio="none" role="img" aria-label=${name}>
      ${line ? html`<polyline points=${days.map((d, i) => (i * w + w / 2) + ',' + y(d)).join(' ')} />`
        : days.map((d, i) => html`<rect x=${i * w + w * 0.1} width=${w * 0.8} y=${y(d)} height=${40 - y(d)}><title>${d.date}: ${numbers.format(value(d))}</title></rect>`)}
    </svg>
    ${days.length > 0 && html`<p class="axis"><span>${shortDay.format(new Date(days[0].date))}</span><span>${shortDay.format(new Date(days[days.length - 1].date))}</span></p>`}
  </figure>`;
}

export function Home({ site }) {
  const [period, setPeriod] = useState('30');
  const state = useLoad(() => {
    const to = dayOf(new Date().toISOString(), site.timezone);
    const first = new Date(to + 'T00:00:00Z'); // calendar days: a day of 23 or 25 hours is one day
    first.setUTCDate(first.getUTCDate() - (Number(period) - 1));
    const from = first.toISOString().slice(0, 10);
    return Promise.all([call('GET', '/stats?from=' + from + '&to=' + to), call('GET', '/notifications?limit=10')])
      .then(([stats, latest]) => ({ stats, items: latest.items }));
  }, [site.projectId, period]);
  const st = state.data && state.data.stats;
  const items = state.data && state.data.items;
  const name = periods.find((p) => p[0] === period)[1];
  return html`<section>
    <h1>${site.name}</h1>
    <div class="field inline"><label for="period">Period</label>
      <select id="period" value=${period} onChange=${(e) => setPeriod(e.currentTarget.value)}>
        ${periods.map(([v, l]) => html`<option value=${v}>${l[0].toUpperCase() + l.slice(1)}</option>`)}</select></div>
    ${state.loading && html`<p role="status">Loading…</p>`}
    <${Alert} error=${state.error} />
    ${st && html`<dl class="tiles">
      <div><dt>Subscribers</dt><dd>${numbers.format(st.totals.subscribers)}</dd></div>
      <div><dt>New subscribers</dt><dd>${numbers.format(st.totals.newSubscribers)}</dd></div>
      <div><dt>Sends</dt><dd>${numbers.format(st.totals.notifications)}</dd></div>
      <div><dt>Clicks</dt><dd>${numbers.format(st.totals.clicked)}</dd></div>
      <div><dt>CTR</dt><dd>${numbers.format(st.totals.ctr)} %</dd></div>
    </dl>
    <p class="hint">Over the ${name}, days in ${st.timezone}.</p>
    <div class="charts">
      <${DailyChart} label="Subscribers" days=${st.days} value=${(d) => d.subscribers} period=${name} line
        summary=${'Subscribers at the end of each day over the ' + name + ', ' + numbers.format(st.totals.subscribers) + ' now'} />
      <${DailyChart} label="New subscribers" days=${st.days} value=${(d) => d.newSubscribers} period=${name} />
      <${DailyChart} label="Pushes sent" days=${st.days} value=${(d) => d.sent} period=${name} />
      <${DailyChart} label="Clicks" days=${st.days} value=${(d) => d.clicked} period=${name} />
    </div>
    <${Disclosure} label="Numbers by day">
      <div class="scroll"><table>
        <caption class="visually-hidden">Numbers by day</caption>
        <thead><tr><th scope="col">Day</th><th scope="col">Subscribers</th><th scope="col">New</th><th scope="col">Unsubscribed</th>
          <th scope="col">Sends</th><th scope="col">Sent</th><th scope="col">Clicked</th><th scope="col">CTR</th></tr></thead>
        <tbody>${st.days.slice().reverse().map((d) => html`<tr><th scope="row">${shortDay.format(new Date(d.date))}</th>
          ${[d.subscribers, d.newSubscribers, d.unsubscribed, d.notifications, d.sent, d.clicked].map((x) => html`<td class="num">${numbers.format(x)}</td>`)}
          <td class="num">${numbers.format(d.ctr)} %</td></tr>`)}</tbody>
      </table></div>
    <//>`}
    <h2>Latest sends</h2>
    ${items && items.length === 0 && html`<p class="empty">Nothing sent yet. <a href="#/install">Install RelayBell on your website</a> to get subscribers${site.role !== 'viewer' ? html`, then <a href="#/compose">write your first notification</a>` : ''}.</p>`}
    ${items && items.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">Latest sends</caption>
      <thead><tr><th scope="col">Title</th><th scope="col">Status</th><th scope="col">Sent</th><th scope="col">Clicked</th><th scope="col">CTR</th><th scope="col">Created</th></tr></thead>
      <tbody>${items.map((n) => html`<tr>
        <td><a class="cut" href=${'#/notifications/' + n.id} title=${n.title}>${n.title}</a></td><td>${n.status}</td><td class="num">${numbers.format(n.sent)}</td>
        <td class="num">${numbers.format(n.clicked)}</td><td class="num">${numbers.format(n.ctr)} %</td>
        <td>${formatTime(n.created_at, site.timezone)}</td></tr>`)}</tbody>
    </table></div>`}
  </section>`;
}
