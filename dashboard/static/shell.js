// The signed-in shell: the header, the website switcher and the page the
// route names.
import { html, useState, useLayoutEffect } from './vendor/preact-htm.module.js';
import { call, setProject } from './api.js';
import { go } from './router.js';
import { Alert } from './forms.js';
import { AddWebsite } from './pages/websites.js';
import { Install } from './pages/install.js';
import { Home } from './pages/home.js';
import { Notifications } from './pages/notifications.js';
import { NotificationDetail } from './pages/notification.js';
import { Composer } from './pages/compose.js';
import { Audience } from './pages/audience.js';
import { Person } from './pages/person.js';
import { SegmentsAndTopics } from './pages/segments.js';
import { Webhooks } from './pages/webhooks.js';
import { WebhookLog } from './pages/webhook.js';
import { Settings } from './pages/settings.js';
import { Automations } from './pages/automations.js';
import { AutomationEditor } from './pages/automation.js';
import { Goals } from './pages/goals.js';
import { Feeds } from './pages/feeds.js';
import { Integrations } from './pages/integrations.js';
import { Templates } from './pages/templates.js';
import { Schedules } from './pages/schedules.js';
import { Journeys } from './pages/journeys.js';
import { JourneyPage } from './pages/journey.js';
import { Prompt } from './pages/prompt.js';
import { Welcome } from './pages/welcome.js';
import { OnsiteMessages, OnsiteArea } from './pages/onsite.js';

export function Shell({ me, route, onMe, onSignOut }) {
  const websites = me.websites || [];
  const [signOutError, setSignOutError] = useState(null);
  const [current, setCurrent] = useState(() => localStorage.getItem('relaybell.project'));
  const [menuOpen, setMenuOpen] = useState(false); // the phone's menu
  // Closed with the new page's first paint, not a frame after it.
  useLayoutEffect(() => setMenuOpen(false), [route.path]);
  const site = websites.find((w) => w.projectId === current) || websites[0];
  // An owner or admin of an account adds websites to it; someone with no
  // account yet makes their own with their first website.
  const accounts = me.accounts || [];
  const canAddWebsite = accounts.length === 0 || accounts.some((a) => a.role !== 'viewer');

  setProject(site ? site.projectId : null);
  const choose = (projectId) => {
    localStorage.setItem('relaybell.project', projectId);
    setCurrent(projectId);
  };
  const added = async (w) => {
    choose(w.projectId);
    onMe(await call('GET', '/auth/me'));
    go('install');
  };
  let page;
  if (!site && !canAddWebsite) {
    page = html`<section><h1>No website yet</h1><p>Ask the owner of a RelayBell account to invite you to theirs.</p></section>`;
  } else if (!site || route.path === 'websites/new') {
    page = html`<${AddWebsite} first=${!site} onAdded=${added} />`;
  } else if (route.path === 'install') {
    page = html`<${Install} site=${site} me=${me} />`;
  } else if (route.path === 'people') {
    page = html`<${Audience} site=${site} query=${route.query.toString()} />`;
  } else if (route.path.startsWith('people/')) {
    page = html`<${Person} site=${site} id=${decodeURIComponent(route.path.slice('people/'.length))} key=${route.path} />`;
  } else if (route.path === 'segments') {
    page = html`<${SegmentsAndTopics} site=${site} />`;
  } else if (route.path === 'webhooks') {
    page = html`<${Webhooks} site=${site} />`;
  } else if (route.path.startsWith('webhooks/')) {
    const [id, , deliveryId] = route.path.slice('webhooks/'.length).split('/');
    page = html`<${WebhookLog} site=${site} id=${id} deliveryId=${deliveryId} />`;
  } else if (route.path === 'settings') {
    page = html`<${Settings} site=${site} onMe=${async () => onMe(await call('GET', '/auth/me'))} />`;
  } else if (route.path === 'compose' && site.role !== 'viewer') {
    page = html`<${Composer} site=${site} />`;
  } else if (route.path.startsWith('compose/') && site.role !== 'viewer') {
    page = html`<${Composer} site=${site} draftId=${route.path.slice('compose/'.length)} key=${route.path} />`;
  } else if (route.path === 'automations') {
    page = html`<${Automations} site=${site} />`;
  } else if (route.path === 'automations/new' && site.role !== 'viewer') {
    page = html`<${AutomationEditor} site=${site} key=${route.path} />`;
  } else if (route.path.startsWith('automations/') && site.role !== 'viewer') {
    page = html`<${AutomationEditor} site=${site} id=${route.path.slice('automations/'.length)} key=${route.path} />`;
  } else if (route.path === 'goals') {
    page = html`<${Goals} site=${site} />`;
  } else if (route.path === 'feeds') {
    page = html`<${Feeds} site=${site} />`;
  } else if (route.path === 'integrations') {
    page = html`<${Integrations} site=${site} />`;
  } else if (route.path === 'templates') {
    page = html`<${Templates} site=${site} />`;
  } else if (route.path === 'schedules') {
    page = html`<${Schedules} site=${site} />`;
  } else if (route.path === 'prompt') {
    page = html`<${OnsiteArea} route=${route.path}><${Prompt} site=${site} /><//>`;
  } else if (route.path === 'welcome') {
    page = html`<${OnsiteArea} route=${route.path}><${Welcome} site=${site} /><//>`;
  } else if (route.path === 'onsite') {
    page = html`<${OnsiteArea} route=${route.path}><${OnsiteMessages} site=${site} /><//>`;
  } else if (route.path === 'journeys') {
    page = html`<${Journeys} site=${site} />`;
  } else if (route.path === 'journeys/new' && site.role !== 'viewer') {
    page = html`<${JourneyPage} site=${site} key=${route.path} />`;
  } else if (route.path.startsWith('journeys/')) {
    page = html`<${JourneyPage} site=${site} id=${route.path.slice('journeys/'.length)} key=${route.path} />`;
  } else if (route.path === 'notifications') {
    page = html`<${Notifications} site=${site} query=${route.query.toString()} />`;
  } else if (route.path.startsWith('notifications/')) {
    page = html`<${NotificationDetail} site=${site} id=${route.path.slice('notifications/'.length)} key=${route.path} />`;
  } else {
    page = html`<${Home} site=${site} />`;
  }
  // A link stands for its own page and, when given, the pages reached from
  // it (Settings: the prompt, the welcome and on-site messages; the main
  // navigation has no room for more links at 1280 px).
  const link = (path, label, area) => html`<a href=${'#/' + path} aria-current=${route.path === path || (area && area.includes(route.path)) ? 'page' : undefined}>${label}</a>`;
  // On a phone the switcher, the pages and the account fold into the menu.
  return html`<div class="shell">
    <header>
      <span class="brand"><span class="logo" aria-hidden="true"></span>RelayBell</span>
      <button type="button" class="menu-button secondary" aria-expanded=${menuOpen ? 'true' : 'false'} aria-controls="main-menu"
        onClick=${() => setMenuOpen(!menuOpen)}>Menu</button>
      <div id="main-menu" class=${'menu' + (menuOpen ? ' open' : '')}>
        ${site && html`<span class="switcher"><label for="website">Website</label>
          <select id="website" value=${site.projectId} onChange=${(e) => choose(e.currentTarget.value)}>
            ${websites.map((w) => html`<option value=${w.projectId}>${w.name}</option>`)}
          </select></span>`}
        ${canAddWebsite && html`<span class="add-website">${link('websites/new', 'Add website')}</span>`}
        <span class="who">${me.user.email}</span>
        <button type="button" class="secondary" onClick=${() => onSignOut().catch(setSignOutError)}>Sign out</button>
        <nav aria-label="Main">${site && [link('', 'Home'), site.role !== 'viewer' && link('compose', 'New notification'), link('notifications', 'Notifications'),
          link('automations', 'Automations'), link('journeys', 'Journeys'), link('goals', 'Goals'), link('templates', 'Templates'), link('schedules', 'Schedules'), link('feeds', 'Feeds'), link('people', 'Audience'), link('segments', 'Segments'), link('webhooks', 'Webhooks'), link('install', 'Install'), link('settings', 'Settings', ['prompt', 'welcome', 'onsite', 'integrations'])]}</nav>
      </div>
      <${Alert} error=${signOutError} what="Signing out failed" />
    </header>
    <main key=${site ? site.projectId : ''} class=${route.path === 'compose' || route.path.startsWith('compose/') || route.path === 'automations' || route.path === 'journeys' || route.path === 'templates' || route.path.startsWith('journeys/') || route.path === 'prompt' ? 'wide' : undefined}>${page}</main>
  </div>`;
}
