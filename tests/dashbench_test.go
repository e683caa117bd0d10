package tests

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// The dashboard benchmark opens every dashboard as Grafana does on the
// synthetic cluster: query variables resolved in order from their
// label_values() queries, the saved value, else All where the variable
// includes it, else the first value selected (resolve), Grafana's
// variables substituted as its Prometheus data source formats them, and
// every Prometheus target run through Prometheus' engine (instant targets at
// the end, the others over the last 30 minutes at Grafana's step). The
// data source's scrape interval is 30 s, as the data's, so $__interval is
// 30s and $__rate_interval 2m.
const (
	dashWindow       = 30 * time.Minute
	dashStep         = 30 * time.Second
	dashRateInterval = "2m"
	dashReps         = 5 // each query's time is the median of this many runs
)

// dashEnd is the end of the synthetic data and of the dashboards' window.
var dashEnd = time.Unix(0, 0).Add(40 * time.Minute)

// grafanaDashboard is what the benchmark reads of a classic dashboard.
type grafanaDashboard struct {
	Title      string         `json:"title"`
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []grafanaVar `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	Title      string          `json:"title"`
	Type       string          `json:"type"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []struct {
		Expr       string          `json:"expr"`
		Instant    bool            `json:"instant"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

type grafanaVar struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource json.RawMessage `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Current    struct {
		Value json.RawMessage `json:"value"`
	} `json:"current"`
}

// saved is the variable's saved value, if it has one: a list, or All.
func (v grafanaVar) saved() (values []string, all, ok bool) {
	if len(v.Current.Value) == 0 || string(v.Current.Value) == "null" {
		return nil, false, false
	}
	var one string
	if json.Unmarshal(v.Current.Value, &one) == nil {
		values = []string{one}
	} else if json.Unmarshal(v.Current.Value, &values) != nil {
		return nil, false, false
	}
	if len(values) == 1 && values[0] == "$__all" {
		return nil, true, true
	}
	return values, false, len(values) > 0 && values[0] != ""
}

// isLoki tells a Loki data source reference from a Prometheus one.
func isLoki(ds json.RawMessage) bool { return strings.Contains(strings.ToLower(string(ds)), "loki") }

// dashPanel is one panel's Prometheus queries.
type dashPanel struct {
	dashboard, title string
	exprs            []string
	instant          []bool
}

func readDashboards(b testing.TB, glob string) (map[string][]grafanaVar, []dashPanel) {
	b.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		b.Fatalf("no dashboards at %s", glob)
	}
	vars := map[string][]grafanaVar{}
	var panels []dashPanel
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var d grafanaDashboard
		if err := json.Unmarshal(raw, &d); err != nil {
			b.Fatalf("%s: %v", f, err)
		}
		vars[d.Title] = d.Templating.List
		var walk func(ps []grafanaPanel)
		walk = func(ps []grafanaPanel) {
			for _, p := range ps {
				walk(p.Panels)
				dp := dashPanel{dashboard: d.Title, title: p.Title}
				for _, t := range p.Targets {
					ds := t.Datasource
					if len(ds) == 0 {
						ds = p.Datasource
					}
					if t.Expr != "" && !isLoki(ds) {
						dp.exprs = append(dp.exprs, t.Expr)
						dp.instant = append(dp.instant, t.Instant)
					}
				}
				if len(dp.exprs) > 0 {
					panels = append(panels, dp)
				}
			}
		}
		walk(d.Panels)
	}
	return vars, panels
}

// varValue is a selected variable: one value, several (formatted as a
// regex), or All with a custom all value.
type varValue struct {
	values  []string
	multi   bool
	allText string
}

// format writes the value as Grafana's Prometheus data source does.
func (v varValue) format() string {
	switch {
	case v.allText != "":
		return v.allText
	case !v.multi && len(v.values) == 1:
		return v.values[0]
	case len(v.values) == 0:
		return ""
	}
	quoted := make([]string, len(v.values))
	for i, s := range v.values {
		// Regex-escaped, then written into a PromQL string: backslashes doubled.
		quoted[i] = strings.ReplaceAll(regexp.QuoteMeta(s), `\`, `\\`)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return "(" + strings.Join(quoted, "|") + ")"
}

var (
	grafanaVarRef = regexp.MustCompile(`\$\{(\w+)(?::(\w+))?\}|\$(\w+)|\[\[(\w+)\]\]`)
	// grafanaRegexEscape is what Grafana's regex format escapes
	// (escapeRegex in @grafana/scenes).
	grafanaRegexEscape = regexp.MustCompile(`[\\^$*+?.()|\[\]{}/]`)
	labelValuesArg     = regexp.MustCompile(`(?s)^label_values\((.*),\s*(\w+)\)$`)
)

// dashRunner runs a dashboard's queries on the synthetic cluster.
type dashRunner struct{ rb *ruleBench }

func (r dashRunner) substitute(expr string, vals map[string]varValue) string {
	return grafanaVarRef.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVarRef.FindStringSubmatch(m)
		name := sub[1] + sub[3] + sub[4]
		switch name {
		case "__rate_interval":
			return dashRateInterval
		case "__interval":
			return dashStep.String()
		case "__range":
			return "30m"
		case "__range_s":
			return "1800"
		}
		if v, ok := vals[name]; ok {
			if sub[2] == "regex" && len(v.values) == 1 {
				return grafanaRegexEscape.ReplaceAllString(v.values[0], `\$0`)
			}
			return v.format()
		}
		return m // unknown variables are left as they are, as Grafana does
	})
}

// exec runs expr as Grafana would and returns the engine's wall time and
// whether any series came back.
func (r dashRunner) exec(b testing.TB, expr string, instant bool) (time.Duration, bool) {
	var took time.Duration
	var data bool
	r.query(b, expr, instant, func(d time.Duration, v parser.Value) {
		took = d
		switch v := v.(type) {
		case promql.Vector:
			data = len(v) > 0
		case promql.Matrix:
			data = len(v) > 0
		case promql.Scalar:
			data = true
		}
	})
	return took, data
}

// query runs expr as Grafana would (instant at the end, else over the
// window at Grafana's step) and hands the engine's wall time and the result
// to use before the query is closed.
func (r dashRunner) query(b testing.TB, expr string, instant bool, use func(time.Duration, parser.Value)) {
	b.Helper()
	ctx := r.rb.suite.Context()
	var q promql.Query
	var err error
	if instant {
		q, err = r.rb.engine.NewInstantQuery(ctx, r.rb.suite.Queryable(), nil, expr, dashEnd)
	} else {
		q, err = r.rb.engine.NewRangeQuery(ctx, r.rb.suite.Queryable(), nil, expr, dashEnd.Add(-dashWindow), dashEnd, dashStep)
	}
	if err != nil {
		b.Fatalf("%q: %v", expr, err)
	}
	defer q.Close()
	start := time.Now()
	res := q.Exec(ctx)
	took := time.Since(start)
	if res.Err != nil {
		b.Fatalf("%q: %v", expr, res.Err)
	}
	use(took, res.Value)
}

// median runs expr dashReps times.
func (r dashRunner) median(b testing.TB, expr string, instant bool) (time.Duration, bool) {
	var ds []time.Duration
	var data bool
	for range dashReps {
		d, ok := r.exec(b, expr, instant)
		ds = append(ds, d)
		data = ok
	}
	return median(ds), data
}

// resolve selects every query variable of a dashboard in order: the
// label_values() query is run (its cost counted, as Grafana's series lookup
// is part of opening the dashboard), its values sorted, and the value taken
// as Grafana opens a dashboard (dashboard-scene: the saved value if it is
// among the options, else All where the variable includes it, else the
// first), or the user's choice where chosen names one.
func (r dashRunner) resolve(b testing.TB, vars []grafanaVar, chosen map[string]string) (map[string]varValue, time.Duration) {
	vals := map[string]varValue{}
	var cost time.Duration
	for _, v := range vars {
		if v.Type != "query" || isLoki(v.Datasource) {
			switch c, ok := chosen[v.Name]; {
			case v.Type == "query" && ok: // a Loki variable chosen (the cluster)
				vals[v.Name] = varValue{values: []string{c}}
			case v.Type == "query": // a Loki variable: everything
				vals[v.Name] = varValue{allText: ".*"}
			}
			continue
		}
		var query string
		if err := json.Unmarshal(v.Query, &query); err != nil {
			var q struct{ Query string }
			if err := json.Unmarshal(v.Query, &q); err != nil {
				b.Fatalf("variable %s: %s", v.Name, v.Query)
			}
			query = q.Query
		}
		m := labelValuesArg.FindStringSubmatch(r.substitute(query, vals))
		if m == nil {
			b.Fatalf("variable %s: only label_values(selector, label) is read here: %s", v.Name, query)
		}
		expr := "group by (" + m[2] + ") (" + m[1] + ")"
		d, _ := r.median(b, expr, true)
		cost += d
		q, err := r.rb.engine.NewInstantQuery(r.rb.suite.Context(), r.rb.suite.Queryable(), nil, expr, dashEnd)
		if err != nil {
			b.Fatal(err)
		}
		res := q.Exec(r.rb.suite.Context())
		var options []string
		for _, s := range res.Value.(promql.Vector) {
			if val := s.Metric.Get(m[2]); val != "" {
				options = append(options, val)
			}
		}
		q.Close()
		slices.Sort(options)
		savedValues, savedAll, hasSaved := v.saved()
		if c, ok := chosen[v.Name]; ok {
			savedValues, savedAll, hasSaved = []string{c}, false, true
		}
		if hasSaved && !savedAll && !slices.Contains(options, savedValues[0]) {
			hasSaved = false // a saved value the data no longer has: Grafana falls back
		}
		switch {
		case hasSaved && !savedAll:
			vals[v.Name] = varValue{values: savedValues, multi: v.Multi}
		case (hasSaved && savedAll || v.IncludeAll) && v.AllValue != "":
			vals[v.Name] = varValue{allText: v.AllValue}
		case hasSaved && savedAll || v.IncludeAll:
			vals[v.Name] = varValue{values: options, multi: true}
		case len(options) > 0:
			vals[v.Name] = varValue{values: options[:1], multi: v.Multi}
		default:
			vals[v.Name] = varValue{}
		}
	}
	return vals, cost
}

// panelCost is one panel's engine time and whether it shows data.
type panelCost struct {
	set, dashboard, title string
	d                     time.Duration
	data                  bool
}

// run opens every dashboard of a set and returns its panels' costs and
// each dashboard's variables' cost.
func (r dashRunner) run(b testing.TB, set, glob string, chosen map[string]string) ([]panelCost, map[string]time.Duration) {
	vars, panels := readDashboards(b, glob)
	vals, varCost := map[string]map[string]varValue{}, map[string]time.Duration{}
	for title, vs := range vars {
		vals[title], varCost[title] = r.resolve(b, vs, chosen)
	}
	var out []panelCost
	for _, p := range panels {
		pc := panelCost{set: set, dashboard: p.dashboard, title: p.title}
		for i, e := range p.exprs {
			d, ok := r.median(b, r.substitute(e, vals[p.dashboard]), p.instant[i])
			pc.d += d
			pc.data = pc.data || ok
		}
		out = append(out, pc)
	}
	return out, varCost
}

// BenchmarkDashboardsVsKubePrometheusStack opens winobs's dashboards and
// kube-prometheus-stack's five Windows dashboards on the same synthetic
// cluster in the same run and reports the engine time of each (panels and
// variables), their ratio, the slowest panel of each and that ratio, and
// the panels without data. It fails when a winobs panel is empty.
func BenchmarkDashboardsVsKubePrometheusStack(b *testing.B) {
	rb := newBench(b, dashEnd)
	ours := rb.load(b, filepath.Join(manifests, "rules", "winobs-windows-records.yaml"))
	theirs := rb.load(b, kpsRules)
	// Every record over the window plus the lookback, as a ruler writes them.
	for ts := dashEnd.Add(-dashWindow - 6*time.Minute); !ts.After(dashEnd); ts = ts.Add(30 * time.Second) {
		rb.eval(b, ours, ts)
		rb.eval(b, theirs, ts)
	}
	r := dashRunner{rb}
	b.ResetTimer()
	for b.Loop() {
		oursP, oursV := r.run(b, "winobs", filepath.Join(manifests, "dashboards", "*.json"), nil)
		kpsP, kpsV := r.run(b, "kps", filepath.Join("..", "testdata", "kps-windows-dashboards", "*.json"), nil)
		b.StopTimer()
		report := func(panels []panelCost, vars map[string]time.Duration) (total, slowest time.Duration, empty []string) {
			per := map[string]time.Duration{}
			perN, perData := map[string]int{}, map[string]int{}
			for _, p := range panels {
				per[p.dashboard] += p.d
				perN[p.dashboard]++
				if p.data {
					perData[p.dashboard]++
				} else {
					empty = append(empty, p.dashboard+" / "+p.title)
				}
				total += p.d
				slowest = max(slowest, p.d)
			}
			var lines strings.Builder
			for _, d := range slices.Sorted(func(yield func(string) bool) {
				for k := range per {
					if !yield(k) {
						return
					}
				}
			}) {
				fmt.Fprintf(&lines, "\n  %-45s %2d of %2d panels with data  %8.2f ms panels  %6.2f ms variables", d, perData[d], perN[d],
					ms(per[d]), ms(vars[d]))
				total += vars[d]
			}
			b.Logf("%s:%s", panels[0].set, lines.String())
			return total, slowest, empty
		}
		ot, os, oe := report(oursP, oursV)
		kt, ks, ke := report(kpsP, kpsV)
		all := append(slices.Clone(oursP), kpsP...)
		slices.SortFunc(all, func(a, b panelCost) int { return cmp.Compare(b.d, a.d) })
		var slow strings.Builder
		for _, p := range all[:min(12, len(all))] {
			fmt.Fprintf(&slow, "\n  %8.2f ms  %-6s %s / %s", ms(p.d), p.set, p.dashboard, p.title)
		}
		b.Logf("slowest panels:%s", slow.String())
		b.Logf("kube-prometheus-stack panels without data: %d %v", len(ke), ke)
		b.Logf("winobs %.1f ms, kps %.1f ms: ratio %.2f; slowest panel winobs %.1f ms, kps %.1f ms: ratio %.2f",
			ms(ot), ms(kt), float64(ot)/float64(kt), ms(os), ms(ks), float64(os)/float64(ks))
		if len(oe) > 0 {
			b.Errorf("winobs panels without data: %v", oe)
		}
		b.ReportMetric(ms(ot), "winobs_ms")
		b.ReportMetric(ms(kt), "kps_ms")
		b.ReportMetric(float64(ot)/float64(kt), "ratio")
		b.ReportMetric(float64(os)/float64(ks), "slowest_ratio")
		b.StartTimer()
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
