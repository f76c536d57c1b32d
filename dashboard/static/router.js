// Routing on the URL's fragment, /#/page?query: the form the mailed links
// use, so the server serves one page. A list keeps its filters in the
// query, so back and reload show the same list.
import { useState, useEffect } from './vendor/preact-htm.module.js';

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  return { path: path || '', query: new URLSearchParams(query || '') };
}

export function go(path) {
  location.hash = '#/' + path;
}

// withQuery is path with the query of params (a URLSearchParams), when
// it has any.
export function withQuery(path, params) {
  const q = params.toString();
  return q ? path + '?' + q : path;
}

// A page with work the route's change would drop sets a guard: guard()
// answers whether leaving may go on (it asks the person). Refused, the
// fragment goes back to the page's, and the route stays.
let guard = null;

export function guardLeaving(fn) {
  guard = fn;
  return () => {
    if (guard === fn) guard = null;
  };
}

export function useRoute() {
  const [route, setRoute] = useState(parseRoute());
  useEffect(() => {
    let shown = location.hash;
    const on = () => {
      if (location.hash !== shown && guard && !guard()) {
        history.replaceState(null, '', shown);
        return;
      }
      shown = location.hash;
      setRoute(parseRoute());
    };
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}
