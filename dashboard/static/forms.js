// Forms: every control labelled, every API error next to its field.
import { html, useState } from './vendor/preact-htm.module.js';
import { call, ApiError } from './api.js';
import { go } from './router.js';

// fieldOf is the form field an error code concerns ('form' for the whole).
const fieldOf = {
  invalid_email: 'email', invalid_password: 'password', invalid_name: 'name', wrong_password: 'password',
  invalid_token: 'token', invalid_url: 'url', name_required: 'name', invalid_tz: 'timezone',
};

export function errorsOf(e) {
  if (e instanceof ApiError) {
    return { [fieldOf[e.code] || 'form']: e.message };
  }
  return { form: 'The server could not be reached. Try again.' };
}

// actions makes the handlers of a page's buttons that change something:
// act(method, path, body, ask) asks ask first (when given), makes the
// call, then runs done (the page reloads its data); an error goes to fail.
export function actions(done, fail) {
  return (method, path, body, ask) => async () => {
    if (ask && !window.confirm(ask)) return;
    try {
      await call(method, path, body);
      done();
    } catch (err) {
      fail(err);
    }
  };
}

// messageOf is an error as one sentence, for a page without fields.
export function messageOf(err) {
  return errorsOf(err).form || err.message;
}

export function Field({ id, label, type = 'text', value, onInput, error, autocomplete, required = true, hint }) {
  const described = [error ? id + '-error' : null, hint ? id + '-hint' : null].filter(Boolean).join(' ') || undefined;
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <input id=${id} name=${id} type=${type} value=${value} required=${required} autocomplete=${autocomplete}
      aria-invalid=${error ? 'true' : undefined} aria-describedby=${described}
      onInput=${(e) => onInput(e.currentTarget.value)} />
    ${hint && html`<p class="hint" id=${id + '-hint'}>${hint}</p>`}
    ${error && html`<p class="error" id=${id + '-error'}>${error}</p>`}
  </div>`;
}

// useForm holds a form's values, its errors and whether it is sending.
export function useForm(initial) {
  const [values, setValues] = useState(initial);
  const [errors, setErrors] = useState({});
  const [busy, setBusy] = useState(false);
  const set = (name) => (v) => {
    setValues((old) => ({ ...old, [name]: v }));
    setErrors((old) => (old[name] ? { ...old, [name]: undefined } : old));
  };
  const submit = (action, mapErr = errorsOf) => async (e) => {
    e.preventDefault();
    if (busy) {
      return;
    }
    setBusy(true);
    setErrors({});
    try {
      await action(values);
    } catch (err) {
      setErrors(mapErr(err));
    } finally {
      setBusy(false);
    }
  };
  return { values, errors, busy, set, submit, setErrors, setValues };
}

// Disclosure is a button that shows or hides what it names (a native
// details element has no role to find it by, nor a state to announce).
let disclosures = 0;
export function Disclosure({ label, open = false, className, children }) {
  const [shown, setShown] = useState(open);
  const [id] = useState(() => 'disclosure-' + ++disclosures);
  return html`<div class=${'disclosure ' + (className || '')}>
    <button type="button" class="link" aria-expanded=${shown ? 'true' : 'false'} aria-controls=${id} onClick=${() => setShown(!shown)}><span class="caret" aria-hidden="true">${shown ? '▾' : '▸'}</span>${label}</button>
    <div id=${id} hidden=${!shown}>${children}</div>
  </div>`;
}

// Alert shows a failure where the person is looking: error is an Error
// (in messageOf's words) or a sentence, what (when given) says what
// failed; nothing when there is no error.
export function Alert({ error, what }) {
  if (!error) return null;
  const message = typeof error === 'string' ? error : messageOf(error);
  return html`<p class="error" role="alert">${what ? what + ': ' + message : message}</p>`;
}

// selectField is form f's maker of select fields: select(id, label,
// options, {empty, none}) chooses member id among options ([value, label]
// pairs), with f's error for it; empty labels a first option of no value,
// and none is said when the options, loaded, are none.
export function selectField(f, loaded) {
  return (fid, label, options, extra = {}) => html`<div class="field"><label for=${fid}>${label}</label>
    <select id=${fid} value=${f.values[fid]} onChange=${(e) => f.set(fid)(e.currentTarget.value)} aria-invalid=${f.errors[fid] ? 'true' : undefined}
      aria-describedby=${f.errors[fid] ? fid + '-error' : undefined}>
      ${extra.empty && html`<option value="">${extra.empty}</option>`}
      ${options.map(([o, l]) => html`<option value=${o}>${l}</option>`)}</select>
    ${extra.none && loaded && options.length === 0 && html`<p class="hint">${extra.none}</p>`}
    ${f.errors[fid] && html`<p class="error" id=${fid + '-error'}>${f.errors[fid]}</p>`}</div>`;
}

// removeAndLeave is an editor's Delete: once the person confirms question,
// DELETE path, drop the editor's unsaved changes (guard, see useGuard) and
// go to page; a refusal shows in form f.
export async function removeAndLeave(f, guard, question, path, page) {
  if (!window.confirm(question)) return;
  try {
    await call('DELETE', path);
    guard.forget();
    go(page);
  } catch (err) {
    f.setErrors(errorsOf(err));
  }
}

// canonical is a JSON value as text with its members sorted: two bodies
// that say the same give the same text.
export const canonical = (x) => JSON.stringify(x, (_, v) => (v && typeof v === 'object' && !Array.isArray(v)
  ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v));

export function FormError({ errors }) {
  return errors.form ? html`<p class="error" role="alert">${errors.form}</p>` : null;
}

// Copy puts the value of the field source (an input or textarea) on the
// clipboard, with the Clipboard API or, where the page may not use it
// (plain http away from localhost), by selecting the text and the copy
// command; its status says whether it worked.
export function Copy({ source, label }) {
  const [said, setSaid] = useState('');
  const copy = async () => {
    const field = document.getElementById(source);
    try {
      await navigator.clipboard.writeText(field.value);
      setSaid('Copied');
    } catch (e) {
      field.select();
      setSaid(document.execCommand('copy') ? 'Copied' : 'Select the text and copy it with Ctrl+C or ⌘C.');
    }
  };
  return html`<span class="copy"><button type="button" class="secondary" onClick=${copy}>${label}</button>
    <span class="copied" aria-live="polite">${said}</span></span>`;
}
