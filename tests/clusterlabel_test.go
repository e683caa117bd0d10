package tests

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/winobs/winobs/gen/config"
)

// TestClusterLabelThroughGrafana: a cluster named in the config, and the
// three ways a Prometheus holds it: on the series (a shared store, or a
// Prometheus that relabels it on), only as an external label (how
// kube-prometheus-stack users set it: local series do not carry it), or not
// at all. Every dashboard is opened through Grafana's own code fresh and
// from a link carrying var-cluster (a shared link, a drill-down from the
// Event log dashboard, whose cluster comes from Loki), and what every
// Prometheus query selects is read off what Grafana sent: the chosen
// cluster's series where the series carry the label, the unlabelled series
// where they do not. The Loki queries select the agents' streams, which
// carry the cluster whatever Prometheus holds.
func TestClusterLabelThroughGrafana(t *testing.T) {
	cfg := config.Default()
	cfg.Cluster.Name = "aks-prod-weu"
	label := cfg.Cluster.Label
	other := "aks-prod-neu"
	dashboards := renderedDashboards(t, cfg)
	base := map[string][]string{}
	for k, v := range harnessLabels {
		if k != label {
			base[k] = v[:1]
		}
	}
	states := []harnessState{
		{Name: "opened"},
		{Name: "from a link", URL: "var-cluster=" + cfg.Cluster.Name},
		{Name: "from a link to the other cluster", URL: "var-cluster=" + other},
	}
	// The cluster each state asks for: the saved one, or the link's.
	chosen := map[string][2]string{
		"opened":                           {cfg.Cluster.Name, other},
		"from a link":                      {cfg.Cluster.Name, other},
		"from a link to the other cluster": {other, cfg.Cluster.Name},
	}
	lokiLabels := map[string][]string{label: {cfg.Cluster.Name, other}}
	backend := backendReplacements(t)
	for _, tc := range []struct {
		name     string
		onSeries bool
	}{
		{"on the series", true},
		{"only an external label", false},
		{"absent", false},
	} {
		lbls := maps.Clone(base)
		if tc.onSeries {
			lbls[label] = []string{cfg.Cluster.Name, other}
		}
		results := grafanaHarness(t, harnessInput{Dashboards: dashboards, Labels: lbls, LokiLabels: lokiLabels, States: states})
		for _, r := range results {
			where := fmt.Sprintf("cluster %s, %s: %s", tc.name, r.State, r.Dashboard)
			var value any
			for _, v := range r.Variables {
				if v.Name == "cluster" {
					value = v.Value
				}
			}
			checked := 0
			for _, s := range r.Sent {
				if s.Kind != "target" {
					continue
				}
				ms, err := querySelectors(s.Datasource, replaceBackend(s.Expr, backend[s.Datasource]))
				if err != nil {
					t.Errorf("%s: %s does not parse: %v", where, s.Expr, err)
					continue
				}
				for _, m := range ms {
					if m.Name != label {
						continue
					}
					checked++
					if msg := showsCluster(m, s.Datasource, tc.onSeries, chosen[r.State][0], chosen[r.State][1]); msg != "" {
						t.Errorf("%s: $cluster = %v, %s sends %s: %s", where, value, s.Datasource, m, msg)
					}
				}
			}
			if checked == 0 {
				t.Errorf("%s: no query selects on %s", where, label)
			}
		}
	}
}

// showsCluster says what is wrong with a cluster matcher for the chosen
// cluster name: Loki's streams always carry the cluster; Prometheus' series
// carry it (then the other cluster's are not shown), or none does (then the
// unlabelled series, this Prometheus' own, are).
func showsCluster(m *labels.Matcher, ds string, onSeries bool, name, other string) string {
	want := map[string]bool{name: true, other: false}
	if ds == "prometheus" && !onSeries {
		want = map[string]bool{"": true}
	}
	var wrong []string
	for _, v := range slices.Sorted(maps.Keys(want)) {
		if m.Matches(v) != want[v] {
			wrong = append(wrong, fmt.Sprintf("selects %q: %v, want %v", v, m.Matches(v), want[v]))
		}
	}
	return strings.Join(wrong, "; ")
}
