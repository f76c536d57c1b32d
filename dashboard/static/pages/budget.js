// The composer's measures: the push payload's size against what one push
// holds, and the characters each platform shows of a title and a message.
import { html } from '../vendor/preact-htm.module.js';
import { numbers } from '../format.js';

// maxPayload is the longest push payload in bytes: one 4,096-byte record
// of RFC 8291 less its 86-byte header, padding delimiter and 16-byte tag
// (the server's webpush.MaxPayloadSize; longer sends are refused with
// payload_too_large).
export const maxPayload = 3993;

// fallbacks is text as a subscriber without the tags' values gets it:
// every merge tag {name|fallback} becomes its fallback (spec 2.1).
export function fallbacks(text) {
  return text.replace(/\{([A-Za-z0-9_.:-]{1,64})(?:\|([^{}]*))?\}/g, (_, name, fallback) => fallback || '');
}

// wellFormed replaces lone surrogates with U+FFFD, as the server reads them.
const wellFormed = (s) => s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');

// jsonBytes is the length in bytes of value as the pusher encodes it (Go's
// encoding/json without HTML escaping: JSON.stringify's output, but for
// U+2028 and U+2029, which it escapes).
function jsonBytes(value) {
  const text = JSON.stringify(value, (_, x) => (typeof x === 'string' ? wellFormed(x) : x)).replace(/[\u2028\u2029]/g, (c) => '\\u' + c.charCodeAt(0).toString(16));
  return new TextEncoder().encode(text).length;
}

// queryEscape is Go's url.QueryEscape.
const queryEscape = (s) => encodeURIComponent(wellFormed(s)).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase()).replace(/%20/g, '+');

// addUTM adds the website's UTM tags to an http(s) link that lacks them,
// as the server does when it accepts a send.
function addUTM(link, utm) {
  if (!/^https?:\/\//.test(link)) return link;
  const hash = link.indexOf('#');
  const frag = hash >= 0 ? link.slice(hash) : '';
  let out = hash >= 0 ? link.slice(0, hash) : link;
  for (const [k, v] of [['utm_source', utm.source], ['utm_medium', utm.medium], ['utm_campaign', utm.campaign]]) {
    if (!v || out.includes(k + '=')) continue;
    out += (out.includes('?') ? '&' : '?') + k + '=' + queryEscape(v);
  }
  return out + frag;
}

// isHTTPURL reports whether s is an absolute http(s) link with a host.
export function isHTTPURL(s) {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.host !== '';
  } catch (e) {
    return false;
  }
}

const placeholderId = '00000000-0000-0000-0000-000000000000'; // the notification's and the browser's ids: 36 characters each

// payloadSize is the size in bytes of the longest push a send request r
// makes: each version (A, and B of an A/B test) in each language (the
// main texts and every translation), merge tags at their fallbacks, with
// the website's default link and icon and its UTM tags (settings, from
// GET /settings; the website's address and no tags while they load).
export function payloadSize(r, site, settings) {
  const s = settings || { defaultUrl: null, defaultIcon: null, utm: {} };
  const url = addUTM(r.url || s.defaultUrl || site.url, s.utm || {});
  const actions = (r.actions || []).slice(0, 2).map((a, i) => (isHTTPURL(a.url || '') ? { action: 'btn' + (i + 1), title: a.title, url: a.url }
    : { action: 'btn' + (i + 1), title: a.title }));
  const b = r.ab && r.ab.b;
  const variants = b && Object.keys(b).length ? ['a', 'b'] : [null];
  const languages = [null, ...Object.keys(r.translations || {}).filter((l) => l.length === 2)];
  let size = 0;
  for (const variant of variants) {
    for (const language of languages) {
      const p = { title: r.title, body: r.body || '', url, image: r.image || '' };
      if (variant === 'b') {
        if (b.title !== undefined) p.title = b.title;
        if (b.body !== undefined) p.body = b.body;
        if (b.url !== undefined) p.url = addUTM(b.url, s.utm || {});
        if (b.image !== undefined) p.image = b.image;
      }
      const t = language && r.translations[language];
      if (t && t.title) p.title = t.title;
      if (t && t.body) p.body = t.body;
      size = Math.max(size, jsonBytes({
        notificationId: placeholderId, endpointId: placeholderId, title: fallbacks(p.title), body: fallbacks(p.body), url: fallbacks(p.url),
        icon: r.icon || s.defaultIcon || '', image: p.image, badge: r.badge || '', actions, requireInteraction: !!r.requireInteraction,
        tag: r.tag || '', variant,
      }));
    }
  }
  return size;
}

// Budget tells, as it is typed, how much room the push has left.
export function Budget({ size }) {
  const left = maxPayload - size;
  return html`<p class=${'budget' + (left < 0 ? ' over' : '')} id="budget" aria-live="polite">${left >= 0
    ? 'Push size: ' + numbers.format(left) + (left === 1 ? ' byte left' : ' bytes left') + ' of ' + numbers.format(maxPayload) + '.'
    : 'Push size: ' + numbers.format(-left) + (left === -1 ? ' byte over' : ' bytes over') + ' the ' + numbers.format(maxPayload) + ' a push holds: shorten the longest text.'}</p>`;
}

// shown are the characters of a title and a message each platform shows
// before it cuts them (Chrome's notifications, roughly: fonts differ).
const shown = { title: [['Windows', 60], ['macOS', 40], ['Android', 40]], body: [['Windows', 120], ['macOS', 90], ['Android', 240]] };

// counted is a title's or a message's length with the platforms' guidance,
// as a field's hint: "42 characters. Windows shows about 60, macOS about
// 40, Android about 40."
export function counted(member, text) {
  const n = [...fallbacks(text)].length;
  const cut = shown[member].filter(([, max]) => n > max).map(([name]) => name);
  return numbers.format(n) + (n === 1 ? ' character. ' : ' characters. ') +
    shown[member].map(([name, max], i) => (i === 0 ? name + ' shows about ' : name + ' about ') + max).join(', ') +
    (cut.length ? '; cut on ' + cut.join(' and ').replace(/ and (?=.* and )/, ', ') + '.' : '.');
}
