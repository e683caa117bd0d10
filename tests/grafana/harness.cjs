// Runs winobs's rendered dashboards through Grafana's own frontend code and
// prints what Grafana would send to its backend. README.md says which code is
// Grafana's and what stands in for the rest; grafana_test.go (Go) reads the
// output and checks it with Prometheus' parser.
//
// Input (stdin, JSON): {dashboards: [{file, model}], labels: {label: [values]},
// lokiLabels?: {label: [values]} (Loki's, where they differ),
// states: [{name, url?: "var-x=…", set: {variable: [values] | "$__all"}}]}.
// Output (stdout, JSON): one record per dashboard × state.
'use strict';

require('./setup.cjs');
const fs = require('fs');
const { of, firstValueFrom } = require('rxjs');
const { map } = require('rxjs/operators');
const runtime = require('@grafana/runtime');
const data = require('@grafana/data');
const scenes = require('@grafana/scenes');
const { PrometheusDatasource } = require('@grafana/prometheus');
const { LokiStandIn } = require('./loki.cjs');

const input = JSON.parse(fs.readFileSync(0, 'utf8'));
const labels = input.labels || {};
// Loki's label values, where they differ from Prometheus' (a cluster label
// the agents write on every stream while Prometheus' series lack it).
const lokiLabels = { ...labels, ...(input.lokiLabels || {}) };

// What the data sources send to Grafana's backend, tagged with what asked.
let tag = null;
const sent = [];

function response(body, url) {
  return of({ data: body, status: 200, statusText: 'OK', ok: true, headers: new Headers(), redirected: false, type: 'basic', url, config: {} });
}

// The backend: /api/ds/query records the interpolated queries; the label
// values resource answers from input.labels (a Prometheus /api/v1/label/…/values
// body), recording the selector the variable sent as match[].
runtime.setBackendSrv({
  fetch(opts) {
    const url = opts.url;
    if (url.split('?')[0] === '/api/ds/query') {
      for (const q of opts.data.queries) {
        sent.push({ tag, kind: 'target', refId: q.refId, datasource: q.datasource && q.datasource.type, expr: q.expr });
      }
      return response({ results: {} }, url);
    }
    const lv = url.match(/\/resources\/api\/v1\/label\/([^/]+)\/values$/);
    if (lv) {
      const label = decodeURIComponent(lv[1]);
      const params = opts.params || {};
      sent.push({ tag, kind: 'labelValues', label, match: params['match[]'] === undefined ? null : params['match[]'] });
      return response({ status: 'success', data: labels[label] || [] }, url);
    }
    return response({ status: 'success', data: [] }, url);
  },
  get: async () => ({ status: 'success', data: [] }),
  post: async () => ({}),
  request: async () => ({}),
  datasourceRequest: async () => ({ data: { status: 'success', data: [] } }),
});

// Grafana's TemplateSrv in a scenes dashboard hands every replace() to
// sceneGraph.interpolate: with the scene object the data source was called
// for (scopedVars.__sceneObject), else the active dashboard
// (window.__grafanaSceneContext). Both branches as template_srv.ts has them.
const templateSrv = {
  replace(target, scopedVars, format, interpolations) {
    if (scopedVars && scopedVars.__sceneObject && scopedVars.__sceneObject.value) {
      return scenes.sceneGraph.interpolate(scopedVars.__sceneObject.value.valueOf(), target, scopedVars, format, interpolations);
    }
    return scenes.sceneGraph.interpolate(window.__grafanaSceneContext, target, scopedVars, format, interpolations);
  },
  getVariables() {
    return scenes.sceneGraph.getVariables(window.__grafanaSceneContext).state.variables.map((v) => v.state);
  },
  containsTemplate(t) {
    return typeof t === 'string' && /\$\w|\$\{|\[\[/.test(t);
  },
  updateTimeRange() {},
};
runtime.setTemplateSrv(templateSrv);

const settings = {
  prometheus: { uid: 'prom-uid', name: 'Prometheus', type: 'prometheus', access: 'proxy', url: '/api/datasources/proxy/uid/prom-uid', jsonData: { httpMethod: 'POST' }, meta: { id: 'prometheus', name: 'Prometheus', info: {} }, readOnly: false },
  loki: { uid: 'loki-uid', name: 'Loki', type: 'loki', access: 'proxy', url: '/api/datasources/proxy/uid/loki-uid', jsonData: {}, meta: { id: 'loki', name: 'Loki', info: {} }, readOnly: false },
};
// New instances for every state: the Prometheus data source caches label
// values, and a state must show what it sends itself.
let sources = {};
function freshSources() {
  sources = {
    'prom-uid': new PrometheusDatasource(settings.prometheus, templateSrv),
    'loki-uid': new LokiStandIn(settings.loki, templateSrv, lokiLabels, (rec) => sent.push({ tag, ...rec })),
  };
}

// Grafana's DatasourceSrv resolves a ref whose uid is a variable (${prometheus})
// through the template service, then by uid or name.
function lookup(ref, scopedVars) {
  let uid = typeof ref === 'string' ? ref : ref && ref.uid;
  if (uid) uid = templateSrv.replace(uid, scopedVars || {});
  const hit = Object.values(settings).find((s) => s.uid === uid || s.name === uid) ||
    (ref && ref.type && settings[ref.type]);
  if (!hit) throw new Error(`no data source for ${JSON.stringify(ref)}`);
  return hit;
}
runtime.setDataSourceSrv({
  get: async (ref, scopedVars) => sources[lookup(ref, scopedVars).uid],
  getInstanceSettings: (ref, scopedVars) => lookup(ref, scopedVars),
  getList: (filters = {}) => Object.values(settings).filter((s) => !filters.pluginId || s.meta.id === filters.pluginId),
  reload: async () => {},
  registerRuntimeDataSource() {},
});

// Grafana's runRequest (app code) runs a data source's query and makes the
// response a PanelData; here only what the scenes read of it.
runtime.setRunRequest((ds, request, queryFn) => {
  const out = queryFn ? queryFn(request) : ds.query(request);
  return out.pipe(map((res) => ({ state: data.LoadingState.Done, series: res.data || [], timeRange: request.range, request })));
});

// The classic model's variable as Grafana's dashboard-scene makes it a scene
// variable (createSceneVariableFromVariableModel): defaultToAll is includeAll.
function sceneVariable(v) {
  const common = { name: v.name, label: v.label, description: v.description, hide: v.hide };
  const current = v.current || {};
  switch (v.type) {
    case 'query':
      return new scenes.QueryVariable({
        ...common, datasource: v.datasource, query: v.query, regex: v.regex || '', refresh: v.refresh, sort: v.sort,
        isMulti: v.multi, includeAll: v.includeAll, allValue: v.allValue || undefined, defaultToAll: Boolean(v.includeAll),
        value: current.value ?? '', text: current.text ?? '', allowCustomValue: v.allowCustomValue ?? true, definition: v.definition,
      });
    case 'custom':
      return new scenes.CustomVariable({
        ...common, query: v.query, isMulti: v.multi, includeAll: v.includeAll, allValue: v.allValue || undefined,
        defaultToAll: Boolean(v.includeAll), value: current.value ?? '', text: current.text ?? '', allowCustomValue: v.allowCustomValue ?? true,
      });
    case 'textbox':
      return new scenes.TextBoxVariable({ ...common, value: current.value ?? v.query ?? '' });
    case 'datasource':
      return new scenes.DataSourceVariable({ ...common, pluginId: v.query, regex: v.regex || '', value: current.value ?? '', text: current.text ?? '' });
    default:
      throw new Error(`variable ${v.name}: type ${v.type} is not handled by the harness`);
  }
}

// Panels with their queries; a row repeated by a variable becomes one copy
// per value, each with a LocalValueVariable (as RowRepeaterBehavior does).
function panelGroups(model) {
  const groups = [];
  let current = { row: null, panels: [] };
  groups.push(current);
  for (const p of model.panels || []) {
    if (p.type === 'row') {
      current = { row: p, panels: [...(p.panels || [])] };
      groups.push(current);
    } else {
      current.panels.push(p);
    }
  }
  return groups;
}

// A panel's queries, each refId made unique so that a sent query names it.
function queryRunner(p, key) {
  const queries = (p.targets || []).map((t) => ({ ...t, refId: `${key}/${t.refId}` }));
  return new scenes.SceneQueryRunner({ datasource: p.datasource, queries, maxDataPoints: 500 });
}

function busy(scene, runners) {
  return scenes.sceneGraph.getVariables(scene).state.variables.some((v) => v.state.loading) ||
    runners.some((r) => r.state.data && r.state.data.state === data.LoadingState.Loading);
}

// settle waits, turn by turn of the event loop, until no variable is loading
// and no given runner is running: a condition, never a time, so a busy machine
// only makes it slower.
async function settle(scene, runners = []) {
  for (let i = 0; i < 20 || busy(scene, runners); i++) {
    if (i > 100000) throw new Error('the scene never settled: a variable or query is still loading');
    await new Promise((r) => setTimeout(r, 0));
  }
}

function build(model) {
  const variables = (model.templating && model.templating.list || []).map(sceneVariable);
  const set = new scenes.SceneVariableSet({ variables });
  const items = [];
  const repeats = [];
  panelGroups(model).forEach((g, gi) => {
    const make = (suffix, local) => g.panels.map((p, pi) => {
      const key = `${g.row ? g.row.title : 'top'}${suffix}#${p.title}#${gi}.${pi}`;
      return { panel: p, key, local, item: new scenes.SceneFlexItem({ body: new scenes.VizPanel({ title: p.title, $data: queryRunner(p, key) }) }) };
    });
    if (g.row && g.row.repeat) {
      repeats.push({ group: g, make });
    } else {
      items.push(...make(''));
    }
  });
  const scene = new scenes.EmbeddedScene({
    $timeRange: new scenes.SceneTimeRange({ from: 'now-6h', to: 'now' }),
    $variables: set,
    body: new scenes.SceneFlexLayout({ children: items.map((i) => i.item) }),
  });
  return { scene, set, items, repeats };
}

// The repeated rows for the repeat variable's current values.
function expandRepeats(b) {
  const out = [];
  for (const r of b.repeats) {
    const v = scenes.sceneGraph.lookupVariable(r.group.row.repeat, b.scene);
    const values = [].concat(v.getValue());
    const texts = [].concat(v.getValueText ? v.getValueText() : values);
    const all = values.length === 1 && values[0] === '$__all' ? v.state.options.map((o) => o.value) : values;
    all.forEach((value, i) => {
      const made = r.make(`[${value}]`, { [v.state.name]: value });
      const row = new scenes.SceneFlexLayout({
        $variables: new scenes.SceneVariableSet({ variables: [new scenes.LocalValueVariable({ name: v.state.name, value, text: texts[i] ?? value, isMulti: v.state.isMulti, includeAll: v.state.includeAll })] }),
        children: made.map((m) => m.item),
      });
      b.scene.state.body.setState({ children: [...b.scene.state.body.state.children, row] });
      row.activate();
      out.push(...made);
    });
  }
  return out;
}

async function runState(dash, state) {
  freshSources();
  const b = build(dash.model);
  sent.length = 0;
  window.__grafanaSceneContext = b.scene;
  tag = { dashboard: dash.file, state: state.name, phase: 'open' };
  // Opened from a link: the URL's values are applied before activation, as
  // Grafana's UrlSyncManager does on load (scenes' own sync).
  if (state.url) scenes.sceneUtils.syncStateFromSearchParams(b.scene, new URLSearchParams(state.url));
  const deactivate = b.scene.activate();
  await settle(b.scene);
  for (const v of b.set.state.variables) {
    const want = state.set && state.set[v.state.name];
    // All exists only where the variable offers it.
    if (want === undefined || (want === '$__all' && !v.state.includeAll)) continue;
    tag = { dashboard: dash.file, state: state.name, phase: 'set', variable: v.state.name };
    if (want === '$__all') v.changeValueTo('$__all', 'All');
    else if (v instanceof scenes.TextBoxVariable) v.setValue(want[0]);
    else v.changeValueTo(v.state.isMulti ? want : want[0], v.state.isMulti ? want : want[0]);
    await settle(b.scene);
  }
  // The values every variable ended on; then each panel's queries, one panel
  // at a time so each record names its panel.
  const variables = b.set.state.variables.map((v) => ({
    name: v.state.name, type: v.state.type, value: v.state.value, options: (v.state.options || []).map((o) => o.value),
    isMulti: Boolean(v.state.isMulti), includeAll: Boolean(v.state.includeAll), allValue: v.state.allValue ?? null,
    query: typeof v.state.query === 'string' ? v.state.query : null,
    dependsOn: [...(v.variableDependency ? v.variableDependency.getNames() : [])],
  }));
  const panels = [...b.items, ...expandRepeats(b)];
  const targets = [];
  for (const p of panels) {
    const runner = p.item.state.body.state.$data;
    tag = { dashboard: dash.file, state: state.name, phase: 'panel', panel: p.key };
    // Activation runs the queries, as a panel's first render does.
    const off = runner.activate();
    await settle(b.scene, [runner]);
    off();
    for (const t of p.panel.targets || []) targets.push({ panel: p.key, refId: `${p.key}/${t.refId}`, local: p.local || null, template: t.expr, datasource: (t.datasource || p.panel.datasource || {}).type });
  }
  deactivate();
  return { dashboard: dash.file, state: state.name, variables, targets, sent: sent.splice(0) };
}

(async () => {
  const results = [];
  for (const dash of input.dashboards) {
    for (const state of input.states) results.push(await runState(dash, state));
  }
  process.stdout.write(JSON.stringify(results));
})().catch((e) => {
  console.error(e && e.stack || e);
  process.exit(1);
});
