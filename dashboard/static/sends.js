// Sends: the composer's form as a send request and back (spec 2.1).
import { ApiError } from './api.js';
import { go } from './router.js';
import { buildable, apiFilters, builderFilters } from './rules.js';
import { errorsOf } from './forms.js';
import { formatTime, zonedToUTC, zonedLocal } from './format.js';

// contentValues is the form of a push's content (pages/content.js) for the
// content members of b (a send body, or an automation's message), or an
// empty one; templateId is the template an automation's message or a
// journey's send step names ('' none).
export function contentValues(b) {
  b = b || {};
  const actions = (b.actions || []).slice(0, 2).map((a) => ({ title: a.title || '', url: a.url || '' }));
  while (actions.length < 2) actions.push({ title: '', url: '' });
  return {
    templateId: b.templateId || '', title: b.title || '', body: b.body || '', url: b.url || '', icon: b.icon || '', image: b.image || '', badge: b.badge || '', actions,
    ttl: b.ttl ? String(b.ttl) : '', tag: b.tag || '', requireInteraction: !!b.requireInteraction,
    translations: Object.entries(b.translations || {}).map(([language, t]) => ({ language, title: t.title || '', body: t.body || '' })),
  };
}

// contentRequest is contentValues' form v as the content members of a
// send request (spec 2.1): what is left empty is left out (the title too
// when a template, which may give it, is named).
export function contentRequest(v) {
  const r = v.templateId ? { templateId: v.templateId } : {};
  if (!v.templateId || v.title.trim()) r.title = v.title;
  for (const k of ['body', 'url', 'icon', 'image', 'badge', 'tag']) {
    if (v[k].trim()) r[k] = v[k].trim();
  }
  const actions = v.actions.filter((a) => a.title.trim()).map((a) => (a.url.trim() ? { title: a.title.trim(), url: a.url.trim() } : { title: a.title.trim() }));
  if (actions.length) r.actions = actions;
  if (v.ttl.trim()) r.ttl = Number(v.ttl);
  if (v.requireInteraction) r.requireInteraction = true;
  const translations = v.translations.filter((t) => t.language.trim() && (t.title.trim() || t.body.trim()));
  if (translations.length) r.translations = Object.fromEntries(translations.map((t) => [t.language.trim().toLowerCase(), { title: t.title, body: t.body }]));
  return r;
}

// composerValues is the composer's form for a send body (a draft or a
// duplicate), or an empty one.
export function composerValues(b, timeZone) {
  b = b || {};
  const ids = b.externalIds || (b.externalId ? [b.externalId] : null);
  const abB = (b.ab && b.ab.b) || {};
  const abTest = b.abTest || {};
  const later = b.sendAt && Date.parse(b.sendAt) > Date.now(); // a past time would send now
  return {
    ...contentValues(b), transactional: !!b.transactional,
    ab: !!(b.ab && b.ab.b), b: { title: abB.title || '', body: abB.body || '', url: abB.url || '', image: abB.image || '' },
    autoWinner: !!abTest.autoWinner, testPercent: abTest.testPercent ? String(abTest.testPercent) : '20', afterHours: abTest.afterHours ? String(abTest.afterHours) : '4',
    audience: ids ? 'users' : b.segmentId ? 'segment' : b.topicId ? 'topic' : b.filters ? 'filters' : 'everyone',
    topicId: b.topicId || '', segmentId: b.segmentId || '', externalIds: ids ? ids.join(', ') : '', filters: builderFilters(b.filters),
    exclude: b.excludeSegmentId ? 'segment' : b.excludeFilters ? 'filters' : 'none',
    excludeSegmentId: b.excludeSegmentId || '', excludeFilters: builderFilters(b.excludeFilters),
    when: b.perTimezone ? 'local' : b.smartTime ? 'smart' : later ? 'later' : 'now',
    sendAt: later ? zonedLocal(b.sendAt, timeZone || 'UTC') : '', sendZone: timeZone || 'UTC', localTime: b.localTime || '09:00',
  };
}

// sendRequest is the composer's form as a send request (spec 2.1).
export function sendRequest(v, site, draft) {
  const r = contentRequest(v);
  if (v.transactional) r.transactional = true;
  if (v.ab) {
    const b = {};
    for (const k of ['title', 'body', 'url', 'image']) if (v.b[k].trim()) b[k] = v.b[k].trim();
    r.ab = { b };
    if (v.autoWinner) r.abTest = { autoWinner: true, testPercent: Number(v.testPercent), afterHours: Number(v.afterHours) };
  }
  if (v.audience === 'topic') r.topicId = v.topicId;
  if (v.audience === 'segment') r.segmentId = v.segmentId;
  if (v.audience === 'filters') r.filters = apiFilters(v.filters);
  if (v.audience === 'users') r.externalIds = [...new Set(v.externalIds.split(/[,\n]/).map((x) => x.trim()).filter(Boolean))];
  if (v.audience !== 'users' && v.exclude === 'segment') r.excludeSegmentId = v.excludeSegmentId;
  if (v.audience !== 'users' && v.exclude === 'filters') r.excludeFilters = apiFilters(v.excludeFilters);
  if (v.when === 'later' && v.sendAt) r.sendAt = zonedToUTC(v.sendAt, v.sendZone || site.timezone);
  if (v.when === 'local') {
    r.perTimezone = true;
    r.localTime = v.localTime;
  }
  if (v.when === 'smart') r.smartTime = true;
  if (draft) r.draft = true;
  return r;
}

// representable reports whether the composer can show a send body's whole
// audience exactly: one way to choose people and at most one to leave some
// out (none with named people), every member valued (a null or blank one
// would read as none), rules the builder shows as they are, ids without
// the commas or line breaks that separate them. Any other body is never
// opened in the form, whose choices would drop or change members and so
// could widen the send.
export function representable(b) {
  if (!b) return true;
  const has = (k) => b[k] !== undefined;
  const blank = (x) => x === null || (typeof x === 'string' && !x.trim()) || (Array.isArray(x) && !x.some((y) => String(y).trim()));
  const targeting = ['segmentId', 'topicId', 'filters', 'externalId', 'externalIds', 'excludeSegmentId', 'excludeFilters'];
  if (targeting.some((k) => has(k) && blank(b[k]))) return false;
  if (['filters', 'excludeFilters'].some((k) => has(k) && !buildable(b[k]))) return false;
  const ids = b.externalIds || (has('externalId') ? [b.externalId] : []);
  if (ids.some((id) => typeof id !== 'string' || /[,\n]/.test(id) || id !== id.trim())) return false;
  const named = has('externalIds') || has('externalId');
  const include = ['segmentId', 'topicId', 'filters'].filter(has).length + (named ? 1 : 0);
  const exclude = ['excludeSegmentId', 'excludeFilters'].filter(has).length;
  return include <= 1 && exclude <= 1 && !(named && exclude > 0);
}

// contentMembers are what a notification shows (a test send takes these
// alone); composerMembers every send-request member the composer sets.
export const contentMembers = ['title', 'body', 'url', 'icon', 'image', 'badge', 'actions', 'requireInteraction', 'tag', 'ttl', 'translations'];
const composerMembers = [...contentMembers, 'transactional', 'ab', 'abTest', 'topicId', 'segmentId', 'filters', 'externalId', 'externalIds',
  'excludeSegmentId', 'excludeFilters', 'sendAt', 'perTimezone', 'localTime', 'smartTime'];

// draftPatch is the PATCH of a draft to the form's request r: a member the
// form leaves unset is null, which clears the draft's saved one.
export function draftPatch(r) {
  const patch = {};
  for (const k of composerMembers) patch[k] = r[k] === undefined ? null : r[k];
  return patch;
}

// memberField is the composer's field of the send-request member a
// refusal names (payload_too_large and invalid_url name it: "title",
// "actions[1].url", "ab.b.image", "translations.fr.body"…) in the form v,
// or 'form' when the field is not shown.
function memberField(member, v) {
  const plain = { title: 'title', body: 'body', url: 'url', icon: 'icon', image: 'image', badge: 'badge',
    'ab.b.title': 'b-title', 'ab.b.body': 'b-body', 'ab.b.url': 'b-url', 'ab.b.image': 'b-image' };
  if (plain[member]) return plain[member];
  const action = /^actions\[(\d+)\]\.(title|url)$/.exec(member);
  if (action) {
    // The request lists only the buttons with a text.
    const i = v.actions.map((a, j) => (a.title.trim() ? j : -1)).filter((j) => j >= 0)[Number(action[1])];
    return i === undefined ? 'form' : 'action' + i + '-' + action[2];
  }
  const tr = /^translations\.([a-z]{2})\.(title|body)$/.exec(member);
  const i = tr ? v.translations.findIndex((t) => t.language.trim().toLowerCase() === tr[1]) : -1;
  return i >= 0 ? 'tr' + i + '-' + tr[2] : 'form';
}

// contentField is the field of the content form v (pages/content.js; its
// id without a prefix) that a refusal of the content (code, and message
// past any "messages[i]: " of an automation) concerns, or 'form'.
export function contentField(code, message, v) {
  if (code === 'title_required') return 'title';
  if (code !== 'payload_too_large' && code !== 'invalid_url') return 'form';
  const named = /longest member is (\S+)$/.exec(message) || /^(\S+) (?:is|must) /.exec(message);
  return named ? memberField(named[1], v) : 'form';
}

// composerError maps a send's error to the composer field it concerns:
// r is the request refused, v the form it came from.
export function composerError(err, r, v) {
  const at = { title_required: 'title', external_ids_empty: 'externalIds', unknown_topic: 'topicId', segment_not_found: 'segmentId' };
  if (err instanceof ApiError && err.code === 'segment_not_found' && r && r.excludeSegmentId && err.message.includes(r.excludeSegmentId)) {
    return { excludeSegmentId: err.message };
  }
  if (err instanceof ApiError && at[err.code]) return { [at[err.code]]: err.message };
  if (err instanceof ApiError && v && (err.code === 'payload_too_large' || err.code === 'invalid_url')) {
    return { [contentField(err.code, err.message, v)]: err.message };
  }
  return errorsOf(err);
}

// when is a send's timing in words.
export function when(r, site, zone) {
  if (r.perTimezone) return ' at ' + r.localTime + ' in each subscriber’s time zone';
  if (r.smartTime) return ' at each subscriber’s most active hour';
  return r.sendAt ? ' at ' + formatTime(r.sendAt, zone || site.timezone) : ' now';
}

// duplicate opens the composer filled with a send's body.
export function duplicate(sendBody) {
  sessionStorage.setItem('relaybell.duplicate', JSON.stringify(sendBody));
  go('compose');
}
