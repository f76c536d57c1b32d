// The composer's texts: merge tags to insert, and translations.
import { html, useState } from '../vendor/preact-htm.module.js';
import { Disclosure } from '../forms.js';

// mergeNames are the subscriber attributes merge tags know (spec 2.1).
const mergeNames = [['external_id', 'External id'], ['country', 'Country'], ['language', 'Language'], ['timezone', 'Time zone'], ['device', 'Device']];

// MergeTags inserts {name|fallback} into the title or the message. prefix
// and of tell several on a page apart (the automation editor's pushes):
// prefix starts the ids, of ends the accessible names.
export function MergeTags({ labels, onInsert, prefix = '', of = '' }) {
  const [name, setName] = useState('external_id');
  const [fallback, setFallback] = useState('');
  const tag = '{' + name + (fallback ? '|' + fallback.replace(/[{}]/g, '') : '') + '}';
  return html`<${Disclosure} label=${'Merge tags' + of}>
    <p class="hint">A merge tag is replaced by each subscriber’s value, or by the fallback when they have none.</p>
    <div class="row">
      <div class="field"><label for=${prefix + 'merge-name'}>${'Value' + of}</label>
        <select id=${prefix + 'merge-name'} value=${name} onChange=${(e) => setName(e.currentTarget.value)}>
          ${mergeNames.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
          ${labels.filter((k) => /^[A-Za-z0-9_.:-]{1,64}$/.test(k) && !mergeNames.some(([a]) => a.toLowerCase() === k.toLowerCase()) &&
            !['externalid', 'subscriber_id'].includes(k.toLowerCase())).map((k) => html`<option value=${k}>${'Label: ' + k}</option>`)}
        </select></div>
      <div class="field"><label for=${prefix + 'merge-fallback'}>${'Fallback' + of}</label>
        <input id=${prefix + 'merge-fallback'} value=${fallback} onInput=${(e) => setFallback(e.currentTarget.value)} /></div>
    </div>
    <p class="actions"><code>${tag}</code>
      <button type="button" class="secondary" onClick=${() => onInsert('title', tag)}>${'Insert into title' + of}</button>
      <button type="button" class="secondary" onClick=${() => onInsert('body', tag)}>${'Insert into message' + of}</button></p>
  <//>`;
}

// Translations edits the title and message per language; errors holds a
// refusal at the field it names (tr0-title…, after prefix). prefix and of
// are MergeTags'.
export function Translations({ rows, onChange, errors, prefix = '', of = '' }) {
  const edit = (i, change) => onChange(rows.map((t, j) => (j === i ? { ...t, ...change } : t)));
  const input = (i, member, label, extra) => {
    const id = prefix + 'tr' + i + '-' + member;
    return html`<div class="field"><label for=${id}>${label + ' of translation ' + (i + 1) + of}</label>
      <input id=${id} value=${rows[i][member]} ...${extra} aria-invalid=${errors[id] ? 'true' : undefined} aria-describedby=${errors[id] ? id + '-error' : undefined}
        onInput=${(e) => edit(i, { [member]: e.currentTarget.value })} />
      ${errors[id] && html`<p class="error" id=${id + '-error'}>${errors[id]}</p>`}</div>`;
  };
  return html`<${Disclosure} label=${'Translations' + of} open=${rows.length > 0}>
    <p class="hint">Browsers in these languages get this title and message; others get the main text.</p>
    ${rows.map((t, i) => html`<div class="row translation" role="group" aria-label=${'Translation ' + (i + 1) + of}>
      ${input(i, 'language', 'Language', { maxlength: 2, placeholder: 'fr' })}
      ${input(i, 'title', 'Title')}
      ${input(i, 'body', 'Message')}
      <button type="button" class="secondary" aria-label=${'Remove translation ' + (i + 1) + of} onClick=${() => onChange(rows.filter((_, j) => j !== i))}>Remove</button>
    </div>`)}
    <button type="button" class="secondary" onClick=${() => onChange([...rows, { language: '', title: '', body: '' }])}>${'Add translation' + of}</button>
  <//>`;
}
