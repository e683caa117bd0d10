package dashboards_test

//lint:file-ignore SA1019 The classic dashboards are what these tests read, as Grafana does.

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/dashboards"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/logqlcheck"
	"github.com/winobs/winobs/internal/testkit/rulecheck"
)

// The queries of every dashboard, classic and v2, read from their JSON as
// Grafana reads them, checked against what the exporters, the rules and the
// agents produce.

var promqlParser = parser.NewParser(parser.Options{})

// dashboardQuery is one query found in a dashboard: a panel target or a
// variable's definition.
type dashboardQuery struct {
	where, datasource, expr string
}

// dashboardQueries walks the dashboards' JSON, as Grafana would read it, for
// every target and query variable, for a single- and a multi-cluster config.
func dashboardQueries(t *testing.T) []dashboardQuery {
	var out []dashboardQuery
	for _, cluster := range []string{"", "lab"} {
		cfg, err := config.Load("")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Cluster.Name = cluster
		if cluster != "" { // service names with regex metacharacters reach PromQL quoted
			cfg.Alerts.NodeServices.Services = config.Services{"kubelet", "containerd", "Hyper-V.Service_1"}
		}
		out = append(out, dashboardQueriesFor(t, cfg)...)
	}
	return out
}

// dashboardQueriesFor returns the queries of the dashboards built from cfg.
func dashboardQueriesFor(t *testing.T, cfg *config.Config) []dashboardQuery {
	t.Helper()
	ds, err := dashboards.Build(view.Of(cfg).Dashboards)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ds)
	var parsed []struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource struct {
					Type string `json:"type"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Query      any    `json:"query"`
				Datasource struct {
					Type string `json:"type"`
				} `json:"datasource"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &parsed); err != nil {
		t.Fatal(err)
	}
	var out []dashboardQuery
	for _, d := range parsed {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				out = append(out, dashboardQuery{d.UID + "/" + p.Title, tg.Datasource.Type, tg.Expr})
			}
		}
		for _, v := range d.Templating.List {
			if q, ok := v.Query.(string); ok && v.Type == "query" {
				out = append(out, dashboardQuery{d.UID + "/$" + v.Name, v.Datasource.Type, q})
			}
		}
	}
	classic := len(out)
	if classic < 20 {
		t.Fatalf("found only %d dashboard queries", len(out))
	}
	// The Grafana 13 form of the same dashboards goes through the same checks.
	for _, d := range ds {
		m, err := dashboards.V2(d)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(m)
		var v2 struct {
			Spec struct {
				Elements map[string]struct {
					Spec struct {
						Title string `json:"title"`
						Data  struct {
							Spec struct {
								Queries []struct {
									Spec struct{ Query v2Query } `json:"spec"`
								} `json:"queries"`
							} `json:"spec"`
						} `json:"data"`
					} `json:"spec"`
				} `json:"elements"`
				Variables []struct {
					Kind string `json:"kind"`
					Spec struct {
						Name  string          `json:"name"`
						Query json.RawMessage `json:"query"` // a string for custom and text variables
					} `json:"spec"`
				} `json:"variables"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(raw, &v2); err != nil {
			t.Fatal(err)
		}
		for _, el := range v2.Spec.Elements {
			for _, q := range el.Spec.Data.Spec.Queries {
				out = append(out, dashboardQuery{"v2/" + *d.Uid + "/" + el.Spec.Title, q.Spec.Query.Group, q.Spec.Query.Spec.Expr})
			}
		}
		for _, v := range v2.Spec.Variables {
			if v.Kind == "QueryVariable" {
				var q v2Query
				if err := json.Unmarshal(v.Spec.Query, &q); err != nil {
					t.Fatal(err)
				}
				out = append(out, dashboardQuery{"v2/" + *d.Uid + "/$" + v.Spec.Name, q.Group, q.Spec.Legacy})
			}
		}
	}
	if len(out) != 2*classic {
		t.Fatalf("%d classic queries, %d in the v2 resources", classic, len(out)-classic)
	}
	return out
}

// v2Query is a dashboard.grafana.app/v2 DataQuery: a panel query's text is
// in expr, a variable's in __legacyStringValue.
type v2Query struct {
	Group string `json:"group"`
	Spec  struct {
		Expr   string `json:"expr"`
		Legacy string `json:"__legacyStringValue"`
	} `json:"spec"`
}

var (
	grafanaVar  = regexp.MustCompile(`\$\{([A-Za-z_]\w*)(?::\w+)?\}|\$([A-Za-z_]\w*)`)
	labelValues = regexp.MustCompile(`^label_values\((.*), *(\w+)\)$`)
)

// substituteVariables replaces Grafana variables as Grafana would: interval
// variables by a duration, the others by a value.
func substituteVariables(expr string) string {
	return grafanaVar.ReplaceAllStringFunc(expr, func(m string) string {
		if strings.HasPrefix(strings.TrimLeft(m, "${"), "__") {
			return "5m"
		}
		return "x"
	})
}

// parsePromQL parses a dashboard's PromQL as Prometheus receives it: a
// label_values() variable's selector, Grafana's variables substituted.
func parsePromQL(expr string) (parser.Expr, error) {
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		expr = m[1]
	}
	return promqlParser.ParseExpr(substituteVariables(expr))
}

// TestDashboardPromQLSelectsKnownMetrics: every PromQL query parses once
// Grafana's variables are substituted, and selects only metrics that
// windows_exporter 0.31.8, kube-state-metrics or our rules produce. A misspelt
// or renamed metric fails here instead of leaving a panel empty.
func TestDashboardPromQLSelectsKnownMetrics(t *testing.T) {
	known := fixture.KnownMetrics(t)
	groups, err := rules.Build(view.Of(config.Default()).Rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				known[r.Record] = "winobs record"
			}
		}
	}
	for _, q := range dashboardQueries(t) {
		if q.datasource != "prometheus" {
			continue
		}
		e, err := parsePromQL(q.expr)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", q.where, q.expr, err)
			continue
		}
		for _, vs := range parser.ExtractSelectors(e) {
			for _, m := range vs {
				if _, ok := known[m.Value]; m.Name == model.MetricNameLabel && !ok {
					t.Errorf("%s: selects unknown metric %q", q.where, m.Value)
				}
			}
		}
	}
}

// TestDashboardLogQLUsesEventLineFields: every LogQL query selects streams by
// labels the agents set, keeps to simple standard LogQL, and filters or
// groups only by stream labels or fields the Alloy event line has.
func TestDashboardLogQLUsesEventLineFields(t *testing.T) {
	cfg := config.Default()
	for _, q := range dashboardQueries(t) {
		if q.datasource == "loki" {
			logqlcheck.Check(t, cfg, q.where, q.expr)
		}
	}
}

// TestDashboardQueriesSelectTheCluster: with cluster.name set, every
// PromQL selector of every dashboard query selects the cluster variable or
// no cluster label (=~`${cluster:regex}|`), and every LogQL stream selector
// the cluster variable exactly (except the cluster variable's own query).
func TestDashboardQueriesSelectTheCluster(t *testing.T) {
	cfg := config.Default()
	// A cluster label other than the default proves it is read from the config.
	cfg.Cluster.Name, cfg.Cluster.Label = "lab", "k8s_cluster"
	label := cfg.Cluster.Label
	const sentinel = "__cluster__"
	for _, q := range dashboardQueriesFor(t, cfg) {
		expr := strings.ReplaceAll(strings.ReplaceAll(q.expr, "${cluster:regex}", sentinel), "$cluster", sentinel)
		if m := labelValues.FindStringSubmatch(expr); m != nil {
			if m[2] == label {
				continue // the cluster variable lists the clusters
			}
			expr = m[1]
		}
		if q.datasource == "loki" {
			for _, sel := range logqlcheck.StreamSelector.FindAllStringSubmatch(expr, -1) {
				if !strings.Contains(sel[1], label+`="`+sentinel+`"`) {
					t.Errorf("%s: stream selector {%s} does not select %s=\"$cluster\"", q.where, sel[1], label)
				}
			}
			continue
		}
		e, err := promqlParser.ParseExpr(substituteVariables(expr))
		if err != nil {
			t.Fatalf("%s: %v", q.where, err)
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			for _, m := range vs.LabelMatchers {
				if m.Name == label && m.Type == labels.MatchRegexp && m.Value == sentinel+"|" {
					return nil
				}
			}
			t.Errorf("%s: %s does not select %s=~`${cluster:regex}|`", q.where, vs, label)
			return nil
		})
	}
}

// TestAlertThresholdsAreOnTheirPanels: every alert that compares a record
// with a threshold has a panel that shows that record with that threshold,
// both read from the one alert config. Read from the built rules and the
// built dashboards, so an alert added without its panel fails here.
func TestAlertThresholdsAreOnTheirPanels(t *testing.T) {
	cfg := config.Default()
	groups, err := rules.Build(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	type shown struct {
		record string
		value  float64
	}
	var want []shown
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			e, err := promqlParser.ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, th := range rulecheck.RecordThresholds(e) {
				want = append(want, shown{th.Record, th.Value})
			}
		}
	}
	if len(want) < 5 {
		t.Fatalf("found %d record thresholds in the alerts: %v", len(want), want)
	}
	ds, err := dashboards.Build(view.Of(cfg).Dashboards)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ds)
	type steps struct {
		Steps []struct{ Value *float64 }
	}
	var parsed []struct {
		Panels []struct {
			Targets     []struct{ Expr string }
			FieldConfig struct {
				Defaults  struct{ Thresholds steps }
				Overrides []struct {
					Properties []struct {
						ID    string `json:"id"`
						Value any
					}
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &parsed); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		found := false
		for _, d := range parsed {
			for _, p := range d.Panels {
				queries := false
				for _, tg := range p.Targets {
					queries = queries || strings.Contains(tg.Expr, w.record)
				}
				all := []steps{p.FieldConfig.Defaults.Thresholds}
				for _, o := range p.FieldConfig.Overrides {
					for _, prop := range o.Properties {
						var st steps
						if b, err := json.Marshal(prop.Value); prop.ID == "thresholds" && err == nil && json.Unmarshal(b, &st) == nil {
							all = append(all, st)
						}
					}
				}
				for _, st := range all {
					for _, step := range st.Steps {
						found = found || queries && step.Value != nil && *step.Value == w.value
					}
				}
			}
		}
		if !found {
			t.Errorf("no panel shows %s with the alert's threshold %g", w.record, w.value)
		}
	}
}

// grafanaInterpolation is Grafana's own variable pattern (@grafana/scenes
// 8.19.0's VARIABLE_REGEX: $name, [[name]], [[name:format]], ${name},
// ${name.field}, ${name["key"]}, ${name[0]}, ${name:format}), applied to
// query text before a data source sees it; tests/grafana_test.go holds it to
// the scenes code.
var grafanaInterpolation = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)((?:\.[^:^{}\[\]]+|\["[^"]*"\]|\['[^']*'\]|\[[^\]"']*\])*)(?::([^}]+))?\}`)

// Config values reach query text as literals Grafana cannot touch: a job
// named like a variable ($instance, ${__user.login}, [[pod]]) or a service
// with a '$' (SQL Server's MSSQL$NAME) is not interpolated, and the
// query languages read the value back exactly.
func TestConfigValuesSurviveGrafanaInterpolation(t *testing.T) {
	cfg := config.Default()
	cfg.Cluster.Name = "lab"
	cfg.WindowsExporter.Job = "eu$instance"
	cfg.KubeStateMetrics.Job = "${__user.login}"
	cfg.Logs.EventsJob = "ev[[pod]]"
	cfg.Logs.PodLogsJob = "$__all"
	cfg.Alerts.NodeServices.Services = config.Services{"kubelet", "MSSQL$SQLEXPRESS"}
	own := map[string]bool{"cluster": true, "instance": true, "namespace": true, "pod": true, "node": true,
		"channel": true, "container": true, "container_id": true, "level": true, "event_id": true, "search": true, "__rate_interval": true, "__interval": true, "__range": true, "__auto": true}
	jobs := map[string]bool{"eu$instance": true, "${__user.login}": true, "ev[[pod]]": true, "$__all": true}
	seen := map[string]bool{}
	for _, q := range dashboardQueriesFor(t, cfg) {
		for _, m := range grafanaInterpolation.FindAllStringSubmatch(q.expr, -1) {
			if name := m[1] + m[2] + m[4]; !own[name] {
				t.Errorf("%s: Grafana would interpolate %q in %s", q.where, m[0], q.expr)
			}
		}
		if q.datasource != "prometheus" {
			continue
		}
		e, err := parsePromQL(q.expr)
		if err != nil {
			t.Fatalf("%s: %q: %v", q.where, q.expr, err)
		}
		for _, vs := range parser.ExtractSelectors(e) {
			for _, m := range vs {
				switch {
				case m.Name == "job" && !jobs[m.Value]:
					t.Errorf("%s: job read back as %q", q.where, m.Value)
				case m.Name == "job":
					seen[m.Value] = true
				case m.Name == "name" && strings.Contains(m.Value, "MSSQL") && !m.Matches("MSSQL$SQLEXPRESS"):
					t.Errorf("%s: the service regex %q does not match MSSQL$SQLEXPRESS", q.where, m.Value)
				}
			}
		}
	}
	for _, j := range []string{"eu$instance", "${__user.login}"} {
		if !seen[j] {
			t.Errorf("no PromQL query selects job %q", j)
		}
	}
}
