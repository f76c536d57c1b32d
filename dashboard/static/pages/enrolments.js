// A person's journey enrolments, on their page (issue 32): each journey
// they entered, its version, state and current step; one opened shows its
// history, each step taken, when and why: why this person got that push.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { Alert } from '../forms.js';
import { useLoad } from '../lists.js';
import { formatTime } from '../format.js';

// stateNames are an enrolment's states in words.
const stateNames = { active: 'Active', completed: 'Completed', exited: 'Exited', goal_reached: 'Goal reached' };

// History is enrolment e's history, loaded when shown.
function History({ site, e, journey }) {
  const load = useLoad(() => call('GET', '/journeys/' + encodeURIComponent(e.journeyId) + '/enrollments/' + encodeURIComponent(e.id)), [e.id]);
  const rows = load.data && load.data.history;
  const caption = 'History in ' + journey;
  return html`<div class="history"><h3>${caption}</h3>
    <${Alert} error=${load.error} />
    ${!rows && !load.error && html`<p role="status">Loading…</p>`}
    ${rows && rows.length === 0 && html`<p class="empty">No step taken yet: the first comes when its time is due.</p>`}
    ${rows && rows.length > 0 && html`<div class="scroll"><table>
      <caption class="visually-hidden">${caption}</caption>
      <thead><tr><th scope="col">Step</th><th scope="col">Type</th><th scope="col">At</th><th scope="col">Outcome</th></tr></thead>
      <tbody>${rows.map((h) => html`<tr><th scope="row">${h.stepId}</th><td>${h.type}</td><td>${formatTime(h.at, site.timezone)}</td>
        <td>${h.outcome}${h.notificationId && html` (<a href=${'#/notifications/' + encodeURIComponent(h.notificationId)}>the push</a>)`}</td></tr>`)}</tbody>
    </table></div>`}
  </div>`;
}

// Enrolments lists person id's enrolments, newest first.
export function Enrolments({ site, id }) {
  const load = useLoad(() => Promise.all([call('GET', '/subscribers/' + encodeURIComponent(id) + '/enrollments'), call('GET', '/journeys')]),
    [id, site.projectId]);
  const [open, setOpen] = useState(null); // the enrolment whose history shows
  if (load.error) return html`<h2>Journeys</h2><${Alert} error=${load.error} what="The journeys did not load" />`;
  if (!load.data) return html`<h2>Journeys</h2><p role="status">Loading…</p>`;
  const [{ enrollments }, { journeys }] = load.data;
  const nameOf = (jid) => (journeys.find((j) => j.id === jid) || { name: 'A deleted journey' }).name;
  return html`<h2>Journeys</h2>
    ${enrollments.length === 0 ? html`<p class="empty">Not in any journey: a journey’s entry, or your server through the API, enrols people.</p>`
      : html`<div class="scroll"><table>
      <caption class="visually-hidden">Journeys</caption>
      <thead><tr><th scope="col">Journey</th><th scope="col">Version</th><th scope="col">State</th><th scope="col">Current step</th>
        <th scope="col">Entered</th><th scope="col"><span class="visually-hidden">History</span></th></tr></thead>
      <tbody>${enrollments.map((e) => html`<tr>
        <th scope="row"><a href=${'#/journeys/' + encodeURIComponent(e.journeyId)}>${nameOf(e.journeyId)}</a></th>
        <td class="num">${e.version}</td><td>${stateNames[e.state] || e.state}</td><td>${e.currentStep + (e.waiting ? ' (waiting)' : '')}</td>
        <td>${formatTime(e.enteredAt, site.timezone)}</td>
        <td class="buttons"><button type="button" class="secondary" aria-expanded=${open === e.id ? 'true' : 'false'}
          aria-label=${'History in ' + nameOf(e.journeyId) + ', version ' + e.version + ', ' + (stateNames[e.state] || e.state).toLowerCase()}
          onClick=${() => setOpen(open === e.id ? null : e.id)}>History</button></td>
      </tr>`)}</tbody>
    </table></div>`}
    ${open && enrollments.some((e) => e.id === open) && html`<${History} site=${site} e=${enrollments.find((e) => e.id === open)}
      journey=${nameOf(enrollments.find((e) => e.id === open).journeyId)} key=${open} />`}`;
}
