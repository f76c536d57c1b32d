// Unsent work: a form kept in this browser's local storage until it is
// sent, saved or discarded, so a reload or a closed tab loses nothing, and
// a warning before a reload, a close or a change of page would drop it.
import { useEffect, useRef } from './vendor/preact-htm.module.js';
import { guardLeaving } from './router.js';

// readUnsent is the form kept under key, or null.
export function readUnsent(key) {
  try {
    const raw = localStorage.getItem(key);
    return raw ? JSON.parse(raw) : null;
  } catch (e) {
    return null; // storage off, or not JSON
  }
}

// useUnsent keeps values under key while ready (the form shows what it
// edits) and they differ from baseline, what was last saved or an empty
// form. forget() drops what is kept once the work went (sent, saved) or
// was discarded; leaving asks first while the work is unsent, and
// leaving by a change of page drops it.
export function useUnsent(key, values, baseline, ready, question) {
  const text = JSON.stringify(values);
  const dirty = ready && text !== JSON.stringify(baseline);
  const state = useRef({});
  state.current.dirty = dirty && !state.current.forgotten;
  const forget = () => {
    state.current.forgotten = true;
    state.current.dirty = false;
    try {
      localStorage.removeItem(key);
    } catch (e) {
      // storage off: nothing was kept
    }
  };
  useEffect(() => {
    state.current.forgotten = false; // a change after forget() is new work
    state.current.dirty = dirty;
    if (!ready) return;
    try {
      if (dirty) localStorage.setItem(key, text);
      else localStorage.removeItem(key);
    } catch (e) {
      // storage off or full: the warnings still hold
    }
  }, [key, text, dirty, ready]);
  useEffect(() => warnOnLeave(state, () => {
    if (!window.confirm(question)) return false;
    forget();
    return true;
  }), [key]);
  return { dirty, forget };
}

// warnOnLeave has the browser ask before a reload or a close while
// state.current.dirty, and asks leave() before a change of page then (a
// change goes ahead when it answers true); it returns what stops both.
function warnOnLeave(state, leave) {
  const unload = (e) => {
    if (!state.current.dirty) return;
    e.preventDefault();
    e.returnValue = '';
  };
  window.addEventListener('beforeunload', unload);
  const release = guardLeaving(() => !state.current.dirty || leave());
  return () => {
    window.removeEventListener('beforeunload', unload);
    release();
  };
}

// useGuard asks before a reload, a close or a change of page would drop
// a form's unsaved changes (dirty), without keeping them: for editors of
// what is stored on the server, whose saved form is a load away. forget()
// lets a page leave once the changes are saved.
export function useGuard(dirty, question) {
  const state = useRef({});
  state.current.dirty = dirty && !state.current.forgotten;
  useEffect(() => {
    if (!dirty) state.current.forgotten = false; // a change after forget() is new work
  }, [dirty]);
  useEffect(() => warnOnLeave(state, () => window.confirm(question)), []);
  return {
    forget: () => {
      state.current.forgotten = true;
      state.current.dirty = false;
    },
  };
}
