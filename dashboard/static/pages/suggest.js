// Copy suggestions in the composer (POST /ai/suggest): a Suggest button
// lists proposed titles and messages, each with why, each applied to the
// form with one click. Every text is rendered as text.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { Alert } from '../forms.js';

// Suggest asks for suggestions for v's title and message; apply(s) puts
// one into the form.
export function Suggest({ v, apply }) {
  const [state, setState] = useState({ list: null, error: null, busy: false, applied: '' });
  const ask = async () => {
    if (!v.title.trim()) {
      setState({ list: null, error: 'Write a title first: the suggestions start from it.', busy: false, applied: '' });
      return;
    }
    setState({ list: null, error: null, busy: true, applied: '' });
    try {
      const body = { title: v.title, message: v.body || '' };
      if (v.url) body.url = v.url;
      const a = await call('POST', '/ai/suggest', body);
      setState({ list: a.suggestions, error: null, busy: false, applied: '' });
    } catch (err) {
      setState({ list: null, error: err, busy: false, applied: '' });
    }
  };
  return html`<section class="suggestions" aria-labelledby="suggest-title">
    <h2 id="suggest-title" class="visually-hidden">Copy suggestions</h2>
    <div class="actions"><button type="button" class="secondary" onClick=${ask} disabled=${state.busy}>Suggest</button>
      ${state.busy && html`<span role="status">Thinking of suggestions…</span>`}</div>
    <${Alert} error=${state.error} what="No suggestions" />
    ${state.list && html`<ol aria-label="Suggestions">
      ${state.list.map((s, i) => html`<li>
        <p><strong>${s.title}</strong></p>
        ${s.message && html`<p>${s.message}</p>`}
        <p class="hint">${s.why}</p>
        <button type="button" class="secondary" aria-label=${'Use suggestion ' + (i + 1)}
          onClick=${() => { apply(s); setState({ ...state, applied: 'Suggestion ' + (i + 1) + ' applied.' }); }}>Use this</button>
      </li>`)}
    </ol>`}
    ${state.applied && html`<p role="status">${state.applied}</p>`}
  </section>`;
}
