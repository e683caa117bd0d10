// The Loki data source is not on npm (it lives in Grafana's app code), so
// this stand-in supplies the one thing of it a dashboard's queries depend on:
// the format function Loki's data source hands to the template service. It
// behaves as Grafana's loki/datasource.ts documents it: a variable that is
// neither multi nor includeAll is inserted with only ' escaped; otherwise each
// value is regex-escaped (\ and $^*{}[]+?.()| get a backslash, as Loki's
// regex grammar needs) and several are joined with |. Everything around it is
// Grafana's own: DataSourceWithBackend (runtime) builds the request and calls
// applyTemplateVariables, which calls the template service, which hands the
// text to scenes' interpolate.
'use strict';

const { DataSourceWithBackend } = require('@grafana/runtime');

function regularEscape(value) {
  return typeof value === 'string' ? value.replace(/'/g, "\\\\'") : value;
}

function regexEscape(value) {
  return typeof value === 'string'
    ? regularEscape(value.replace(/\\/g, '\\\\\\\\').replace(/[$^*{}\[\]+?.()|]/g, '\\\\$&'))
    : value;
}

function interpolateQueryExpr(value, variable) {
  if (!variable.multi && !variable.includeAll) return regularEscape(value);
  if (typeof value === 'string') return regexEscape(value);
  const escaped = value.map(regexEscape);
  return escaped.length === 1 ? escaped[0] : escaped.join('|');
}

const labelValues = /^label_values\((.*),\s*(\w+)\)$/s;

class LokiStandIn extends DataSourceWithBackend {
  constructor(settings, templateSrv, labels, record) {
    super(settings);
    this.templateSrv = templateSrv;
    this.labels = labels;
    this.record = record;
  }

  applyTemplateVariables(target, scopedVars) {
    return { ...target, expr: this.templateSrv.replace(target.expr, scopedVars, interpolateQueryExpr) };
  }

  // A label_values() variable: Grafana's Loki asks /loki/api/v1/label/<l>/values
  // with the interpolated selector as query=; recorded, answered from labels.
  async metricFindQuery(query, options) {
    const expr = this.templateSrv.replace(query, options && options.scopedVars, interpolateQueryExpr);
    const m = expr.match(labelValues);
    this.record({ kind: 'lokiLabelValues', variable: options && options.variable && options.variable.name, expr, label: m ? m[2] : null, match: m ? m[1] : null });
    return m ? (this.labels[m[2]] || []).map((text) => ({ text, value: text })) : [];
  }
}

module.exports = { LokiStandIn };
