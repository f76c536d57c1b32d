// Importing people from a CSV file onto POST /subscribers/import.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { messageOf, Disclosure } from '../forms.js';
import { numbers } from '../format.js';

// parseCSV reads RFC 4180 text (quoted fields, doubled quotes, CRLF or LF)
// into rows of fields.
function parseCSV(text) {
  const rows = [];
  let row = [], field = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; }
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field); field = '';
      if (row.some((x) => x !== '')) rows.push(row);
      row = [];
    } else field += c;
  }
  row.push(field);
  if (row.some((x) => x !== '')) rows.push(row);
  return rows;
}

const importChunk = 10000; // rows of one import call (spec 8.2)

// Import maps a CSV file's columns onto POST /subscribers/import: one
// column is the external id, the ones picked become labels.
export function Import({ onDone }) {
  const [csv, setCsv] = useState(null); // {header, rows}
  const [idColumn, setIdColumn] = useState(0);
  const [labels, setLabels] = useState([]);
  const [topicsColumn, setTopicsColumn] = useState(-1);
  const [state, setState] = useState({});
  const read = async (e) => {
    const file = e.currentTarget.files[0];
    setState({});
    if (!file) return;
    let rows;
    try {
      rows = parseCSV(await file.text());
    } catch (err) {
      setState({ error: 'The file could not be read: ' + err.message });
      setCsv(null);
      return;
    }
    if (rows.length < 2) {
      setState({ error: 'The file needs a header line and at least one row.' });
      setCsv(null);
      return;
    }
    const header = rows[0].map((h) => h.trim());
    const guess = header.findIndex((h) => /^(external_?id|user_?id|id)$/i.test(h));
    setCsv({ header, rows: rows.slice(1) });
    setIdColumn(guess >= 0 ? guess : 0);
    setTopicsColumn(header.findIndex((h) => /^topics?$/i.test(h)));
    setLabels([]);
  };
  const run = async () => {
    const people = csv.rows.map((r) => {
      const p = { externalId: (r[idColumn] || '').trim() };
      if (labels.length) {
        p.tags = {};
        for (const i of labels) p.tags[csv.header[i]] = r[i] === undefined ? null : r[i];
      }
      const topics = topicsColumn >= 0 ? (r[topicsColumn] || '').split(/[|;]/).map((x) => x.trim()).filter(Boolean) : [];
      if (topics.length) p.topics = topics;
      return p;
    }).filter((p) => p.externalId);
    setState({ busy: true });
    let processed = 0;
    try {
      for (let i = 0; i < people.length; i += importChunk) {
        const a = await call('POST', '/subscribers/import', { subscribers: people.slice(i, i + importChunk) });
        processed += a.processed;
        setState({ busy: true, progress: processed + ' of ' + people.length });
      }
      setState({ done: 'Imported ' + numbers.format(processed) + (processed === 1 ? ' person.' : ' people.') });
      onDone();
    } catch (err) {
      setState({ error: messageOf(err) });
    }
  };
  return html`<${Disclosure} className="import" label="Import people from a CSV file">
    <div class="field"><label for="import-file">CSV file</label>
      <input id="import-file" type="file" accept=".csv,text/csv" onChange=${read} /></div>
    ${csv && html`<div class="field"><label for="import-id">External id column</label>
      <select id="import-id" value=${String(idColumn)} onChange=${(e) => setIdColumn(Number(e.currentTarget.value))}>
        ${csv.header.map((h, i) => html`<option value=${String(i)}>${h}</option>`)}</select></div>
      <div class="field"><label for="import-topics">Topics column</label>
        <select id="import-topics" value=${String(topicsColumn)} onChange=${(e) => setTopicsColumn(Number(e.currentTarget.value))} aria-describedby="import-topics-hint">
          <option value="-1">None</option>
          ${csv.header.map((h, i) => i !== idColumn && html`<option value=${String(i)}>${h}</option>`)}</select>
        <p class="hint" id="import-topics-hint">Topic slugs the person opts in to, separated by | or ;.</p></div>
      <fieldset><legend>Columns to keep as labels</legend>
        ${csv.header.map((h, i) => i !== idColumn && i !== topicsColumn && html`<label class="choice"><input type="checkbox" checked=${labels.includes(i)}
          onChange=${() => setLabels(labels.includes(i) ? labels.filter((x) => x !== i) : [...labels, i])} /> ${h}</label>`)}
      </fieldset>
      <p>${numbers.format(csv.rows.length)} rows; people are created or enriched by external id, and their browsers join when they subscribe.</p>
      <button type="button" onClick=${run} disabled=${state.busy}>Import</button>`}
    ${state.progress && html`<p role="status">${state.progress}</p>`}
    ${state.done && html`<p role="status">${state.done}</p>`}
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
  <//>`;
}
