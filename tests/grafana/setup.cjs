// The browser that Grafana's frontend code expects, from jsdom: its window's
// globals are copied onto Node's (the DOM event classes replace Node's own,
// which jsdom's EventTarget refuses). Nothing here is drawn; the observers
// and media queries that layout code touches at load answer "nothing".
'use strict';

const Module = require('module');
const { JSDOM } = require('jsdom');

const dom = new JSDOM('<!doctype html><html><body></body></html>', { url: 'http://localhost/', pretendToBeVisual: true });
const w = dom.window;
const domEvents = new Set(['Event', 'EventTarget', 'CustomEvent', 'MessageEvent', 'KeyboardEvent', 'MouseEvent']);
for (const k of Object.getOwnPropertyNames(w)) {
  if (k in globalThis && !domEvents.has(k)) continue;
  try { globalThis[k] = w[k]; } catch (e) { /* read-only in Node: keep Node's */ }
}
const noMedia = () => ({ matches: false, addListener() {}, removeListener() {}, addEventListener() {}, removeEventListener() {} });
class NoObserver { observe() {} unobserve() {} disconnect() {} }
globalThis.window = w;
w.devicePixelRatio = globalThis.devicePixelRatio = 1;
w.matchMedia = globalThis.matchMedia = noMedia;
w.ResizeObserver = globalThis.ResizeObserver = NoObserver;
w.IntersectionObserver = globalThis.IntersectionObserver = NoObserver;
// Grafana's index.html sets this before any of its code runs.
w.grafanaBootData = { settings: { featureToggles: {}, buildInfo: { version: '13.2.3' } }, user: {}, navTree: [] };

// Stylesheets are for the browser; a dashboard's queries never read them.
require.extensions['.css'] = () => {};

// Query-editor modules that a dashboard never runs (the Prometheus package
// imports them for its editor UI): an empty module stands in.
const editorOnly = new Set(['@grafana/assistant', 'monaco-promql', 'monaco-editor']);
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (editorOnly.has(request)) return require.resolve('./stub.cjs');
  return resolve.call(this, request, ...rest);
};
