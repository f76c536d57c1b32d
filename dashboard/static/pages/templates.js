// Templates (issue 35): saved content, a name and what one push shows
// (the content members of a send request, merge tags included). The form
// writes a template with the composer's content fields, beside the
// composer's previews and the push's size; the list starts a notification
// from a template, changes one, or deletes one (refused, with what uses
// it, while an automation or a journey names it).
import { html, useState } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { Alert, Field, useForm, FormError, errorsOf, actions } from '../forms.js';
import { useLoad } from '../lists.js';
import { contentValues, contentRequest, contentField, contentMembers, duplicate } from '../sends.js';
import { Content } from './content.js';
import { Preview } from './preview.js';
import { payloadSize, Budget, fallbacks } from './budget.js';

// templateBody is a template's form v as the body of POST or PUT
// /templates: its name and content, a member left empty as null (a PUT
// clears it; a POST leaves it out).
export function templateBody(v, put) {
  const body = { name: v.name, ...contentRequest(v) };
  if (!body.title.trim()) delete body.title;
  for (const k of contentMembers) {
    if (body[k] === undefined && put) body[k] = null;
  }
  return body;
}

// templateError maps a refusal of a template to the field it concerns:
// its name, or a content field as the composer's are.
export function templateError(err, v, nameField = 'name') {
  if (!(err instanceof ApiError)) return errorsOf(err);
  if (err.code === 'name_required' || err.code === 'invalid_name') return { [nameField]: err.message };
  return { [contentField(err.code, err.message, v)]: err.message };
}

// useTemplateLabels loads the labels for merge tags.
function useLabels(site) {
  const facets = useLoad(() => call('GET', '/audience/subscribers/facets'), [site.projectId]);
  return ((facets.data && facets.data.tags) || []).map((t) => t.key);
}

// TemplateForm makes a template (template absent) or changes template;
// done(saved) ends it.
function TemplateForm({ site, template, done, settings }) {
  const f = useForm({ name: template ? template.name : '', ...contentValues(template) });
  const v = f.values;
  const labels = useLabels(site);
  const save = f.submit(async () => {
    const body = templateBody(v, !!template);
    done(template ? await call('PUT', '/templates/' + encodeURIComponent(template.id), body) : await call('POST', '/templates', body));
  }, (err) => templateError(err, v));
  const name = template ? 'Template “' + template.name + '”' : 'New template';
  return html`<div class="composer template-form">
    <h2>${template ? 'Change template “' + template.name + '”' : 'New template'}</h2>
    <form onSubmit=${save} novalidate aria-label=${name}>
      <${FormError} errors=${f.errors} />
      <${Field} id="name" label="Template name" value=${v.name} onInput=${f.set('name')} error=${f.errors.name} />
      <p class="hint">A send from this template takes every member it leaves empty from the template; the title may be left for the send.</p>
      <${Content} v=${v} set=${f.set} errors=${f.errors} labels=${labels} />
      <${Budget} size=${payloadSize(contentRequest(v), site, settings)} />
      <div class="actions"><button type="submit" disabled=${f.busy}>${template ? 'Save template' : 'Create template'}</button>
        <button type="button" class="secondary" onClick=${() => done(null)}>Cancel</button></div>
    </form>
    <aside aria-label="Previews"><${Preview} v=${v} site=${site} /></aside>
  </div>`;
}

// startFrom opens the composer with template t's content.
export function startFrom(t) {
  const content = {};
  for (const k of contentMembers) {
    if (t[k] !== undefined) content[k] = t[k];
  }
  duplicate(content);
}

export function Templates({ site }) {
  const canChange = site.role !== 'viewer';
  const list = useLoad(() => call('GET', '/templates'), [site.projectId]);
  const settings = useLoad(() => call('GET', '/settings'), [site.projectId]);
  const [editing, setEditing] = useState(null); // null, 'new', or the template changed
  const [failed, setFailed] = useState(null); // why a deletion failed
  const act = actions(() => {
    setFailed(null);
    list.reload();
  }, setFailed);
  const done = (saved) => {
    setEditing(null);
    if (saved) list.reload();
  };
  const templates = list.data && list.data.templates;
  return html`<section>
    <h1>Templates</h1>
    <p>Your house style, saved once: a send, an automation’s push or a journey’s step starts from a template and changes what it needs.
      A change to a template reaches the automations and journeys that use it; past sends keep what they sent.</p>
    ${canChange && !editing && html`<p><button type="button" onClick=${() => setEditing('new')}>New template</button></p>`}
    ${editing && html`<${TemplateForm} site=${site} template=${editing === 'new' ? null : editing} done=${done}
      settings=${settings.data && settings.data.settings} key=${editing === 'new' ? 'new' : editing.id} />`}
    <${Alert} error=${list.error} />
    <${Alert} error=${failed} what="The deletion failed" />
    ${!templates && !list.error && html`<p role="status">Loading…</p>`}
    ${templates && templates.length === 0 && html`<p class="empty">No templates yet. ${canChange ? 'Make one with New template, or save one from the composer' : 'An owner or admin makes them here'}.</p>`}
    ${templates && templates.map((t) => html`<article class="goal" key=${t.id} aria-labelledby=${'template-' + t.id}>
      <h2 id=${'template-' + t.id}>${t.name}</h2>
      <dl class="facts"><dt>Title</dt><dd>${t.title ? fallbacks(t.title) : 'Given by each send'}</dd>
        ${t.body && html`<dt>Message</dt><dd>${fallbacks(t.body)}</dd>`}
        ${t.url && html`<dt>Link</dt><dd>${t.url}</dd>`}
        ${t.actions && html`<dt>Buttons</dt><dd>${t.actions.map((a) => a.title).join(', ')}</dd>`}
        ${t.translations && html`<dt>Languages</dt><dd>${Object.keys(t.translations).sort().join(', ')}</dd>`}</dl>
      ${canChange && html`<div class="actions">
        <button type="button" aria-label=${'Use template ' + t.name} onClick=${() => startFrom(t)}>Use</button>
        <button type="button" class="secondary" aria-label=${'Change template ' + t.name} onClick=${() => setEditing(t)}>Change</button>
        <button type="button" class="secondary" aria-label=${'Delete template ' + t.name}
          onClick=${act('DELETE', '/templates/' + encodeURIComponent(t.id), undefined, 'Delete the template “' + t.name + '”? Sends made from it keep their content.')}>Delete</button>
      </div>`}
    </article>`)}
  </section>`;
}
