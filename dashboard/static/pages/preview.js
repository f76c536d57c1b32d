// The composer's previews, as browsers draw a notification.
import { html } from '../vendor/preact-htm.module.js';
import { fallbacks } from './budget.js';

// Preview shows a notification roughly as desktop Chrome, Android and
// macOS draw it; every value goes in as text (or as an image address).
// defaultIcon is what a send without an icon shows: the logo, else the
// settings' default icon.
export function Preview({ v, site, heading = 'Preview', id = 'preview', defaultIcon = '' }) {
  const url = fallbacks(v.url);
  const host = (() => { try { return new URL(url || site.url).host; } catch (e) { return site.url; } })();
  const icon = v.icon.trim() || defaultIcon || '';
  const image = v.image.trim();
  const title = fallbacks(v.title) || 'Title';
  const body = fallbacks(v.body);
  const buttons = v.actions.filter((a) => a.title.trim());
  const styles = [['chrome', 'Chrome on Windows'], ['android', 'Android'], ['macos', 'macOS']];
  return html`<section class="previews" aria-labelledby=${id + '-title'}>
    <h2 id=${id + '-title'}>${heading}</h2>
    ${styles.map(([style, label]) => html`<figure class=${'preview ' + style}>
      <figcaption>${label}</figcaption>
      <div class="toast" role="img" aria-label=${label + ' ' + heading.toLowerCase() + ': ' + title + (body ? ', ' + body : '')}>
        ${icon ? html`<img class="icon" src=${icon} alt="" />` : html`<span class="icon placeholder"></span>`}
        <div class="text">
          <p class="title">${title}</p>
          ${body && html`<p class="body">${body}</p>`}
          <p class="host">${style === 'macos' ? 'Chrome' : host}</p>
        </div>
        ${image && style !== 'macos' && html`<img class="image" src=${image} alt="" />`}
        ${style === 'android' && v.badge.trim() && html`<img class="badge" src=${v.badge.trim()} alt="" />`}
        ${buttons.length > 0 && style !== 'macos' && html`<div class="buttons">${buttons.map((a) => html`<span>${a.title}</span>`)}</div>`}
      </div>
    </figure>`)}
  </section>`;
}
