// RelayBell service worker: shows the notifications RelayBell pushes and
// reports their delivery and clicks. A website runs it inside its own worker
// (served from its own origin, by default at /relaybell-sw.js):
//
//   importScripts('https://RELAYBELL/api/v1/projects/PROJECT_ID/sw.js');
//
// The push payload is JSON: {notificationId, endpointId, title, body, url,
// icon, image, badge, actions: [{action, title, url?, icon?}],
// requireInteraction, tag, variant}. Pushes without a notificationId are
// left to the website's own handlers.
//
// A notification is shown once: a push service may deliver a message again
// (a pusher that died after sending retries it), so the ids of the last
// notifications handled are kept in memory and in the Cache API.
//
// When the push service replaces the subscription (pushsubscriptionchange),
// the new one is registered with `replaces` naming the old endpoint and
// `replacesAuth` its auth secret (the proof that this browser held it), so
// that it keeps the browser's endpointId and subscriberId.
//
// self.relaybellHandleClick(data, action) is what a click does and
// self.relaybellResubscribe(oldSubscription, newSubscription) what a
// subscription change does; they are exposed so that tests, which can
// neither click a notification nor fire that event, can call them.
(function () {
  'use strict';
  const BASE = "__RELAYBELL_BASE__";
  const STATE = 'https://relaybell.invalid/state?base=' + encodeURIComponent(BASE);
  const SEEN = 'https://relaybell.invalid/seen/';
  const MAX_SEEN = 200;
  const recent = new Set(); // ids handled by this instance of the worker

  function post(path, body) {
    return fetch(BASE + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  }

  function ping(kind, data, action) {
    const body = { notificationId: data.notificationId, endpointId: data.endpointId };
    if (action) {
      body.action = action;
    }
    return post('/pings/' + kind, body).catch((e) => console.warn('RelayBell: ' + kind + ' ping:', e));
  }

  // seen reports whether the notification was already handled, by this
  // instance (checked before any await, so two copies of one push arriving
  // together cannot both pass) or by an earlier one (the cache).
  async function seen(id) {
    if (recent.has(id)) {
      return true;
    }
    recent.add(id);
    if (recent.size > MAX_SEEN) {
      recent.delete(recent.values().next().value);
    }
    try {
      return !!(await (await caches.open('relaybell')).match(SEEN + encodeURIComponent(id)));
    } catch (e) {
      return false;
    }
  }

  // remember records a shown notification, keeping the newest MAX_SEEN.
  async function remember(id) {
    try {
      const cache = await caches.open('relaybell');
      await cache.put(SEEN + encodeURIComponent(id), new Response(''));
      const old = (await cache.keys()).filter((r) => r.url.startsWith(SEEN));
      await Promise.all(old.slice(0, Math.max(0, old.length - MAX_SEEN)).map((r) => cache.delete(r)));
    } catch (e) {
      console.warn('RelayBell: recording a shown notification:', e);
    }
  }

  function show(p) {
    const urls = {};
    const actions = (Array.isArray(p.actions) ? p.actions : []).map((a, i) => {
      const button = { action: a.action || 'action' + (i + 1), title: a.title || '' };
      if (a.icon) {
        button.icon = a.icon;
      }
      if (a.url) {
        urls[button.action] = a.url;
      }
      return button;
    });
    const options = {
      body: p.body || '',
      actions,
      requireInteraction: !!p.requireInteraction,
      data: {
        notificationId: p.notificationId,
        endpointId: p.endpointId,
        url: p.url || '',
        actions: urls,
        variant: p.variant || null,
      },
    };
    for (const field of ['icon', 'image', 'badge', 'tag']) {
      if (p[field]) {
        options[field] = p[field];
      }
    }
    return self.registration.showNotification(p.title || '', options);
  }

  async function handlePush(p) {
    if (await seen(p.notificationId)) {
      return;
    }
    await show(p);
    await Promise.all([remember(p.notificationId), ping('delivered', p)]);
  }

  // focusOrOpen focuses a window already showing url, else opens one.
  async function focusOrOpen(url) {
    const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
    const open = windows.find((c) => c.url === url && 'focus' in c);
    return open ? open.focus() : self.clients.openWindow(url);
  }

  // handleClick opens the clicked action's URL (the notification's when the
  // body was clicked or the action has none) and sends the clicked ping.
  async function handleClick(data, action) {
    if (!data || !data.notificationId) {
      return;
    }
    const url = (action && data.actions && data.actions[action]) || data.url;
    let opening = null;
    if (/^https?:\/\//i.test(url || '')) {
      opening = focusOrOpen(url).catch((e) => console.warn('RelayBell: opening ' + url + ':', e));
    }
    await Promise.all([opening, ping('clicked', data, action)]);
  }
  self.relaybellHandleClick = handleClick;

  self.addEventListener('push', (event) => {
    let p = null;
    try {
      p = event.data && event.data.json();
    } catch (e) {
      return; // not JSON: not RelayBell's
    }
    if (p && p.notificationId) {
      event.waitUntil(handlePush(p));
    }
  });

  self.addEventListener('notificationclick', (event) => {
    const data = event.notification.data;
    if (!data || !data.notificationId) {
      return;
    }
    event.notification.close();
    event.waitUntil(handleClick(data, event.action));
  });

  // resubscribe registers the subscription that replaced oldSub (either may
  // be null: Chrome rarely gives them), subscribing again when none was
  // given. The old endpoint is the event's, else the one last registered.
  async function resubscribe(oldSub, newSub) {
    let sub = newSub;
    if (!sub) {
      const res = await fetch(BASE + '/config');
      const key = (await res.json()).vapidPublicKey.replace(/-/g, '+').replace(/_/g, '/');
      const raw = atob(key + '='.repeat((4 - key.length % 4) % 4));
      sub = await self.registration.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: Uint8Array.from(raw, (c) => c.charCodeAt(0)),
      });
    }
    const cache = await caches.open('relaybell');
    const saved = await cache.match(STATE);
    const st = saved ? await saved.json() : {};
    const keys = sub.toJSON().keys || {};
    const body = {
      endpoint: sub.endpoint,
      keys: { p256dh: keys.p256dh, auth: keys.auth },
      language: navigator.language,
      timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: navigator.userAgent,
    };
    // The replaced endpoint with its auth secret, which proves this browser
    // held it: the event's old subscription, else the one registered last.
    const oldKeys = (oldSub && oldSub.endpoint && oldSub.toJSON && oldSub.toJSON().keys) || {};
    const [replaces, replacesAuth] = oldKeys.auth ? [oldSub.endpoint, oldKeys.auth] : [st.endpoint, st.auth];
    if (replaces && replacesAuth && replaces !== sub.endpoint) {
      body.replaces = replaces;
      body.replacesAuth = replacesAuth;
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
    let res = await post('/subscriptions', body);
    if (res.status === 403 && st.externalId &&
      (await res.clone().json().catch(() => ({}))).error === 'invalid_external_id_hash') {
      // Identity verification refused the link and nothing was stored (a
      // removed secret's hash): forget the id, as the page does, and
      // register the renewed subscription without it.
      delete st.externalId;
      delete st.externalIdHash;
      delete body.externalId;
      delete body.externalIdHash;
      res = await post('/subscriptions', body);
    }
    if (!res.ok) {
      throw new Error('RelayBell: POST /subscriptions answered ' + res.status);
    }
    const ids = await res.json();
    Object.assign(st, ids, { endpoint: sub.endpoint, auth: keys.auth });
    if (st.externalId === null) {
      delete st.externalId;
    }
    await cache.put(STATE, new Response(JSON.stringify(st), { headers: { 'Content-Type': 'application/json' } }));
    return ids;
  }
  self.relaybellResubscribe = resubscribe;

  self.addEventListener('pushsubscriptionchange', (event) => {
    event.waitUntil(resubscribe(event.oldSubscription, event.newSubscription)
      .catch((e) => console.warn('RelayBell: subscribing again:', e)));
  });
})();
