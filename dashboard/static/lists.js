// Lists: loading what a page shows, and tables of counts.
import { html } from './vendor/preact-htm.module.js';
import { numbers } from './format.js';

// Breakdown is a table of a send's counts by one dimension, with bars of
// its first count drawn against the largest.
export function Breakdown({ title, rows, columns }) {
  const measure = columns[1][0];
  const top = Math.max(1, ...rows.map((r) => r[measure]));
  return html`<h2>${title}</h2>
    ${rows.length === 0 ? html`<p>None yet.</p>` : html`<div class="scroll"><table class="breakdown">
      <caption class="visually-hidden">${title}</caption>
      <thead><tr>${columns.map((c) => html`<th scope="col">${c[1]}</th>`)}<th scope="col"><span class="visually-hidden">${columns[1][1] + ' chart'}</span></th></tr></thead>
      <tbody>${rows.map((r) => html`<tr>${columns.map((c) => html`<td class=${typeof r[c[0]] === 'number' ? 'num' : undefined}>
        ${typeof r[c[0]] === 'number' ? numbers.format(r[c[0]]) : r[c[0]]}</td>`)}
        <td class="bar-cell" aria-hidden="true"><span class="bar" style=${{ width: Math.round(100 * r[measure] / top) + '%' }}></span></td></tr>`)}</tbody>
    </table></div>`}`;
}
