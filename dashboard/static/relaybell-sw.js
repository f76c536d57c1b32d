// The dashboard's service worker: the browser SDK's worker of the website
// named by ?project=, so that the install page can subscribe this very
// browser and show it a test notification. One origin has one worker at
// its root: the last website subscribed here is the one it serves.
const project = new URL(self.location.href).searchParams.get('project') || '';
if (/^[0-9a-fA-F-]{36}$/.test(project)) {
  importScripts('/api/v1/projects/' + project + '/sw.js');
}
