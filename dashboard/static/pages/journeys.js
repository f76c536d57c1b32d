// Journeys: the website's journeys with their figures (issue 32), each
// opening its page and builder (journey.js).
import { html } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { Alert } from '../forms.js';
import { useLoad } from '../lists.js';
import { numbers } from '../format.js';
import { statusNames, triggerText } from './automations.js';

// entryText is what enrols people in a journey, in words.
export function entryText(e, topics, segments) {
  return e.type === 'api' ? 'By the API' : triggerText(e, topics, segments);
}

// journeyFigures sums journey j's per-step figures (GET /journeys/{id}):
// entered is who entered its first step; active who waits at a step now;
// completed the passes through a step with no way out (an exit, or a
// last step); the send counters over every step of every version.
export function journeyFigures(j) {
  const sum = (k) => Object.values(j.stats).reduce((n, s) => n + s[k], 0);
  const terminal = j.steps.filter((s) => s.type === 'exit' || !(s.next || s.yes || s.no || s.timeoutNext || (s.branches || []).some((b) => b.next)));
  return {
    entered: j.steps.length ? (j.stats[j.steps[0].id] || { entered: 0 }).entered : 0, active: sum('waiting'),
    completed: terminal.reduce((n, s) => n + ((j.stats[s.id] && j.stats[s.id].completed) || 0), 0),
    sent: sum('sent'), clicked: sum('clicked'), converted: sum('converted'),
  };
}

const figures = [['entered', 'Entered'], ['active', 'Active'], ['completed', 'Completed'], ['sent', 'Sent'], ['clicked', 'Clicked'], ['converted', 'Converted']];

export function Journeys({ site }) {
  const canChange = site.role !== 'viewer';
  // The list carries no figures: each journey's page does, by step.
  const list = useLoad(async () => {
    const { journeys } = await call('GET', '/journeys');
    return Promise.all(journeys.map((j) => call('GET', '/journeys/' + encodeURIComponent(j.id))));
  }, [site.projectId]);
  const names = useLoad(() => Promise.all([call('GET', '/topics'), call('GET', '/segments')]), [site.projectId]);
  const topics = (names.data && names.data[0].topics) || [];
  const segments = (names.data && names.data[1].segments) || [];
  const all = list.data;
  return html`<section>
    <h1>Journeys</h1>
    <p>Paths of several steps that each person walks on their own: pushes, waits for an event or a click, time windows, splits and conditions.</p>
    ${canChange && html`<p><a class="button" href="#/journeys/new">New journey</a></p>`}
    <${Alert} error=${list.error} />
    <${Alert} error=${names.error} what="The topics and segments did not load" />
    ${!all && !list.error && html`<p role="status">Loading…</p>`}
    ${all && all.length === 0 && html`<p class="empty">No journeys yet. ${canChange ? 'Make one with New journey' : 'An owner or admin makes them here'}:
      a welcome, for one, sends a push, waits a day, and sends another only to whoever did not click the first.</p>`}
    ${all && all.length > 0 && html`<div class="scroll"><table class="figures">
      <caption class="visually-hidden">Journeys</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Entry</th><th scope="col">Version</th>
        ${figures.map(([, label]) => html`<th scope="col">${label}</th>`)}</tr></thead>
      <tbody>${all.map((j) => {
        const n = journeyFigures(j);
        return html`<tr>
          <th scope="row"><a href=${'#/journeys/' + encodeURIComponent(j.id)}>${j.name}</a></th>
          <td>${statusNames[j.status] || j.status}</td>
          <td><span class="cut" title=${entryText(j.entry, topics, segments)}>${entryText(j.entry, topics, segments)}</span></td>
          <td class="num">${numbers.format(j.version)}</td>
          ${figures.map(([k]) => html`<td class="num">${numbers.format(n[k])}</td>`)}
        </tr>`;
      })}</tbody>
    </table></div>`}
  </section>`;
}
