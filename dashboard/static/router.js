// Routing on the URL's fragment, /#/page?query: the form the mailed links
// use, so the server serves one page.
import { useState, useEffect } from './vendor/preact-htm.module.js';

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  return { path: path || '', query: new URLSearchParams(query || '') };
}

export function go(path) {
  location.hash = '#/' + path;
}

export function useRoute() {
  const [route, setRoute] = useState(parseRoute());
  useEffect(() => {
    const on = () => setRoute(parseRoute());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}
