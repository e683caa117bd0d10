package tests

//lint:file-ignore SA1019 The classic dashboard is the one the pod views are read from.

import (
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/dashboards"
	"github.com/winobs/winobs/rules"
)

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
	ds, err := dashboards.Build(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("$namespace", "shop", "$pod", ".*", "$__rate_interval", "5m")
	joins := 0
	for _, d := range ds {
		if *d.Uid != dashboards.PodsUID {
			continue
		}
		for _, pr := range d.Panels {
			if pr.Panel == nil {
				continue
			}
			for _, tg := range pr.Panel.Targets {
				q, ok := tg.(prometheus.Dataquery)
				if !ok || !strings.Contains(q.Expr, rules.ContainerInfo+`{namespace="$namespace"`) ||
					!strings.Contains(q.Expr, "group_left") && !strings.Contains(q.Expr, "_resource_") {
					continue
				}
				joins++
				if e := fill.Replace(q.Expr); !tested[e] {
					t.Errorf("%s: no exact-value case in records.yaml for\n%s", *pr.Panel.Title, e)
				}
			}
		}
	}
	if joins < 5 {
		t.Errorf("found %d query-time joins in the pod dashboard, want at least 5", joins)
	}
}
