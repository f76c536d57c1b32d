// Checks useLoad (static/lists.js) under Preact without a browser: a
// component that renders nothing needs no DOM. Run by TestDashboardUseLoad
// (dashboard_test.go); exits non-zero on the first failed assertion.
import assert from 'node:assert/strict';
import { html, render } from '../static/vendor/preact-htm.module.js';
import { useLoad } from '../static/lists.js';

// Without requestAnimationFrame, Preact runs effects 100 ms after a render.
const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

// Each question q gets an answer the test gives by hand; stale records
// what the fetcher's stale() said when the answer was given.
const pending = {};
const stale = {};
const fetcher = (q, isStale) => new Promise((resolve, reject) => {
  pending[q] = {
    resolve: (v) => { stale[q] = isStale(); resolve(v); },
    reject: (e) => { stale[q] = isStale(); reject(e); },
  };
});

let load;
function Probe({ q }) {
  load = useLoad((isStale) => fetcher(q, isStale), [q]);
  return null;
}
const root = { childNodes: [], firstChild: null };
const show = async (q) => {
  render(q === null ? null : html`<${Probe} q=${q} />`, root);
  await settle();
};
const state = () => ({ data: load.data, error: load.error && load.error.message, loading: load.loading });

// An older answer arriving after a newer request started is dropped.
await show('a');
assert.deepEqual(state(), { data: null, error: null, loading: true });
await show('b');
pending.b.resolve('B');
await settle();
assert.deepEqual(state(), { data: 'B', error: null, loading: false });
pending.a.resolve('A');
await settle();
assert.deepEqual(state(), { data: 'B', error: null, loading: false });
assert.deepEqual(stale, { b: false, a: true });

// The data stays while the next question loads; a failure has no data.
await show('c');
assert.deepEqual(state(), { data: 'B', error: null, loading: true });
pending.c.reject(new Error('down'));
await settle();
assert.deepEqual(state(), { data: null, error: 'down', loading: false });

// An older failure is dropped too.
await show('d');
await show('e');
pending.e.resolve('E');
await settle();
pending.d.reject(new Error('late'));
await settle();
assert.deepEqual(state(), { data: 'E', error: null, loading: false });

// reload() asks again; an answer the page sets itself wins over it.
load.reload();
await settle();
assert.equal(load.loading, true);
const reloading = pending.e;
load.set('S');
await settle();
reloading.resolve('E2');
await settle();
assert.deepEqual(state(), { data: 'S', error: null, loading: false });

// more() merges a further page; a change of question drops it.
load.set(['1']);
await settle();
load.more(() => Promise.resolve(['2']), (old, answer) => old.concat(answer));
await settle();
assert.deepEqual(state(), { data: ['1', '2'], error: null, loading: false });
let page3;
load.more(() => new Promise((resolve) => { page3 = resolve; }), (old, answer) => old.concat(answer));
await show('f');
page3(['3']);
pending.f.resolve('F');
await settle();
assert.deepEqual(state(), { data: 'F', error: null, loading: false });

// Nothing is set once the page is gone.
await show('g');
const last = load;
await show(null);
pending.g.resolve('G');
await settle();
assert.equal(stale.g, true);
assert.equal(load, last);
console.log('ok');
