package tests

//lint:file-ignore SA1019 The classic dashboard is the one the pod views are read from.

import (
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/dashboards"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

// TestPodDashboardQueriesAreTested: the pod dashboard's query-time joins
// (working set, CPU, limits, network) are not records, so their exact values
// are tested as expressions in records.yaml. This keeps those expressions
// equal to what the dashboard runs, with $namespace=shop, $pod=.*,
// $container_id its containers and $__rate_interval=5m.
func TestPodDashboardQueriesAreTested(t *testing.T) {
	tested := map[string]bool{}
	for _, tg := range loadTestFile(t, "records.yaml").Tests {
		for _, et := range tg.PromqlExprTests {
			if len(et.ExpSamples) > 0 {
				tested[et.Expr] = true
			}
		}
	}
	ds, err := dashboards.Build(view.Of(config.Default()).Dashboards)
	if err != nil {
		t.Fatal(err)
	}
	// $container_id as Grafana formats the hidden variable: a regex of the
	// shop namespace's container ids.
	fill := strings.NewReplacer("$namespace", "shop", "$pod", ".*", "$__rate_interval", "5m",
		"$container_id", "(containerd://4b5e57f6eb2f42b9039b3d1e13929295f231749c510cbe341cd68036d9af97e2|containerd://6c8b4535ccc87f19061c4646189e33d78f01c8b63dc4e3cb2f630b1796ee93b6)")
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
				if !ok || !strings.Contains(q.Expr, vocab.Records.ContainerInfo+`{namespace="$namespace"`) ||
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
