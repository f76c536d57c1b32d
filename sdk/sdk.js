// RelayBell browser SDK. A website adds it with one tag:
//
//   <script src="https://RELAYBELL/api/v1/projects/PROJECT_ID/sdk.js" async></script>
//
// and serves a service worker from its own origin (by default at
// /relaybell-sw.js) holding one line:
//
//   importScripts('https://RELAYBELL/api/v1/projects/PROJECT_ID/sw.js');
//
// Attributes of the script tag:
//   data-worker  path of that worker (default "/relaybell-sw.js")
//   data-prompt  "auto" (default) follows the website's prompt (GET /config:
//                a native request after the visitor's first gesture, a
//                soft prompt, or a bell, when and where it says), or asks
//                when the page loads when the website has no prompt on;
//                "manual" waits for RelayBell.subscribe(), e.g. on a click
//
// On every page view it also shows the on-site messages that apply to the
// page (GET /onsite, kept a minute), by their frequency, and counts what it
// showed and what the visitor did (POST /pings/onsite).
//
// window.RelayBell:
//   ready              promise of {supported, permission, subscribed,
//                      subscriberId, endpointId, error} once the page load's
//                      work is done
//   subscribe()        asks for permission, subscribes and registers;
//                      resolves to {subscriberId, endpointId}, or null when
//                      the visitor said no
//   login(externalId, hash)
//                      links this browser to the website's own user id;
//                      hash is the id's HMAC from the website's server when
//                      it verifies identities (externalIdHash), else omitted
//   logout()           unlinks it: the browser goes on as a new anonymous
//                      subscriber (no external id, tags or topics) and the
//                      user keeps their other browsers, tags and topics
//   setTopics(slugs)   makes these topics (by slug) the subscriber's whole
//                      set of opt-ins; [] opts out of every topic
//   track(name, properties)
//                      records an event of this browser's subscriber (e.g.
//                      'purchase' with {value}); properties is optional;
//                      resolves to the answer ({ok, eventId, subscriberId,
//                      isConversion, attribution, ...}), or to null, sending
//                      nothing, when the browser is not registered
//   unsubscribe()      turns notifications off
//   topics()           the website's topics, [{name, slug}]
//
// login, logout and setTopics save their change and, when the browser is
// subscribed, register again and resolve to {subscriberId, endpointId}
// (else to null; the change goes with the next registration). A login
// the website's identity verification refuses (403
// invalid_external_id_hash) is forgotten: the browser registers again
// without it, staying as it was (anonymous unless linked before), and the
// call rejects with an Error whose code is the error's (ready reports it in
// error). Once
// setTopics was called, every registration carries the topics, so the set
// made in this browser is the subscriber's, even after other changes. A
// subscription that differs from the one registered last (renewed by the
// push service) is registered with replaces and the old one's auth secret
// (replacesAuth), and keeps the endpoint's ids.
(function () {
  'use strict';
  if (window.RelayBell) {
    return; // loaded twice
  }
  const BASE = "__RELAYBELL_BASE__";
  const STATE = 'https://relaybell.invalid/state?base=' + encodeURIComponent(BASE);
  const script = document.currentScript;
  const attr = (name, def) => (script && script.getAttribute('data-' + name)) || def;
  const workerPath = attr('worker', '/relaybell-sw.js');
  const promptMode = attr('prompt', 'auto');
  const supported = 'serviceWorker' in navigator && 'PushManager' in window &&
    'Notification' in window && 'caches' in window;

  async function call(method, path, body) {
    const init = { method };
    if (body !== undefined) {
      init.headers = { 'Content-Type': 'application/json' };
      init.body = JSON.stringify(body);
    }
    const res = await fetch(BASE + path, init);
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      const err = new Error('RelayBell: ' + method + ' ' + path + ' answered ' + res.status +
        (body.error ? ' ' + body.error + (body.message ? ': ' + body.message : '') : ''));
      err.status = res.status;
      err.code = body.error;
      throw err;
    }
    return res.status === 204 ? null : res.json();
  }

  let config = null;
  function getConfig() {
    if (!config) {
      config = call('GET', '/config').catch((e) => { config = null; throw e; });
    }
    return config;
  }

  // The state ({externalId, externalIdHash, topics, subscriberId,
  // endpointId, endpoint, auth}) lives in the Cache API, which the worker
  // reads too. externalId null is a logout not registered yet; topics, once
  // set, is an array.
  async function loadState() {
    try {
      const res = await (await caches.open('relaybell')).match(STATE);
      return res ? await res.json() : {};
    } catch (e) {
      return {};
    }
  }

  async function saveState(st) {
    const cache = await caches.open('relaybell');
    await cache.put(STATE, new Response(JSON.stringify(st), { headers: { 'Content-Type': 'application/json' } }));
  }

  function decodeKey(b64url) {
    const b64 = b64url.replace(/-/g, '+').replace(/_/g, '/');
    const raw = atob(b64 + '='.repeat((4 - b64.length % 4) % 4));
    return Uint8Array.from(raw, (c) => c.charCodeAt(0));
  }

  function sameKey(buf, key) {
    if (!buf) {
      return false;
    }
    const a = new Uint8Array(buf);
    return a.length === key.length && a.every((v, i) => v === key[i]);
  }

  let registration = null;
  function worker() {
    if (!registration) {
      registration = navigator.serviceWorker.register(workerPath)
        .then(() => navigator.serviceWorker.ready)
        .catch((e) => { registration = null; throw e; });
    }
    return registration;
  }

  // pushSubscription returns the browser's subscription for the website's
  // VAPID key, subscribing anew when there is none or the key changed.
  async function pushSubscription() {
    const reg = await worker();
    const key = decodeKey((await getConfig()).vapidPublicKey);
    let sub = await reg.pushManager.getSubscription();
    if (sub && !sameKey(sub.options && sub.options.applicationServerKey, key)) {
      await sub.unsubscribe();
      sub = null;
    }
    return sub || reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  }

  // current is the subscription when the visitor already allowed
  // notifications, else null; it never prompts.
  async function current() {
    if (!supported || Notification.permission !== 'granted') {
      return null;
    }
    return (await worker()).pushManager.getSubscription();
  }

  async function register(sub, st) {
    const keys = sub.toJSON().keys || {};
    const body = {
      endpoint: sub.endpoint,
      keys: { p256dh: keys.p256dh, auth: keys.auth },
      language: navigator.language,
      timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: navigator.userAgent,
      url: location.href,
    };
    // A subscription the push service renewed without the worker hearing
    // of it takes the place of the one registered last.
    // Its auth secret proves this browser held it.
    if (st.endpoint && st.endpoint !== sub.endpoint && st.auth) {
      body.replaces = st.endpoint;
      body.replacesAuth = st.auth;
    }
    if (st.externalId || st.externalId === null) {
      body.externalId = st.externalId;
    }
    if (st.externalId && st.externalIdHash) {
      body.externalIdHash = st.externalIdHash;
    }
    if (Array.isArray(st.topics)) {
      body.topics = st.topics;
    }
    let ids;
    let refused = null;
    try {
      ids = await call('POST', '/subscriptions', body);
    } catch (e) {
      if (e.code !== 'invalid_external_id_hash' || !st.externalId) {
        throw e;
      }
      // Identity verification refused the link, and nothing was stored:
      // forget the id, so that later registrations are not refused too,
      // and register the browser without it.
      refused = e;
      delete st.externalId;
      delete st.externalIdHash;
      delete body.externalId;
      delete body.externalIdHash;
      ids = await call('POST', '/subscriptions', body);
    }
    st.subscriberId = ids.subscriberId;
    st.endpointId = ids.endpointId;
    st.endpoint = sub.endpoint;
    st.auth = keys.auth;
    if (st.externalId === null) {
      delete st.externalId; // the logout is done
    }
    await saveState(st);
    if (refused) {
      refused.subscriberId = ids.subscriberId;
      refused.endpointId = ids.endpointId;
      throw refused;
    }
    return ids;
  }

  async function subscribe() {
    if (!supported) {
      throw new Error('RelayBell: this browser cannot receive push notifications');
    }
    if (await Notification.requestPermission() !== 'granted') {
      return null;
    }
    return register(await pushSubscription(), await loadState());
  }

  // update changes the saved state and registers again when subscribed.
  async function update(change) {
    const st = await loadState();
    change(st);
    await saveState(st);
    const sub = await current();
    return sub ? register(sub, st) : null;
  }

  async function unsubscribe() {
    const sub = await current();
    if (!sub) {
      return;
    }
    try {
      await call('DELETE', '/subscriptions', { endpoint: sub.endpoint });
    } finally {
      await sub.unsubscribe();
      // The endpoint is gone: track() has nothing to prove, and the next
      // subscription replaces nothing.
      const st = await loadState();
      delete st.endpointId;
      delete st.endpoint;
      delete st.auth;
      await saveState(st);
    }
  }

  // track posts an event of the browser's own: the endpoint registered
  // last and its auth secret prove it is this browser's.
  async function track(name, properties) {
    if (!supported) {
      return null;
    }
    const st = await loadState();
    if (!st.endpointId || !st.auth) {
      return null;
    }
    const body = { endpointId: st.endpointId, auth: st.auth, event: name };
    if (properties !== undefined) {
      body.properties = properties;
    }
    return call('POST', '/events', body);
  }

  async function start() {
    const out = { supported, permission: supported ? Notification.permission : 'denied', subscribed: false };
    LS.set('views', String(Number(LS.get('views') || 0) + 1));
    // The website's prompt (GET /config) decides when to ask; without one
    // the page load asks, as before. data-prompt="manual" asks only
    // through RelayBell.subscribe().
    let prompt = null;
    if (promptMode === 'auto') {
      prompt = await getConfig().then((c) => c.prompt || null, () => null);
    }
    if (!supported) {
      if (prompt) {
        runPrompt(prompt).catch((e) => console.warn(e));
      }
      onsite(out);
      return out;
    }
    try {
      await worker();
      // Granted already: register again, which refreshes the page URL and
      // picks up a new subscription. Default: ask when the site said so.
      if (out.permission === 'granted' || (out.permission === 'default' && promptMode === 'auto' && !prompt)) {
        const ids = await subscribe();
        if (ids) {
          Object.assign(out, { subscribed: true }, ids);
        }
      } else if (out.permission === 'default' && prompt) {
        runPrompt(prompt).catch((e) => console.warn(e));
      }
    } catch (e) {
      out.error = String(e);
      if (e.endpointId) {
        // Registered, but without the external id identity verification refused.
        Object.assign(out, { subscribed: true, subscriberId: e.subscriberId, endpointId: e.endpointId });
      }
      console.warn(e);
    }
    out.permission = Notification.permission;
    onsite(out);
    return out;
  }

  // ---- On the website itself (issue 36): the prompt and on-site messages.
  //
  // Both are drawn in a shadow root on a host element of their own, whose
  // inline !important styles and the shadow root's own sheet keep the
  // page's CSS out (and theirs in). They hold text only: every string
  // from the settings goes in through textContent, never as markup. A
  // dialog takes the focus when it shows, keeps Tab inside while modal,
  // and closes on Escape; nothing moves under prefers-reduced-motion.
  const LS = {
    get(k) { try { return localStorage.getItem('relaybell:' + k); } catch (e) { return null; } },
    set(k, v) { try { localStorage.setItem('relaybell:' + k, v); } catch (e) { /* private mode */ } },
  };
  const SS = {
    get(k) { try { return sessionStorage.getItem('relaybell:' + k); } catch (e) { return null; } },
    set(k, v) { try { sessionStorage.setItem('relaybell:' + k, v); } catch (e) { /* private mode */ } },
  };

  const CSS = `
:host { all: initial !important; }
* { box-sizing: border-box; }
.rb { position: fixed; z-index: 2147483647; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: #1d2430; background: #fff; border: 1px solid #d6dbe3; box-shadow: 0 8px 28px rgba(20, 30, 50, .22);
  padding: 16px; display: flex; flex-direction: column; gap: 10px; text-align: left; }
.rb.slide-down { top: 0; left: 50%; transform: translateX(-50%); width: min(440px, 100vw); border-radius: 0 0 12px 12px;
  animation: rb-down .25s ease-out; }
.rb.modal { top: 50%; left: 50%; transform: translate(-50%, -50%); width: min(420px, calc(100vw - 24px)); border-radius: 12px;
  animation: rb-fade .2s ease-out; }
.rb.banner { top: 0; left: 0; right: 0; flex-direction: row; align-items: center; flex-wrap: wrap; border-radius: 0;
  animation: rb-down .25s ease-out; }
.rb.slide-in { bottom: 16px; right: 16px; width: min(360px, calc(100vw - 32px)); border-radius: 12px; animation: rb-up .25s ease-out; }
.backdrop { position: fixed; inset: 0; z-index: 2147483646; background: rgba(10, 15, 25, .45); }
.title { font-weight: 650; font-size: 16px; margin: 0; }
.text { margin: 0; white-space: pre-line; }
.banner .body { flex: 1 1 240px; }
.image { max-width: 100%; max-height: 180px; object-fit: cover; border-radius: 8px; }
.logo { width: 40px; height: 40px; object-fit: contain; border-radius: 8px; }
.buttons { display: flex; gap: 8px; justify-content: flex-end; flex-wrap: wrap; }
button { font: inherit; cursor: pointer; border-radius: 8px; padding: 8px 14px; border: 1px solid #b9c1cf; background: #fff; color: #1d2430; }
button.primary { background: #2357d9; border-color: #2357d9; color: #fff; }
button:focus-visible { outline: 3px solid #f0a020; outline-offset: 2px; }
.bell { position: fixed; z-index: 2147483647; bottom: 16px; left: 16px; width: 52px; height: 52px; border-radius: 50%;
  padding: 0; background: #2357d9; border: 0; color: #fff; display: grid; place-items: center; box-shadow: 0 6px 18px rgba(20, 30, 50, .3); }
.bell svg { width: 26px; height: 26px; fill: currentColor; }
@keyframes rb-down { from { opacity: 0; margin-top: -24px; } }
@keyframes rb-up { from { opacity: 0; margin-bottom: -24px; } }
@keyframes rb-fade { from { opacity: 0; } }
@media (prefers-reduced-motion: reduce) { .rb { animation: none !important; transition: none !important; } }
@media (prefers-color-scheme: dark) {
  .rb { background: #1d2330; color: #e8ecf3; border-color: #3a4456; }
  button { background: #1d2330; color: #e8ecf3; border-color: #4a5568; }
  button.primary { background: #5b8cff; border-color: #5b8cff; color: #0b1020; }
}`;

  // host makes the shadow host of one piece of UI: a custom element the
  // page's selectors do not name, styled inline with !important, which
  // beats any rule of the page's.
  function host(kind) {
    const el = document.createElement('relaybell-ui');
    el.setAttribute('data-relaybell', kind);
    const fixed = { display: 'block', position: 'static', width: '0', height: '0', margin: '0', padding: '0', border: '0',
      opacity: '1', visibility: 'visible', transform: 'none', filter: 'none', 'clip-path': 'none', contain: 'none', overflow: 'visible' };
    for (const [k, v] of Object.entries(fixed)) {
      el.style.setProperty(k, v, 'important');
    }
    const root = el.attachShadow({ mode: 'open' });
    try {
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(CSS);
      root.adoptedStyleSheets = [sheet];
    } catch (e) {
      const style = document.createElement('style');
      style.textContent = CSS;
      root.appendChild(style);
    }
    (document.body || document.documentElement).appendChild(el);
    return { el, root };
  }

  function make(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) {
      e.className = cls;
    }
    if (text !== undefined && text !== null) {
      e.textContent = String(text);
    }
    return e;
  }

  // dialog draws a box of kind (slide-down, modal, banner, slide-in) with
  // a title, a text, an image and buttons [{label, primary, run}], moves
  // the focus to its first button and closes on Escape (onEscape). It
  // returns close().
  let dialogs = 0;
  function dialog(kind, { title, text, image, logo, buttons, label, onEscape }) {
    const { el, root } = host(kind);
    const modal = kind === 'modal';
    const prevFocus = document.activeElement;
    if (modal) {
      root.appendChild(make('div', 'backdrop'));
    }
    const box = make('div', 'rb ' + kind);
    box.setAttribute('role', kind === 'banner' ? 'region' : 'dialog');
    const id = 'rb-title-' + (++dialogs);
    if (modal) {
      box.setAttribute('aria-modal', 'true');
    }
    const body = make('div', 'body');
    if (title) {
      const h = make('p', 'title', title);
      h.id = id;
      body.appendChild(h);
      box.setAttribute('aria-labelledby', id);
    } else {
      box.setAttribute('aria-label', label || 'Message');
    }
    if (text) {
      body.appendChild(make('p', 'text', text));
    }
    box.appendChild(body);
    if (logo) {
      const img = make('img', 'logo');
      img.alt = '';
      img.src = logo;
      box.insertBefore(img, body);
    }
    if (image) {
      const img = make('img', 'image');
      img.alt = '';
      img.src = image;
      box.insertBefore(img, body);
    }
    const row = make('div', 'buttons');
    const btns = buttons.map((b) => {
      const btn = make('button', b.primary ? 'primary' : '', b.label);
      btn.type = 'button';
      btn.addEventListener('click', () => b.run());
      row.appendChild(btn);
      return btn;
    });
    box.appendChild(row);
    root.appendChild(box);
    let closed = false;
    function onKey(e) {
      if (e.key === 'Escape') {
        e.preventDefault();
        onEscape();
      } else if (e.key === 'Tab' && modal && btns.length) {
        const first = btns[0];
        const last = btns[btns.length - 1];
        const at = root.activeElement;
        if (e.shiftKey && (at === first || !at)) {
          e.preventDefault();
          last.focus();
        } else if (!e.shiftKey && (at === last || !at)) {
          e.preventDefault();
          first.focus();
        }
      }
    }
    document.addEventListener('keydown', onKey, true);
    if (btns.length) {
      btns[0].focus();
    }
    return function close() {
      if (closed) {
        return;
      }
      closed = true;
      document.removeEventListener('keydown', onKey, true);
      el.remove();
      if (prevFocus && prevFocus.focus && document.contains(prevFocus)) {
        prevFocus.focus();
      }
    };
  }

  function ping(body) {
    return fetch(BASE + '/pings/onsite', {
      method: 'POST', keepalive: true, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    }).catch(() => null);
  }

  // URL patterns, as the server matches them (package onsite): * is any
  // run of characters; a pattern with a scheme is matched against the
  // whole URL, any other against the path and query.
  function patternMatch(p, href) {
    const full = /^https?:\/\//.test(p);
    let s = href;
    if (!full) {
      const u = new URL(href);
      s = u.pathname + u.search;
    }
    const parts = p.split('*');
    if (parts.length === 1) {
      return p === s;
    }
    const first = parts[0];
    const last = parts[parts.length - 1];
    if (s.length < first.length + last.length || !s.startsWith(first) || !s.endsWith(last)) {
      return false;
    }
    s = s.slice(first.length, s.length - last.length);
    for (const mid of parts.slice(1, -1)) {
      const i = s.indexOf(mid);
      if (i < 0) {
        return false;
      }
      s = s.slice(i + mid.length);
    }
    return true;
  }

  function pageChosen(include, exclude, href) {
    if (include.length && !include.some((p) => patternMatch(p, href))) {
      return false;
    }
    return !exclude.some((p) => patternMatch(p, href));
  }

  // iosOutsideApp: Safari on iOS, which allows web push only to a site
  // added to the home screen, and this page is not opened from there.
  function iosOutsideApp() {
    const ios = /iPad|iPhone|iPod/.test(navigator.userAgent) ||
      (navigator.platform === 'MacIntel' && navigator.maxTouchPoints > 1);
    const standalone = navigator.standalone === true ||
      (window.matchMedia && window.matchMedia('(display-mode: standalone)').matches);
    return ios && !standalone;
  }

  function promptTexts(p) {
    const langs = [navigator.language || '', (navigator.language || '').split('-')[0]];
    const t = Object.assign({}, p.texts);
    for (const l of langs) {
      const tr = p.translations && p.translations[l];
      if (tr) {
        for (const k of Object.keys(t)) {
          if (tr[k]) {
            t[k] = tr[k];
          }
        }
        break;
      }
    }
    return t;
  }

  const DAY = 86400000;

  // logoURL is the website's logo from /config, when it has one (an https
  // URL, or an object holding it as url): the prompt shows it.
  async function logoURL() {
    const cfg = await getConfig().catch(() => ({}));
    const logo = cfg.logo && (typeof cfg.logo === 'string' ? cfg.logo : cfg.logo.url);
    return typeof logo === 'string' && /^https:\/\//.test(logo) ? logo : '';
  }

  // due resolves once the prompt's conditions hold: the page views
  // (counted on load), the seconds on this page and the scroll depth.
  function due(when) {
    return new Promise((resolve) => {
      let timeOK = !(when.seconds > 0);
      let scrollOK = !(when.scrollPercent > 0);
      const check = () => {
        if (timeOK && scrollOK) {
          removeEventListener('scroll', onScroll);
          resolve();
        }
      };
      const depth = () => {
        const el = document.documentElement;
        const max = el.scrollHeight - innerHeight;
        return max <= 0 ? 100 : ((scrollY || el.scrollTop) / max) * 100;
      };
      const onScroll = () => {
        if (!scrollOK && depth() >= when.scrollPercent) {
          scrollOK = true;
          check();
        }
      };
      if (!timeOK) {
        setTimeout(() => { timeOK = true; check(); }, when.seconds * 1000);
      }
      if (!scrollOK) {
        addEventListener('scroll', onScroll, { passive: true });
        onScroll();
      }
      check();
    });
  }

  // runPrompt follows the website's prompt for a visitor not asked yet.
  async function runPrompt(p) {
    const href = location.href;
    if (!pageChosen(p.include || [], p.exclude || [], href)) {
      return;
    }
    const dismissed = Number(LS.get('dismissed') || 0);
    if (dismissed && Date.now() - dismissed < p.dismissDays * DAY) {
      return;
    }
    if (Number(LS.get('views') || 0) < (p.when.pageViews || 0)) {
      return;
    }
    const t = promptTexts(p);
    const logo = await logoURL();
    const counted = (event) => ping({ prompt: p.kind, event });
    const dismiss = (close) => {
      LS.set('dismissed', String(Date.now()));
      counted('dismiss');
      close();
    };
    if (p.kind === 'bell') {
      showBell(p, t, counted);
      return;
    }
    await due(p.when);
    if (iosOutsideApp()) {
      // The request cannot succeed here: say how to add the site to the
      // home screen instead.
      counted('impression');
      const close = dialog(p.style, { title: t.title, text: t.iosHint, label: t.title, logo,
        buttons: [{ label: t.dismiss, primary: true, run: () => dismiss(close) }], onEscape: () => dismiss(close) });
      return;
    }
    if (!supported || Notification.permission !== 'default') {
      return;
    }
    if (p.kind === 'native') {
      // Browsers hide or block a request made without a gesture: wait for
      // the visitor's first click or key press.
      const onGesture = async () => {
        removeEventListener('click', onGesture, true);
        removeEventListener('keydown', onGesture, true);
        counted('impression');
        const ids = await subscribe().catch(() => null);
        counted(ids ? 'accept' : 'dismiss');
        if (!ids) {
          LS.set('dismissed', String(Date.now()));
        }
      };
      addEventListener('click', onGesture, true);
      addEventListener('keydown', onGesture, true);
      return;
    }
    counted('impression');
    const close = dialog(p.style, {
      title: t.title, text: t.message, label: t.title, logo,
      buttons: [
        { label: t.accept, primary: true, run: async () => {
          close();
          const ids = await subscribe().catch(() => null);
          counted(ids ? 'accept' : 'dismiss');
          if (!ids) {
            LS.set('dismissed', String(Date.now()));
          }
          onsiteAgain();
        } },
        { label: t.dismiss, run: () => dismiss(close) },
      ],
      onEscape: () => dismiss(close),
    });
  }

  const BELL = 'M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22zm7-6V11a7 7 0 0 0-5.5-6.84V3.5a1.5 1.5 0 0 0-3 0v.66A7 7 0 0 0 5 11v5l-2 2v1h18v-1z';

  // showBell draws the bell: a button that asks (a gesture) and hides once
  // the visitor subscribed.
  function showBell(p, t, counted) {
    if (supported && Notification.permission === 'granted') {
      return;
    }
    const { el, root } = host('bell');
    const btn = make('button', 'bell');
    btn.type = 'button';
    btn.setAttribute('aria-label', t.title);
    btn.title = t.title;
    const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('aria-hidden', 'true');
    const path = document.createElementNS('http://www.w3.org/2000/svg', 'path');
    path.setAttribute('d', BELL);
    svg.appendChild(path);
    btn.appendChild(svg);
    root.appendChild(btn);
    counted('impression');
    btn.addEventListener('click', async () => {
      if (iosOutsideApp() || !supported) {
        const close = dialog(p.style, { title: t.title, text: t.iosHint, label: t.title,
          buttons: [{ label: t.dismiss, primary: true, run: () => close() }], onEscape: () => close() });
        return;
      }
      const ids = await subscribe().catch(() => null);
      counted(ids ? 'accept' : 'dismiss');
      if (ids) {
        el.remove();
        onsiteAgain();
      }
    });
  }

  // ---- On-site messages: the ones that apply to this page view, in one
  // request the browser keeps a minute (Cache-Control), shown by their
  // frequency: once per visitor, once per session, or every page view.
  const shown = new Set();

  async function onsite(state) {
    const q = '?url=' + encodeURIComponent(location.href) + (state.subscribed ? '&subscribed=1' : '') +
      (state.subscribed && state.subscriberId ? '&subscriberId=' + encodeURIComponent(state.subscriberId) : '');
    let list;
    try {
      list = (await call('GET', '/onsite' + q)).messages;
    } catch (e) {
      return;
    }
    for (const m of list) {
      if (shown.has(m.id) || (m.frequency === 'once' && LS.get('seen:' + m.id)) ||
        (m.frequency === 'session' && SS.get('seen:' + m.id))) {
        continue;
      }
      showMessage(m);
      return; // one at a time
    }
  }

  // onsiteAgain asks again once the visitor subscribed: messages for
  // subscribers may apply now.
  function onsiteAgain() {
    current().then((sub) => loadState().then((st) => onsite({ subscribed: !!sub, subscriberId: sub ? st.subscriberId : '' })));
  }

  function showMessage(m) {
    shown.add(m.id);
    LS.set('seen:' + m.id, '1');
    SS.set('seen:' + m.id, '1');
    const counted = (event) => ping({ messageId: m.id, event });
    counted('impression');
    const dismiss = () => { counted('dismiss'); close(); };
    const buttons = (m.buttons || []).map((b) => ({
      label: b.label,
      primary: b.action !== 'close',
      run: async () => {
        if (b.action === 'close') {
          dismiss();
          return;
        }
        counted('click');
        close();
        if (b.action === 'link' && /^https?:\/\//.test(b.url)) {
          location.href = b.url;
        } else if (b.action === 'subscribe') {
          await subscribe().catch(() => null);
        }
      },
    }));
    if (!buttons.length) {
      buttons.push({ label: '\u00d7', run: dismiss });
    }
    const close = dialog(m.kind, { title: m.title, text: m.text, image: m.image, buttons, label: m.title || m.text, onEscape: dismiss });
  }

  window.RelayBell = {
    ready: start(),
    subscribe,
    login: (externalId, hash) => update((st) => {
      st.externalId = String(externalId);
      if (hash === undefined || hash === null) {
        delete st.externalIdHash;
      } else {
        st.externalIdHash = String(hash);
      }
    }),
    logout: () => update((st) => {
      st.externalId = null;
      delete st.externalIdHash;
      delete st.topics; // the user's choice, not the anonymous browser's
    }),
    setTopics: (slugs) => update((st) => { st.topics = Array.from(slugs, String); }),
    track,
    unsubscribe,
    topics: async () => (await getConfig()).topics,
  };
})();
