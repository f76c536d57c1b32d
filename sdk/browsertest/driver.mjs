// Drives Debian's Chromium for the Go browser test (server/browser_test.go),
// which holds the test's logic: this reads one JSON command a line on stdin,
// {id, cmd, args}, and answers each with one line on stdout, {id, value} or
// {id, error}. Logs go to stderr.
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

let browser, context, page, cdp;
const registrations = new Map(); // registrationId -> {registrationId, scopeURL}

// stubPush runs in the page before its scripts. Headless Chromium cannot
// reach a push service, so PushManager.subscribe and getSubscription return
// a subscription to the Go test's fake push service, with the keys the test
// holds. window.__replaceSubscription(s) stands for the push service
// renewing it: getSubscription returns s from then on. Nothing else is
// stubbed.
function stubPush(s) {
  let current = null;
  const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  const subscription = (s, key) => ({
    endpoint: s.endpoint,
    expirationTime: null,
    options: { userVisibleOnly: true, applicationServerKey: key },
    toJSON: () => ({ endpoint: s.endpoint, expirationTime: null, keys: { p256dh: s.p256dh, auth: s.auth } }),
    unsubscribe: async () => { current = null; window.__unsubscribed = true; return true; },
  });
  PushManager.prototype.subscribe = async function (options) {
    const key = new Uint8Array(options.applicationServerKey).slice().buffer;
    window.__subscribedWith = { userVisibleOnly: options.userVisibleOnly, applicationServerKey: b64(key) };
    // A test that learns its subscription after launch sets it here.
    current = subscription(window.__rbSubscription || s, key);
    return current;
  };
  PushManager.prototype.getSubscription = async function () { return current; };
  window.__replaceSubscription = (next) => { current = subscription(next, current.options.applicationServerKey); };
}

// stubAsk stands for the browser's permission question when a test
// launches with permission 'default': Notification.permission is what the
// visitor answered last (kept across page loads in localStorage),
// requestPermission answers window.__rbAnswer ('granted' unless set) and
// records each question asked while the answer was open, with whether the
// page had a user gesture then (navigator.userActivation.isActive).
function stubAsk() {
  const key = '__rbPermission';
  const read = () => { try { return localStorage.getItem(key) || 'default'; } catch (e) { return 'default'; } };
  window.__rbAsks = [];
  Object.defineProperty(Notification, 'permission', { configurable: true, get: read });
  Notification.requestPermission = async function () {
    if (read() !== 'default') {
      return read();
    }
    window.__rbAsks.push({ gesture: navigator.userActivation ? navigator.userActivation.isActive : null });
    const answer = window.__rbAnswer || 'granted';
    if (answer !== 'default') {
      localStorage.setItem(key, answer);
    }
    return answer;
  };
}

async function serviceWorker() {
  const live = context.serviceWorkers();
  return live.length ? live[live.length - 1] : context.waitForEvent('serviceworker', { timeout: 10000 });
}

const commands = {
  async launch({ executablePath, origin, locale, timezoneId, subscription, permission, userAgent }) {
    browser = await chromium.launch({
      executablePath,
      headless: true,
      // As root Chromium needs --no-sandbox; the rest keep it off the
      // network this machine does not have.
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    context = await browser.newContext({ locale, timezoneId, ...(userAgent ? { userAgent } : {}) });
    if (permission === 'default') {
      await context.addInitScript(stubAsk);
    } else {
      await context.grantPermissions(['notifications'], { origin });
    }
    await context.addInitScript(stubPush, subscription);
    page = await context.newPage();
    page.on('console', (m) => console.error('page console:', m.text()));
    page.on('pageerror', (e) => console.error('page error:', e.message));
    page.on('dialog', (d) => d.accept()); // confirm() answers yes
    cdp = await context.newCDPSession(page);
    cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => {
      for (const r of e.registrations) {
        registrations.set(r.registrationId, r);
      }
    });
    await cdp.send('ServiceWorker.enable');
    return browser.version();
  },
  async goto({ url }) {
    await page.goto(url);
  },
  // page and worker evaluate a JavaScript expression and await its value.
  async page({ expr }) {
    return page.evaluate(expr);
  },
  async worker({ expr }) {
    return (await serviceWorker()).evaluate(expr);
  },
  async cdp({ method, params }) {
    return cdp.send(method, params);
  },
  // role acts on the control with that ARIA role and accessible name
  // (label: by its label instead, for password fields, which have no
  // role): fill, click, select, or read its value, text, description (the
  // text of its aria-describedby) or whether it is visible.
  async role({ role, label, name, action, value }) {
    const el = label !== undefined ? page.getByLabel(label, { exact: true })
      : page.getByRole(role, name == null ? {} : { name, exact: true });
    switch (action) {
      case 'fill': return el.fill(value);
      case 'click': return el.click();
      case 'select': return el.selectOption(value);
      case 'value': return el.inputValue();
      case 'text': return el.textContent();
      case 'count': return String(await el.count());
      case 'href': return el.getAttribute('href');
      case 'upload': return el.setInputFiles({ name: value.name, mimeType: value.mimeType || 'text/csv',
        buffer: value.base64 !== undefined ? Buffer.from(value.base64, 'base64') : Buffer.from(value.text, 'utf8') });
      case 'wait': return el.waitFor({ timeout: 10000 });
      case 'description': return el.evaluate((e) => (e.getAttribute('aria-describedby') || '').split(' ')
        .map((id) => document.getElementById(id)?.textContent || '').join(' ').trim());
      case 'invalid': return el.getAttribute('aria-invalid');
    }
    throw new Error('unknown action ' + action);
  },
  // keyboard presses keys ({press: 'Tab'}) and types text ({type: 'x'}),
  // in order, as a person at the keyboard does; it answers what has the
  // focus then (its accessible label or text).
  async keyboard({ steps }) {
    for (const st of steps) {
      if (st.press) await page.keyboard.press(st.press);
      if (st.type) await page.keyboard.type(st.type);
    }
    return page.evaluate(() => {
      const e = document.activeElement;
      return e ? (e.labels && e.labels[0] ? e.labels[0].textContent : e.getAttribute('aria-label') || e.textContent || '').trim() : '';
    });
  },
  // viewport sets the page's size and colour scheme; screenshot also saves
  // the page as a PNG.
  async viewport({ width, height, dark }) {
    await page.setViewportSize({ width, height });
    await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
  },
  async screenshot({ path, width, height, dark }) {
    await commands.viewport({ width, height, dark });
    await page.screenshot({ path, fullPage: true });
  },
  // clock installs Playwright's fake clock on the context at time (ms
  // since the epoch): timers and Date move only when told, so a test of
  // a delay waits for nothing and a slow machine changes nothing.
  async clock({ time }) {
    await context.clock.install({ time });
  },
  // tick moves the fake clock on by ms, firing the timers due.
  async tick({ ms }) {
    await page.clock.runFor(ms);
  },
  // jump sets the fake clock's time (ms since the epoch) without firing
  // timers in between, as days passing between two visits.
  async jump({ time }) {
    await page.clock.setSystemTime(time);
  },
  // media emulates media features ({reducedMotion: 'reduce'}).
  async media(features) {
    await page.emulateMedia(features);
  },
  async headers({ url }) {
    const res = await page.goto(url);
    return res.headers();
  },
  async registrations() {
    return [...registrations.values()];
  },
  async close() {
    await browser?.close();
    browser = null;
  },
};

const lines = createInterface({ input: process.stdin });
lines.on('line', async (line) => {
  const { id, cmd, args } = JSON.parse(line);
  let answer;
  try {
    if (!commands[cmd]) {
      throw new Error('unknown command ' + cmd);
    }
    answer = { id, value: (await commands[cmd](args || {})) ?? null };
  } catch (e) {
    answer = { id, error: String(e && e.stack || e) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
});
lines.on('close', async () => {
  await browser?.close();
  process.exit(0);
});
