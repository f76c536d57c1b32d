// The team and its roles, invitations.
import { html } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { errorsOf, actions, Alert, Field, useForm, FormError } from '../forms.js';
import { useLoad } from '../lists.js';

export function Team({ site, canChange }) {
  const list = useLoad(() => call('GET', '/members'), [site.projectId]);
  const team = list.data;
  const load = list.reload;
  const f = useForm({ email: '', role: 'viewer' });
  const invite = f.submit(async (v) => {
    await call('POST', '/members', { email: v.email.trim(), role: v.role });
    f.set('email')('');
    load();
  });
  const act = actions(load, (err) => f.setErrors(errorsOf(err)));
  const roles = ['owner', 'admin', 'viewer'];
  return html`<section aria-labelledby="team-title">
    <h2 id="team-title">Team</h2>
    <${Alert} error=${list.error} />
    <${FormError} errors=${f.errors} />
    ${team && html`<div class="scroll"><table>
      <caption class="visually-hidden">Team</caption>
      <thead><tr><th scope="col">Person</th><th scope="col">Role</th>${canChange && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>
        ${team.members.map((m) => html`<tr><td>${m.name ? m.name + ' · ' : ''}${m.email}</td>
          <td>${canChange ? html`<select aria-label=${'Role of ' + m.email} value=${m.role}
              onChange=${(e) => act('PUT', '/members/' + encodeURIComponent(m.userId), { role: e.currentTarget.value })()}>
              ${roles.map((r) => html`<option value=${r}>${r}</option>`)}</select>` : m.role}</td>
          ${canChange && html`<td><button type="button" class="secondary" aria-label=${'Remove ' + m.email}
            onClick=${act('DELETE', '/members/' + encodeURIComponent(m.userId))}>Remove</button></td>`}</tr>`)}
        ${team.invites.map((i) => html`<tr><td>${i.email} (invited)</td><td>${i.role}</td>
          ${canChange && html`<td><button type="button" class="secondary" aria-label=${'Withdraw the invitation of ' + i.email}
            onClick=${act('DELETE', '/members/invites/' + encodeURIComponent(i.email))}>Withdraw</button></td>`}</tr>`)}
      </tbody></table></div>`}
    ${canChange && html`<form onSubmit=${invite} novalidate class="inline">
      <h3>Invite someone</h3>
      <${Field} id="invite-email" label="Email to invite" type="email" value=${f.values.email} onInput=${f.set('email')} error=${f.errors.email} />
      <div class="field"><label for="invite-role">Role</label>
        <select id="invite-role" value=${f.values.role} onChange=${(e) => f.set('role')(e.currentTarget.value)}>
          ${roles.map((r) => html`<option value=${r}>${r}</option>`)}</select></div>
      <button type="submit" disabled=${f.busy}>Invite</button>
    </form>`}
  </section>`;
}
