// Content: the fields of what one push shows (the content members of a
// send request, spec 2.1), written once for the composer and for each push
// of an automation.
import { html } from '../vendor/preact-htm.module.js';
import { Field, Disclosure } from '../forms.js';
import { MergeTags, Translations } from './texts.js';
import { counted } from './budget.js';

// Content edits v (contentValues' form, sends.js): set(name) changes one
// member; errors are keyed by field id. prefix starts every id and of ends
// every accessible name, so that several on a page stay apart (the
// composer has one, with neither); labels lists the labels for merge tags;
// children go at the end of "More options". templates, when given (an
// automation's push, a journey's send step), offers the website's
// templates: the one chosen fills what the push leaves empty when it is
// sent.
export function Content({ v, set, errors, labels, prefix = '', of = '', templates, children }) {
  const id = (name) => prefix + name;
  const field = (name, label, extra) => html`<${Field} id=${id(name)} label=${label + of} value=${v[name]} onInput=${set(name)}
    error=${errors[id(name)]} required=${false} ...${extra} />`;
  // link is an optional field of a link or an image's address.
  const link = (name, label, value, onInput, hint) => html`<${Field} id=${id(name)} label=${label + of} type="url" value=${value}
    onInput=${onInput} error=${errors[id(name)]} required=${false} hint=${hint} />`;
  const setAction = (i, k) => (x) => set('actions')(v.actions.map((a, j) => (j === i ? { ...a, [k]: x } : a)));
  const box = (name, label) => html`<label class="choice"><input type="checkbox" checked=${v[name]}
    onChange=${(e) => set(name)(e.currentTarget.checked)} /> ${label + of}</label>`;
  const chosen = templates && templates.find((t) => t.id === v.templateId);
  return html`
    ${templates && html`<div class="field"><label for=${id('templateId')}>${'Template' + of}</label>
      <select id=${id('templateId')} value=${v.templateId} onChange=${(e) => set('templateId')(e.currentTarget.value)}
        aria-describedby=${id('templateId') + '-hint'}>
        <option value="">No template</option>
        ${templates.map((t) => html`<option value=${t.id}>${t.name}</option>`)}
        ${v.templateId && !chosen && html`<option value=${v.templateId}>${v.templateId}</option>`}</select>
      <p class="hint" id=${id('templateId') + '-hint'}>${v.templateId
        ? 'Every field left empty comes from the template when the push is sent' + (chosen && chosen.title ? ' (its title: ' + chosen.title + ')' : '') + '; a change to the template reaches it.'
        : 'A template fills every field left empty when the push is sent.'}</p></div>`}
    ${field('title', 'Title', { required: !v.templateId, hint: counted('title', v.title) })}
    ${field('body', 'Message', { hint: counted('body', v.body) })}
    <${MergeTags} labels=${labels} onInsert=${(name, tag) => set(name)(v[name] + tag)} prefix=${prefix} of=${of} />
    ${link('url', 'Link', v.url, set('url'), 'Where a click goes; the website\'s default link when empty.')}
    ${link('icon', 'Icon', v.icon, set('icon'))}
    ${link('image', 'Image', v.image, set('image'))}
    ${link('badge', 'Badge', v.badge, set('badge'), 'A small one-colour PNG with a transparent background (about 96×96) for Android\'s status bar.')}
    <fieldset><legend>${'Buttons (up to 2)' + of}</legend>
      ${v.actions.map((a, i) => html`<div class="row">
        <${Field} id=${id('action' + i + '-title')} label=${'Button ' + (i + 1) + ' text' + of} value=${a.title} required=${false}
          error=${errors[id('action' + i + '-title')]} onInput=${setAction(i, 'title')} />
        ${link('action' + i + '-url', 'Button ' + (i + 1) + ' link', a.url, setAction(i, 'url'))}
      </div>`)}
    </fieldset>
    <${Translations} rows=${v.translations} onChange=${set('translations')} errors=${errors} prefix=${prefix} of=${of} />
    <${Disclosure} label=${'More options' + of}>
      ${field('ttl', 'Time to live (seconds)', { type: 'number', hint: 'How long a push service keeps trying an offline browser: 1 to 2,419,200; 24 hours when empty.' })}
      ${field('tag', 'Tag', { hint: 'A later notification with the same tag replaces this one.' })}
      ${box('requireInteraction', 'Stays until clicked or closed')}
      ${children}
    <//>`;
}
