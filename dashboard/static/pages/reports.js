// Reports by mail (GET/PUT /reports, POST /reports/test): how often the
// website's report is mailed and to which people of the account, and a
// button that mails the signed-in person the last period's report now.
// A viewer sees the settings and may mail themselves a test report.
import { html, useState, useEffect } from '../vendor/preact-htm.module.js';
import { call } from '../api.js';
import { errorsOf, Alert, useForm, FormError } from '../forms.js';
import { useLoad } from '../lists.js';

const weekdays = [['mon', 'Monday'], ['tue', 'Tuesday'], ['wed', 'Wednesday'], ['thu', 'Thursday'], ['fri', 'Friday'], ['sat', 'Saturday'], ['sun', 'Sunday']];

function reportForm(r) {
  return {
    frequency: r.frequency, weekday: r.frequency === 'weekly' ? r.day : 'mon',
    monthday: String(r.frequency === 'monthly' ? r.day : 1), hour: String(r.hour), recipients: r.recipients.slice(),
  };
}

export function Reports({ site, canChange }) {
  const loaded = useLoad(() => Promise.all([call('GET', '/reports'), call('GET', '/members')]), [site.projectId]);
  const f = useForm(null);
  const [saved, setSaved] = useState(false);
  const [test, setTest] = useState(null); // { sent } or { error }
  useEffect(() => {
    if (loaded.data) f.setValues(reportForm(loaded.data[0]));
  }, [loaded.data]);
  if (!f.values) {
    return html`<section aria-labelledby="reports-title"><h2 id="reports-title">Reports by mail</h2><${Alert} error=${loaded.error} /></section>`;
  }
  const v = f.values;
  const people = loaded.data[1].members.map((m) => m.email.toLowerCase());
  for (const r of v.recipients) if (!people.includes(r)) people.push(r);
  const save = f.submit(async () => {
    setSaved(false);
    const body = { frequency: v.frequency, hour: Number(v.hour), recipients: v.recipients };
    if (v.frequency === 'weekly') body.day = v.weekday;
    if (v.frequency === 'monthly') body.day = Number(v.monthday);
    f.setValues(reportForm(await call('PUT', '/reports', body)));
    setSaved(true);
  }, errorsOf);
  const sendTest = async () => {
    setTest(null);
    try {
      const a = await call('POST', '/reports/test', { to: 'me' });
      setTest({ sent: a });
    } catch (err) {
      setTest({ error: err });
    }
  };
  const toggle = (addr) => (e) => f.set('recipients')(e.currentTarget.checked ? [...v.recipients, addr] : v.recipients.filter((x) => x !== addr));
  const select = (id, label, value, options) => html`<div class="field"><label for=${id}>${label}</label>
    <select id=${id} value=${value} onChange=${(e) => f.set(id)(e.currentTarget.value)}>
      ${options.map(([val, text]) => html`<option value=${val}>${text}</option>`)}</select></div>`;
  return html`<section aria-labelledby="reports-title">
    <h2 id="reports-title">Reports by mail</h2>
    <p class="hint">A summary of the period against the one before: subscribers, sends, clicks, conversions, the best and worst sends and delivery health, at the hour you choose in ${loaded.data[0].timezone}.</p>
    <form onSubmit=${save} novalidate>
      <fieldset disabled=${!canChange}>
        <legend class="visually-hidden">Report settings</legend>
        <${FormError} errors=${f.errors} />
        ${select('frequency', 'Report frequency', v.frequency, [['off', 'Off'], ['daily', 'Daily'], ['weekly', 'Weekly'], ['monthly', 'Monthly']])}
        ${v.frequency === 'weekly' && select('weekday', 'Day of the week', v.weekday, weekdays)}
        ${v.frequency === 'monthly' && select('monthday', 'Day of the month', v.monthday, Array.from({ length: 28 }, (_, i) => [String(i + 1), String(i + 1)]))}
        ${v.frequency !== 'off' && select('hour', 'Hour', v.hour, Array.from({ length: 24 }, (_, i) => [String(i), String(i).padStart(2, '0') + ':00']))}
        <fieldset><legend>Recipients</legend>
          ${people.map((addr) => html`<label class="choice"><input type="checkbox" checked=${v.recipients.includes(addr)} onChange=${toggle(addr)} /> ${addr}</label>`)}
        </fieldset>
        ${canChange && html`<div class="actions"><button type="submit" disabled=${f.busy}>Save report settings</button>
          ${saved && html`<span role="status">Saved.</span>`}</div>`}
      </fieldset>
    </form>
    <p><button type="button" class="secondary" onClick=${sendTest}>Send me a test report</button></p>
    ${test && test.sent && html`<p role="status">A test report of ${test.sent.from} to ${test.sent.to} is on its way to ${test.sent.recipients.join(', ')}.</p>`}
    ${test && test.error && html`<${Alert} error=${test.error} />`}
  </section>`;
}
