// The subscription prompt (issue 36): how and when the browser SDK asks
// the website's visitors, with a live preview of what they see and the
// prompt's results (its subscription rate) from GET /stats. Every text is
// rendered as text, in the preview as on the website.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { Alert, Field, useForm, FormError, errorsOf } from '../forms.js';
import { useLoad } from '../lists.js';
import { numbers } from '../format.js';

const kinds = [['soft', 'Soft prompt: the website asks first'], ['native', 'The browser’s request, after the visitor’s first click'],
  ['bell', 'A bell button']];
const kindNames = { soft: 'Soft prompt', native: 'Browser request', bell: 'Bell' };
const textFields = [['title', 'Title'], ['message', 'Message'], ['accept', 'Accept button'], ['dismiss', 'Dismiss button'],
  ['iosHint', 'iOS hint (Safari outside a home-screen app)']];

const lines = (s) => s.split('\n').map((l) => l.trim()).filter(Boolean);

// promptValues is the form of stored prompt p.
function promptValues(p) {
  return {
    enabled: p.enabled, kind: p.kind, style: p.style, ...p.texts,
    translations: Object.entries(p.translations || {}).map(([lang, t]) => ({ lang, ...t })),
    seconds: String(p.when.seconds), pageViews: String(p.when.pageViews), scrollPercent: String(p.when.scrollPercent),
    include: p.include.join('\n'), exclude: p.exclude.join('\n'), dismissDays: String(p.dismissDays),
  };
}

// promptBody is form v as the body of PUT /prompt: the whole prompt.
export function promptBody(v) {
  const texts = {};
  for (const [k] of textFields) texts[k] = v[k];
  const translations = {};
  for (const t of v.translations) {
    if (!t.lang.trim()) continue;
    translations[t.lang.trim()] = { title: t.title, message: t.message, accept: t.accept, dismiss: t.dismiss, iosHint: t.iosHint || '' };
  }
  const n = (s) => (s.trim() === '' ? 0 : Number(s));
  return {
    enabled: v.enabled, kind: v.kind, style: v.style, texts, translations,
    when: { seconds: n(v.seconds), pageViews: n(v.pageViews), scrollPercent: n(v.scrollPercent) },
    include: lines(v.include), exclude: lines(v.exclude), dismissDays: n(v.dismissDays),
  };
}

// Preview draws the prompt as the SDK does, from the form's values, in
// the main texts or one translation's (an empty text falls back to the
// main one, as on the website).
function Preview({ v }) {
  const [lang, setLang] = useState('');
  const tr = v.translations.find((t) => t.lang.trim() && t.lang.trim() === lang);
  const text = (k) => (tr && tr[k]) || v[k];
  let box;
  if (v.kind === 'bell') {
    box = html`<div class="pv-bell" role="img" aria-label=${'Bell: ' + v.title}><span aria-hidden="true">🔔</span></div>`;
  } else if (v.kind === 'native') {
    box = html`<div class="pv-box pv-native"><p class="pv-title">shop.example wants to</p><p>Show notifications</p>
      <div class="pv-buttons"><span class="pv-button">Block</span><span class="pv-button primary">Allow</span></div>
      <p class="hint">Asked at the visitor’s first click or key press once the conditions below hold.</p></div>`;
  } else {
    box = html`<div class=${'pv-box pv-' + v.style}><p class="pv-title">${text('title')}</p><p class="pv-text">${text('message')}</p>
      <div class="pv-buttons"><span class="pv-button">${text('dismiss')}</span><span class="pv-button primary">${text('accept')}</span></div></div>`;
  }
  const langs = v.translations.map((t) => t.lang.trim()).filter(Boolean);
  return html`<section class="prompt-preview" aria-label="Preview"><h2>Preview</h2>
    ${langs.length > 0 && html`<div class="field inline"><label for="preview-lang">Preview in</label>
      <select id="preview-lang" value=${lang} onChange=${(e) => setLang(e.currentTarget.value)}>
        <option value="">Main texts</option>${langs.map((l) => html`<option value=${l}>${l}</option>`)}</select></div>`}
    <div class="pv-page">${box}</div></section>`;
}

// Results is the prompt's counts by kind, with the subscription rate.
function Results({ prompts }) {
  if (!prompts || prompts.length === 0) return html`<p class="empty">No prompt shown yet.</p>`;
  return html`<div class="scroll"><table><caption>Prompt results</caption>
    <thead><tr><th scope="col">Prompt</th><th scope="col">Shown</th><th scope="col">Accepted</th><th scope="col">Dismissed</th><th scope="col">Subscription rate</th></tr></thead>
    <tbody>${prompts.map((p) => html`<tr><th scope="row">${kindNames[p.kind] || p.kind}</th><td class="num">${numbers.format(p.impressions)}</td>
      <td class="num">${numbers.format(p.accepts)}</td><td class="num">${numbers.format(p.dismissals)}</td>
      <td class="num">${numbers.format(Math.round(p.rate * 1000) / 10) + ' %'}</td></tr>`)}</tbody></table></div>`;
}

function PromptForm({ prompt, canChange, onSaved }) {
  const f = useForm(promptValues(prompt));
  const v = f.values;
  const [saved, setSaved] = useState(false);
  const save = f.submit(async () => {
    setSaved(false);
    onSaved(await call('PUT', '/prompt', promptBody(v)));
    setSaved(true);
  }, (err) => (err instanceof ApiError && err.code === 'invalid_prompt' ? { form: err.message } : errorsOf(err)));
  const setTr = (i, k) => (e) => f.set('translations')(v.translations.map((t, j) => (j === i ? { ...t, [k]: e.currentTarget.value } : t)));
  const area = (id, label, hint) => html`<div class="field"><label for=${id}>${label}</label>
    <textarea id=${id} rows="3" value=${v[id]} onInput=${(e) => f.set(id)(e.currentTarget.value)} aria-describedby=${id + '-hint'}></textarea>
    <p class="hint" id=${id + '-hint'}>${hint}</p></div>`;
  return html`<div class="prompt-layout"><form onSubmit=${save} novalidate aria-label="Prompt">
    <${FormError} errors=${f.errors} />
    ${saved && html`<p role="status">Saved.</p>`}
    <label class="choice"><input type="checkbox" checked=${v.enabled} onChange=${(e) => f.set('enabled')(e.currentTarget.checked)} /> Show the prompt on the website</label>
    <fieldset><legend>Kind</legend>${kinds.map(([k, l]) => html`<label class="choice"><input type="radio" name="prompt-kind" checked=${v.kind === k}
      onChange=${() => f.set('kind')(k)} /> ${l}</label>`)}</fieldset>
    ${v.kind === 'soft' && html`<div class="field"><label for="prompt-style">Style</label>
      <select id="prompt-style" value=${v.style} onChange=${(e) => f.set('style')(e.currentTarget.value)}>
        <option value="slide-down">Slide down from the top</option><option value="modal">Modal in the middle</option></select></div>`}
    <fieldset><legend>Texts</legend>${textFields.map(([k, l]) => html`<${Field} id=${'prompt-' + k} label=${l} value=${v[k]} onInput=${f.set(k)} required=${false} />`)}</fieldset>
    <fieldset><legend>Translations</legend>
      <p class="hint">Shown to visitors whose browser speaks the language (en, pt-BR); an empty text is the main one.</p>
      ${v.translations.map((t, i) => html`<div class="translation" key=${i}><div class="row">
        <div class="field"><label for=${'tr-lang-' + i}>Language</label><input id=${'tr-lang-' + i} value=${t.lang} onInput=${setTr(i, 'lang')} /></div>
        ${['title', 'message', 'accept', 'dismiss'].map((k) => html`<div class="field"><label for=${'tr-' + k + '-' + i}>${textFields.find(([x]) => x === k)[1] + ' (' + (t.lang || 'new') + ')'}</label>
          <input id=${'tr-' + k + '-' + i} value=${t[k]} onInput=${setTr(i, k)} /></div>`)}</div>
        <button type="button" class="secondary" onClick=${() => f.set('translations')(v.translations.filter((_, j) => j !== i))}>Remove ${t.lang || 'translation'}</button></div>`)}
      <button type="button" class="secondary" onClick=${() => f.set('translations')([...v.translations, { lang: '', title: '', message: '', accept: '', dismiss: '' }])}>Add a translation</button>
    </fieldset>
    <fieldset><legend>When</legend><div class="row">
      <${Field} id="prompt-seconds" label="Seconds on the page" type="number" value=${v.seconds} onInput=${f.set('seconds')} required=${false} />
      <${Field} id="prompt-pageViews" label="Page views" type="number" value=${v.pageViews} onInput=${f.set('pageViews')} required=${false} />
      <${Field} id="prompt-scrollPercent" label="Scroll depth (%)" type="number" value=${v.scrollPercent} onInput=${f.set('scrollPercent')} required=${false} />
    </div><p class="hint">All of them: 0 is no condition.</p></fieldset>
    <fieldset><legend>Where</legend>
      ${area('include', 'Show on pages', 'One URL pattern a line, * for any characters: /blog* is the blog, none is every page.')}
      ${area('exclude', 'Never on pages', 'One a line, such as /checkout*.')}</fieldset>
    <${Field} id="prompt-dismissDays" label="Days to wait after a dismissal" type="number" value=${v.dismissDays} onInput=${f.set('dismissDays')} required=${false} />
    ${canChange && html`<div class="actions"><button type="submit" disabled=${f.busy}>Save prompt</button></div>`}
  </form><${Preview} v=${v} /></div>`;
}

export function Prompt({ site }) {
  const canChange = site.role !== 'viewer';
  const prompt = useLoad(() => call('GET', '/prompt'), [site.projectId]);
  const stats = useLoad(() => call('GET', '/stats'), [site.projectId]);
  return html`<section>
    <h1>Subscription prompt</h1>
    <p>How and when your website asks its visitors to subscribe. Browsers hide a request made as the page loads, and Safari on iOS allows notifications only to a site added to the home screen, where visitors get a hint instead.</p>
    <${Alert} error=${prompt.error} />
    ${!prompt.data && !prompt.error && html`<p role="status">Loading…</p>`}
    ${prompt.data && html`<${PromptForm} prompt=${prompt.data} canChange=${canChange} onSaved=${() => stats.reload()} />`}
    <h2>Results</h2>
    <${Alert} error=${stats.error} what="The results did not load" />
    ${stats.data && html`<${Results} prompts=${stats.data.prompts} />`}
  </section>`;
}
