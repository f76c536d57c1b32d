// The website's logo on the settings page (GET and PUT /logo): upload an
// image (POST /upload) or give an https address, with a preview of what
// notifications and the prompt show.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call, getProject } from '../api.js';
import { Alert, Field } from '../forms.js';
import { useLoad } from '../lists.js';

// upload sends the file as the raw body: the server tells the format by
// its bytes.
async function upload(file) {
  const headers = { 'X-RelayBell-CSRF': '1', 'Content-Type': 'application/octet-stream' };
  const project = getProject();
  if (project) headers['X-Project-Id'] = project;
  const res = await fetch('/api/v1/upload', { method: 'POST', headers, credentials: 'same-origin', body: file });
  const answer = await res.json().catch(() => null);
  if (!res.ok) {
    const err = new Error((answer && answer.message) || 'The server answered ' + res.status);
    err.code = answer && answer.error;
    throw err;
  }
  return answer;
}

export function Logo({ site, canChange }) {
  const logo = useLoad(() => call('GET', '/logo'), [site.projectId]);
  const [url, setUrl] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState('');
  const put = async (body, what) => {
    setError(null);
    setSaved('');
    setBusy(true);
    try {
      logo.set(await call('PUT', '/logo', body));
      setSaved(what);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const onFile = async (e) => {
    const file = e.currentTarget.files && e.currentTarget.files[0];
    e.currentTarget.value = '';
    if (!file) return;
    setError(null);
    setSaved('');
    setBusy(true);
    try {
      const u = await upload(file);
      logo.set(await call('PUT', '/logo', { uploadId: u.id }));
      setSaved('Logo uploaded.');
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const current = logo.data && logo.data.logo;
  return html`<section aria-labelledby="logo-title">
    <h2 id="logo-title">Logo</h2>
    <p class="hint">The icon of every notification that names none, and of the subscription prompt. PNG, JPEG, WebP or GIF up to 1 MB; it is cropped to a square of 192 pixels.</p>
    <${Alert} error=${error || logo.error} />
    ${logo.data && html`<div class="logo-preview">
      ${current ? html`<img src=${current.url} alt="Logo preview" width="96" height="96" />
        <p>${current.uploadId ? 'Uploaded image' : html`From <code>${current.url}</code>`}</p>`
        : html`<p class="empty">No logo yet: notifications without an icon show the default icon of the settings, or none.</p>`}
    </div>`}
    ${canChange && html`<div class="field"><label for="logo-file">Upload a logo</label>
        <input id="logo-file" type="file" accept="image/png,image/jpeg,image/webp,image/gif" onChange=${onFile} disabled=${busy} /></div>
      <form onSubmit=${(e) => { e.preventDefault(); put({ url: url.trim() }, 'Logo address saved.'); }} novalidate>
        <${Field} id="logo-url" label="Logo address" type="url" value=${url} onInput=${setUrl} required=${false} hint="An https address of an image on your own site." />
        <div class="actions"><button type="submit" disabled=${busy || !url.trim()}>Use this address</button>
          ${current && html`<button type="button" class="secondary" disabled=${busy} onClick=${() => put({ uploadId: null, url: null }, 'Logo removed.')}>Remove logo</button>`}</div>
      </form>`}
    ${saved && html`<p role="status">${saved}</p>`}
  </section>`;
}
