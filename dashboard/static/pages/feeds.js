// Feeds (issue 35): RSS, Atom and JSON feeds whose new items go out as
// notifications, each once. The list shows each feed's last poll (when,
// the HTTP status, the new items, the error) and what waits; "Poll now"
// polls it at once and says what the poll did; the form makes and
// changes feeds, their audience (everyone, a topic, a segment, or filters
// made with the rules builder) and their content (fields with the item's
// placeholders, or a saved template). Every value from the API is
// rendered as text.
import { html, useState } from '../vendor/preact-htm.module.js';
import { call, ApiError } from '../api.js';
import { Alert, Field, useForm, FormError, errorsOf, actions, selectField } from '../forms.js';
import { useLoad } from '../lists.js';
import { numbers, formatTime } from '../format.js';
import { ruleError, buildable, apiFilters, builderFilters, describeFilters, RuleBuilder } from '../rules.js';

// pausedReasons are why the service paused a feed, in words.
const pausedReasons = {
  failing_for_1_day: 'every poll failed for a day',
  topic_deleted: 'the topic it sends to was deleted',
  segment_deleted: 'the segment it sends to was deleted',
};

// audienceText is who gets a feed's items, in words.
function audienceText(a, topics, segments) {
  const named = (list, id) => (list.find((x) => x.id === id || x.slug === id) || {}).name || id;
  let who = 'Everyone';
  if (a.topicId) who = 'Topic ' + named(topics, a.topicId);
  else if (a.segmentId) who = 'Segment ' + named(segments, a.segmentId);
  else if (a.filters) who = 'Filters: ' + describeFilters(a.filters);
  if (a.excludeSegmentId) who += ', except segment ' + named(segments, a.excludeSegmentId);
  return who;
}

// pollText is a poll's outcome, in words.
export function pollText(p, timeZone) {
  if (!p) return 'Not polled yet';
  const status = p.httpStatus ? 'HTTP ' + p.httpStatus : 'no answer';
  const what = p.error ? 'failed: ' + p.error : numbers.format(p.newItems) + (p.newItems === 1 ? ' new item' : ' new items');
  return formatTime(p.at, timeZone) + ' — ' + status + ', ' + what;
}

// feedValues is the form of feed f, or of a new one.
function feedValues(f) {
  const a = (f && f.audience) || { everyone: true };
  const t = (f && f.template) || {};
  return {
    name: f ? f.name : '', url: f ? f.url : '',
    audience: a.topicId ? 'topic' : a.segmentId ? 'segment' : a.filters ? 'filters' : 'everyone', topicId: a.topicId || '', segmentId: a.segmentId || '',
    templateId: t.templateId || '', title: t.title || '', body: t.body || '', link: t.url || '', image: t.image || '',
    pollMinutes: f ? String(f.pollMinutes) : '15', maxPerPoll: f ? String(f.maxPerPoll) : '3', sendExisting: f ? String(f.sendExisting) : '0',
  };
}

// feedBody is the form v as the body of POST or PUT /feeds; filters is
// the rules builder's value, used when the audience is filters. An
// excluded segment or filters the feed has (made through the API) stay.
export function feedBody(v, isNew, filters, kept = {}) {
  const audience = v.audience === 'topic' ? { topicId: v.topicId } : v.audience === 'segment' ? { segmentId: v.segmentId }
    : v.audience === 'filters' ? { filters: kept.filters || apiFilters(filters) } : { everyone: true };
  if (kept.excludeSegmentId) audience.excludeSegmentId = kept.excludeSegmentId;
  if (kept.excludeFilters) audience.excludeFilters = kept.excludeFilters;
  const template = {};
  if (v.templateId) template.templateId = v.templateId;
  else {
    for (const [k, from] of [['title', 'title'], ['body', 'body'], ['url', 'link'], ['image', 'image']]) {
      if (v[from].trim()) template[k] = v[from].trim();
    }
  }
  const body = { name: v.name, url: v.url.trim(), audience, template, pollMinutes: Number(v.pollMinutes), maxPerPoll: Number(v.maxPerPoll) };
  if (isNew) body.sendExisting = Number(v.sendExisting);
  return body;
}

// feedError maps a refusal to the field it concerns.
function feedError(err) {
  if (!(err instanceof ApiError)) return errorsOf(err);
  const at = { name_required: 'name', invalid_name: 'name', invalid_url: 'url', invalid_audience: 'audience', unknown_topic: 'topicId',
    segment_not_found: 'segmentId', invalid_filters: 'rules', invalid_template: 'title', template_not_found: 'templateId', invalid_poll_minutes: 'pollMinutes',
    invalid_max_per_poll: 'maxPerPoll', invalid_send_existing: 'sendExisting' };
  return at[err.code] ? { [at[err.code]]: err.message } : errorsOf(err);
}

// FeedForm makes a feed (feed absent) or changes feed; done(saved) ends it.
function FeedForm({ feed, topics, segments, loaded, done }) {
  const f = useForm(feedValues(feed));
  // The website's templates, as they are when the form opens.
  const tpl = useLoad(() => call('GET', '/templates'), [feed ? feed.id : 'new']);
  const templates = (tpl.data && tpl.data.templates) || [];
  const v = f.values;
  const select = selectField(f, loaded);
  const saved = (feed && feed.audience) || {};
  // Filters the builder cannot show as they are (made through the API)
  // are kept as they are rather than rewritten.
  const keptFilters = saved.filters && !buildable(saved.filters) ? saved.filters : null;
  const [filters, setFilters] = useState(builderFilters(saved.filters && !keptFilters ? saved.filters : null));
  const save = f.submit(async () => {
    if (v.audience === 'filters' && !keptFilters && ruleError(filters)) {
      f.setErrors({ rules: ruleError(filters) });
      return;
    }
    const body = feedBody(v, !feed, filters, { filters: v.audience === 'filters' ? keptFilters : null,
      excludeSegmentId: saved.excludeSegmentId, excludeFilters: saved.excludeFilters });
    done(feed ? await call('PUT', '/feeds/' + encodeURIComponent(feed.id), body) : await call('POST', '/feeds', body));
  }, feedError);
  return html`<form class="feed-form" onSubmit=${save} novalidate aria-label=${feed ? 'Feed “' + feed.name + '”' : 'New feed'}>
    <h2>${feed ? 'Change feed “' + feed.name + '”' : 'New feed'}</h2>
    <${FormError} errors=${f.errors} />
    <${Field} id="name" label="Feed name" value=${v.name} onInput=${f.set('name')} error=${f.errors.name} />
    <${Field} id="url" label="Feed address" type="url" value=${v.url} onInput=${f.set('url')} error=${f.errors.url}
      hint="The RSS, Atom or JSON feed’s http or https address." />
    <fieldset><legend>Send each new item to</legend>
      <label class="choice"><input type="radio" name="feed-audience" checked=${v.audience === 'everyone'} onChange=${() => f.set('audience')('everyone')} /> Everyone</label>
      <label class="choice"><input type="radio" name="feed-audience" checked=${v.audience === 'topic'} onChange=${() => f.set('audience')('topic')} /> A topic’s subscribers</label>
      <label class="choice"><input type="radio" name="feed-audience" checked=${v.audience === 'segment'} onChange=${() => f.set('audience')('segment')} /> A segment</label>
      <label class="choice"><input type="radio" name="feed-audience" checked=${v.audience === 'filters'} onChange=${() => f.set('audience')('filters')} /> People matching rules</label>
      ${f.errors.audience && html`<p class="error">${f.errors.audience}</p>`}
      ${v.audience === 'topic' && select('topicId', 'Topic', topics.map((t) => [t.id, t.name]), { empty: 'Choose a topic', none: 'No topics yet.' })}
      ${v.audience === 'segment' && select('segmentId', 'Segment', segments.map((s) => [s.id, s.name]), { empty: 'Choose a segment', none: 'No segments yet.' })}
      ${v.audience === 'filters' && (keptFilters
        ? html`<p>${'Rules made through the API, kept as they are: ' + describeFilters(keptFilters) + '.'}</p>`
        : html`<${RuleBuilder} filters=${filters} onChange=${setFilters} name="audience" legend="Rules" error=${f.errors.rules} />`)}
    </fieldset>
    <fieldset><legend>Each notification</legend>
      ${tpl.data ? selectField(f, true)('templateId', 'Template', templates.map((t) => [t.id, t.name]), { empty: 'None: the fields below', none: 'No templates yet: make one on the Templates page.' })
        : !tpl.error && html`<p role="status">Loading the templates…</p>`}
      <${Alert} error=${tpl.error} what="The templates did not load" />
      ${v.templateId ? html`<p class="hint">The template’s content goes out; its fields may hold {item.title}, {item.summary}, {item.link} and {item.image}, and one it leaves empty takes the item’s own.</p>`
        : html`<p class="hint">Use {item.title}, {item.summary}, {item.link} and {item.image}; a field left empty takes the item’s own.</p>
      <${Field} id="title" label="Title" value=${v.title} onInput=${f.set('title')} error=${f.errors.title} required=${false} hint="Default {item.title}." />
      <${Field} id="body" label="Text" value=${v.body} onInput=${f.set('body')} required=${false} hint="Default {item.summary}." />
      <${Field} id="link" label="Link" value=${v.link} onInput=${f.set('link')} required=${false} hint="Default {item.link}." />
      <${Field} id="image" label="Image" value=${v.image} onInput=${f.set('image')} required=${false} hint="Default {item.image}: the item’s media or image enclosure." />`}
    </fieldset>
    <div class="row">
      <${Field} id="pollMinutes" label="Poll every (minutes)" type="number" value=${v.pollMinutes} onInput=${f.set('pollMinutes')} error=${f.errors.pollMinutes} hint="5 to 1,440." />
      <${Field} id="maxPerPoll" label="Items per poll at most" type="number" value=${v.maxPerPoll} onInput=${f.set('maxPerPoll')} error=${f.errors.maxPerPoll} hint="1 to 10; the rest wait for the next poll." />
      ${!feed && html`<${Field} id="sendExisting" label="Send the newest items already there" type="number" value=${v.sendExisting}
        onInput=${f.set('sendExisting')} error=${f.errors.sendExisting} hint="0 sends none of the items the feed holds now: only new ones." />`}
    </div>
    <div class="actions"><button type="submit" disabled=${f.busy}>${feed ? 'Save feed' : 'Add feed'}</button>
      <button type="button" class="secondary" onClick=${() => done(null)}>Cancel</button></div>
  </form>`;
}

// FeedCard is one feed with its last poll and its buttons.
function FeedCard({ feed, site, names, canChange, onEdit, act, onPolled }) {
  const [polling, setPolling] = useState(false);
  const [result, setResult] = useState(null); // what Poll now did, in words
  const [pollError, setPollError] = useState(null);
  const g = feed;
  const pollNow = async () => {
    setPolling(true);
    setPollError(null);
    try {
      const p = await call('POST', '/feeds/' + encodeURIComponent(g.id) + '/poll');
      setResult(pollText(p, site.timezone) + '; ' + numbers.format(p.sent) + ' sent' + (p.budgetRefused ? '; the hourly budget held the rest back' : ''));
      onPolled();
    } catch (err) {
      setPollError(err);
    } finally {
      setPolling(false);
    }
  };
  return html`<article class="feed" aria-labelledby=${'feed-' + g.id}>
    <h2 id=${'feed-' + g.id}>${g.name}</h2>
    <dl class="facts">
      <dt>Address</dt><dd><span class="cut">${g.url}</span></dd>
      <dt>Sends to</dt><dd>${audienceText(g.audience, names.topics, names.segments)}</dd>
      <dt>Status</dt><dd>${g.status === 'active' ? 'On, every ' + numbers.format(g.pollMinutes) + ' min' : 'Paused' + (g.pausedReason ? ': ' + (pausedReasons[g.pausedReason] || g.pausedReason) : '')}</dd>
      <dt>Last poll</dt><dd>${pollText(g.lastPoll, site.timezone)}</dd>
      <dt>Items</dt><dd>${numbers.format(g.sent) + ' sent, ' + numbers.format(g.pending) + ' waiting'}${g.budgetRefusedAt ? ' (the hourly budget held items back at ' + formatTime(g.budgetRefusedAt, site.timezone) + ')' : ''}</dd>
    </dl>
    <p><a href=${'#/notifications?feedId=' + encodeURIComponent(g.id)}>Its notifications</a></p>
    ${result && html`<p role="status">${'Polled: ' + result}</p>`}
    <${Alert} error=${pollError} what="The poll failed" />
    ${canChange && html`<div class="actions">
      ${g.status === 'active' && html`<button type="button" aria-label=${'Poll now ' + g.name} disabled=${polling} onClick=${pollNow}>${polling ? 'Polling…' : 'Poll now'}</button>`}
      <button type="button" class="secondary" aria-label=${'Change feed ' + g.name} onClick=${() => onEdit(g)}>Change</button>
      <button type="button" class="secondary" aria-label=${(g.status === 'active' ? 'Pause feed ' : 'Turn on feed ') + g.name}
        onClick=${act('PUT', '/feeds/' + encodeURIComponent(g.id), { status: g.status === 'active' ? 'paused' : 'active' })}>${g.status === 'active' ? 'Pause' : 'Turn on'}</button>
      <button type="button" class="secondary" aria-label=${'Delete feed ' + g.name}
        onClick=${act('DELETE', '/feeds/' + encodeURIComponent(g.id), undefined, 'Delete the feed “' + g.name + '”? Its notifications stay.')}>Delete</button>
    </div>`}
  </article>`;
}

export function Feeds({ site }) {
  const canChange = site.role !== 'viewer';
  const list = useLoad(() => call('GET', '/feeds'), [site.projectId]);
  const choices = useLoad(() => Promise.all([call('GET', '/topics'), call('GET', '/segments')]), [site.projectId]);
  const names = { topics: (choices.data && choices.data[0].topics) || [], segments: (choices.data && choices.data[1].segments) || [] };
  const [editing, setEditing] = useState(null); // null, 'new', or the feed changed
  const [failed, setFailed] = useState(null);
  const act = actions(() => {
    setFailed(null);
    list.reload();
  }, setFailed);
  const done = (saved) => {
    setEditing(null);
    if (saved) list.reload();
  };
  const feeds = list.data && list.data.feeds;
  return html`<section>
    <h1>Feeds</h1>
    <p>Each new item of an RSS, Atom or JSON feed goes out as a notification, once: an item edited, moved or put back is never sent again, and adding a feed sends none of the items it already holds unless you ask.</p>
    ${canChange && !editing && html`<p><button type="button" onClick=${() => setEditing('new')}>New feed</button></p>`}
    ${editing && html`<${FeedForm} feed=${editing === 'new' ? null : editing} topics=${names.topics} segments=${names.segments} loaded=${!!choices.data}
      done=${done} key=${editing === 'new' ? 'new' : editing.id} />`}
    <${Alert} error=${list.error} />
    <${Alert} error=${failed} what="The change failed" />
    <${Alert} error=${choices.error} what="The topics and segments did not load" />
    ${!feeds && !list.error && html`<p role="status">Loading…</p>`}
    ${feeds && feeds.length === 0 && html`<p class="empty">No feeds yet. ${canChange ? 'Add your blog’s feed with New feed' : 'An owner or admin adds them here'}.</p>`}
    ${feeds && feeds.map((g) => html`<${FeedCard} key=${g.id} feed=${g} site=${site} names=${names} canChange=${canChange}
      onEdit=${setEditing} act=${act} onPolled=${list.reload} />`)}
  </section>`;
}
