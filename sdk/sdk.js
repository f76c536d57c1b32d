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
//   data-prompt  "auto" (default) asks for permission when the page loads;
//                "manual" waits for RelayBell.subscribe(), e.g. on a click
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
    if (!supported) {
      return out;
    }
    try {
      await worker();
      // Granted already: register again, which refreshes the page URL and
      // picks up a new subscription. Default: ask when the site said so.
      if (out.permission === 'granted' || (out.permission === 'default' && promptMode === 'auto')) {
        const ids = await subscribe();
        if (ids) {
          Object.assign(out, { subscribed: true }, ids);
        }
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
    return out;
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
