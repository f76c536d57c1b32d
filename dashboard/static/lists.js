// Lists: loading what a page shows, and tables of counts.
import { html, useState, useEffect, useRef } from './vendor/preact-htm.module.js';
import { numbers } from './format.js';

// useLoad loads what a page shows: fetcher(stale) (a promise) runs when
// deps change, and its answer is data. Only the latest request counts: an
// answer arriving after a newer request started (or after the page went)
// is dropped, so a slow answer to an earlier filter, page or website never
// shows under a later one; stale() tells a fetcher that waits before it
// calls that it need not. The data shown stays until the next answer
// (loading is true meanwhile); a failure is error (an Error), with no data.
// reload() asks again; more(fetch, merge) loads a further page into the
// data (merge(data, answer)); set(data) puts an answer the page got itself,
// such as a change's.
export function useLoad(fetcher, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const latest = useRef(0);
  const current = useRef(fetcher);
  current.current = fetcher; // reload() asks what the page asks now
  const run = (fetch, merge) => {
    const n = ++latest.current;
    const stale = () => n !== latest.current;
    setState((old) => ({ ...old, error: null, loading: true }));
    fetch(stale).then(
      (answer) => stale() || setState((old) => ({ data: merge(old.data, answer), error: null, loading: false })),
      (error) => stale() || setState({ data: null, error, loading: false }));
  };
  const replace = (_, answer) => answer;
  useEffect(() => {
    run(current.current, replace);
    return () => { latest.current++; };
  }, deps);
  return {
    ...state,
    reload: () => run(current.current, replace),
    more: (fetch, merge) => run(fetch, merge),
    set: (data) => {
      latest.current++;
      setState({ data, error: null, loading: false });
    },
  };
}

// pause resolves after ms milliseconds (a fetcher's wait for typing to
// settle).
export const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Breakdown is a table of a send's counts by one dimension, with bars of
// its first count drawn against the largest; empty says what fills it.
export function Breakdown({ title, rows, columns, empty = 'None yet.' }) {
  const measure = columns[1][0];
  const top = Math.max(1, ...rows.map((r) => r[measure]));
  return html`<h2>${title}</h2>
    ${rows.length === 0 ? html`<p class="empty">${empty}</p>` : html`<div class="scroll"><table class="breakdown">
      <caption class="visually-hidden">${title}</caption>
      <thead><tr>${columns.map((c) => html`<th scope="col">${c[1]}</th>`)}<th scope="col"><span class="visually-hidden">${columns[1][1] + ' chart'}</span></th></tr></thead>
      <tbody>${rows.map((r) => html`<tr>${columns.map((c) => html`<td class=${typeof r[c[0]] === 'number' ? 'num' : undefined}>
        ${typeof r[c[0]] === 'number' ? numbers.format(r[c[0]]) : html`<span class="cut" title=${r[c[0]]}>${r[c[0]]}</span>`}</td>`)}
        <td class="bar-cell" aria-hidden="true"><span class="bar" style=${{ width: Math.round(100 * r[measure] / top) + '%' }}></span></td></tr>`)}</tbody>
    </table></div>`}`;
}
