package tests

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/gen/config"
)

// TestMultiClusterDashboardsShowEachCluster: one Prometheus holds two
// clusters' series (the second configuration: its cluster label, job names
// and records; the same node and pod names in both, as separate clusters
// often have). Opened as Grafana opens them with either cluster chosen, every
// Prometheus panel of the multi-cluster dashboards shows data, and only the
// chosen cluster's.
func TestMultiClusterDashboardsShowEachCluster(t *testing.T) {
	cfg, err := config.Load(filepath.Join("second", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"prod-eu", "staging"}
	var specs []clusterSpec
	for _, name := range names {
		specs = append(specs, clusterSpec{nodes: 3, containers: 4, exporterJob: cfg.WindowsExporter.Job, ksmJob: cfg.KubeStateMetrics.Job,
			clusterLabel: cfg.Cluster.Label, clusterName: name})
	}
	rb := newBench(t, dashEnd, specs...)
	records := rb.load(t, filepath.Join("second", "bundle", "rules", "winobs-windows-records.yaml"))
	for ts := dashEnd.Add(-dashWindow - 6*time.Minute); !ts.After(dashEnd); ts = ts.Add(30 * time.Second) {
		rb.eval(t, records, ts)
	}
	r := dashRunner{rb}
	dashboards := filepath.Join("second", "bundle", "dashboards", "*.json")
	vars, panels := readDashboards(t, dashboards)
	if len(panels) < 20 {
		t.Fatalf("only %d Prometheus panels in %s", len(panels), dashboards)
	}
	t.Logf("%d Prometheus panels, each opened with %q chosen", len(panels), names)
	for _, name := range names {
		// Each dashboard's variables, resolved once per chosen cluster.
		vals := map[string]map[string]varValue{}
		for title, vs := range vars {
			vals[title], _ = r.resolve(t, vs, map[string]string{"cluster": name})
		}
		for _, p := range panels {
			seen := map[string]bool{}
			for i, e := range p.exprs {
				for c := range r.clusters(t, r.substitute(e, vals[p.dashboard]), p.instant[i], cfg.Cluster.Label) {
					seen[c] = true
				}
			}
			switch got := slices.Sorted(maps.Keys(seen)); {
			case len(got) == 0:
				t.Errorf("cluster %s chosen: %s / %s shows no data", name, p.dashboard, p.title)
			case len(got) > 1 || (got[0] != name && got[0] != ""):
				t.Errorf("cluster %s chosen: %s / %s shows the series of %q", name, p.dashboard, p.title, got)
			}
		}
	}
}

// clusters runs expr as Grafana would and returns the values of label in
// its result ("" for a series without it, such as a scalar or a sum over
// the chosen cluster).
func (r dashRunner) clusters(t testing.TB, expr string, instant bool, label string) map[string]bool {
	out := map[string]bool{}
	r.query(t, expr, instant, func(_ time.Duration, v parser.Value) {
		switch v := v.(type) {
		case promql.Vector:
			for _, s := range v {
				out[s.Metric.Get(label)] = true
			}
		case promql.Matrix:
			for _, s := range v {
				out[s.Metric.Get(label)] = true
			}
		case promql.Scalar:
			out[""] = true
		}
	})
	return out
}
