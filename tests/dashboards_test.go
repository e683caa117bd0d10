package tests

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/dashboards"
	"github.com/winobs/winobs/rules"
)

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
	ds, err := dashboards.Build(cfg)
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
	grafanaVar  = regexp.MustCompile(`\$\{?([A-Za-z_]\w*)\}?`)
	labelValues = regexp.MustCompile(`^label_values\((.*), *(\w+)\)$`)
)

// substituteVariables replaces Grafana variables as Grafana would: interval
// variables by a duration, the others by a value.
func substituteVariables(expr string) string {
	return grafanaVar.ReplaceAllStringFunc(expr, func(m string) string {
		if strings.HasPrefix(strings.Trim(m, "${}"), "__") {
			return "5m"
		}
		return "x"
	})
}

// TestDashboardPromQLSelectsKnownMetrics: every PromQL query parses once
// Grafana's variables are substituted, and selects only metrics that
// windows_exporter 0.31.8, kube-state-metrics or our rules produce. A misspelt
// or renamed metric fails here instead of leaving a panel empty.
func TestDashboardPromQLSelectsKnownMetrics(t *testing.T) {
	known := knownMetrics(t, loadRenderedGroups(t))
	for _, q := range dashboardQueries(t) {
		if q.datasource != "prometheus" {
			continue
		}
		expr := q.expr
		if m := labelValues.FindStringSubmatch(expr); m != nil {
			expr = m[1]
		}
		e, err := promqlParser.ParseExpr(substituteVariables(expr))
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

var (
	streamSelector = regexp.MustCompile(`\{([^{}]*)\}`)
	streamMatcher  = regexp.MustCompile(`([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)\s*"([^"]*)"`)
	labelFilter    = regexp.MustCompile(`\|\s*([A-Za-z_]\w*)\s*(?:=~|!~|!=|==|>=|<=|=|>|<)`)
	grouping       = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)
	unsupported    = regexp.MustCompile(`\|\s*(?:logfmt|pattern|regexp|unpack|line_format|label_format|unwrap)\b`)
)

// TestDashboardLogQLUsesEventLineFields: every LogQL query selects streams by
// labels the agents set, keeps to simple standard LogQL, and filters or
// groups only by stream labels or fields the Alloy event line has.
func TestDashboardLogQLUsesEventLineFields(t *testing.T) {
	for _, q := range dashboardQueries(t) {
		if q.datasource == "loki" {
			checkLogQL(t, q.where, q.expr)
		}
	}
}

// TestLokiRulesUseEventLineFields applies the same check to the Loki ruler's
// event log alerts.
func TestLokiRulesUseEventLineFields(t *testing.T) {
	cfg, _ := config.Load("")
	for _, r := range rules.LokiGroups(cfg).Groups[0].Rules {
		checkLogQL(t, r.Alert+"/"+r.Labels["service"], r.Expr)
	}
}

func checkLogQL(t *testing.T, where, expr string) {
	t.Helper()
	cfg, _ := config.Load("")
	q := dashboardQuery{where: where, expr: expr}
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		expr = m[1] + " by (" + m[2] + ")" // the variable's label must be a stream label
	}
	sel := streamSelector.FindStringSubmatch(expr)
	if sel == nil {
		t.Errorf("%s: no stream selector in %q", q.where, q.expr)
		return
	}
	var stream, fields []string
	for _, m := range streamMatcher.FindAllStringSubmatch(sel[1], -1) {
		if m[1] == "job" {
			switch m[2] {
			case cfg.Logs.EventsJob:
				stream, fields = eventStreamLabels, eventLineFields
			case cfg.Logs.PodLogsJob:
				stream = podLogStreamLabels
			}
		}
	}
	// With cluster.name set, Alloy (external_labels) and the shipper (its
	// labels) add the cluster label to every stream.
	stream = append(slices.Clone(stream), cfg.Cluster.Label)
	if stream == nil {
		t.Errorf("%s: %q selects no winobs stream by job", q.where, q.expr)
		return
	}
	for _, m := range streamMatcher.FindAllStringSubmatch(sel[1], -1) {
		if !slices.Contains(stream, m[1]) {
			t.Errorf("%s: stream label %q is not set by the agents", q.where, m[1])
		}
	}
	if unsupported.MatchString(expr) {
		t.Errorf("%s: %q uses more than stream selectors, line filters, | json and label filters", q.where, q.expr)
	}
	usable := stream
	if strings.Contains(expr, "| json") {
		usable = append(slices.Clone(stream), fields...)
	}
	var names []string
	for _, m := range labelFilter.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
	}
	for _, m := range grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			names = append(names, strings.TrimSpace(l))
		}
	}
	for _, n := range names {
		if !slices.Contains(usable, n) {
			t.Errorf("%s: %q uses %q, which is neither a stream label nor an event line field", q.where, q.expr, n)
		}
	}
}

// TestPodDashboardQueriesAreTested: the pod dashboard's query-time joins
// (working set, CPU, limits, network) are not records, so their exact values
// are tested as expressions in records.yaml. This keeps those expressions
// equal to what the dashboard runs, with $namespace=shop, $pod=.* and
// $__rate_interval=5m.
func TestPodDashboardQueriesAreTested(t *testing.T) {
	tested := map[string]bool{}
	for _, tg := range loadTestFile(t, "records.yaml").Tests {
		for _, et := range tg.PromqlExprTests {
			if len(et.ExpSamples) > 0 {
				tested[et.Expr] = true
			}
		}
	}
	fill := strings.NewReplacer("$namespace", "shop", "$pod", ".*", "$__rate_interval", "5m")
	joins := 0
	for _, q := range dashboardQueries(t) {
		if !strings.HasPrefix(q.where, dashboards.PodsUID+"/") || strings.HasPrefix(q.expr, "label_values(") || strings.Contains(q.expr, `cluster="$cluster"`) ||
			!strings.Contains(q.expr, rules.ContainerInfo+`{namespace="$namespace"`) ||
			!strings.Contains(q.expr, "group_left") && !strings.Contains(q.expr, "_resource_") {
			continue
		}
		joins++
		if e := fill.Replace(q.expr); !tested[e] {
			t.Errorf("%s: no exact-value case in records.yaml for\n%s", q.where, e)
		}
	}
	if joins < 5 {
		t.Errorf("found %d query-time joins in the pod dashboard, want at least 5", joins)
	}
}
