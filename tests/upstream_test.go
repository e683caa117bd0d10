package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/winobs/winobs/internal/testkit/promtest"
)

// TestFixturesReproduceUpstreamJoinBugs runs kube-prometheus-stack's Windows
// rule expressions (kubernetes-mixin rules/windows.libsonnet) on the input of
// our duplicate-target test group and checks that they fail as reported
// upstream, while our records pass on the same input (TestRuleUnitTests). A
// fixture that stopped reproducing a bug would prove nothing.
func TestFixturesReproduceUpstreamJoinBugs(t *testing.T) {
	tf := loadTestFile(t, "records.yaml")
	var tg *promtest.Group
	for i := range tf.Tests {
		if strings.Contains(tf.Tests[i].Name, "helm-charts 5243") {
			tg = &tf.Tests[i]
		}
	}
	if tg == nil {
		t.Fatal("no test group reproducing helm-charts 5243")
	}

	const (
		// windows_pod_container_available before kubernetes-mixin PR #840: no
		// container_id!="" filter on kube_pod_container_info.
		beforeFix612 = `windows_container_available{job="windows-exporter"}
			* on (container_id, cluster) group_left (container, pod, namespace)
			max by (container, container_id, pod, namespace, cluster) (kube_pod_container_info{job="kube-state-metrics"})`
		// windows_pod_container_available as kps 88.5.3 ships it.
		podContainerAvailable = `windows_container_available{job="windows-exporter", container_id!=""}
			* on (container_id, cluster) group_left (container, pod, namespace)
			max by (container, container_id, pod, namespace, cluster) (kube_pod_container_info{job="kube-state-metrics", container_id!=""})`
	)
	cases := []struct {
		issue, expr, wantErr string
	}{
		{"kubernetes-mixin #612 / helm-charts #3817", beforeFix612, "many-to-many matching not allowed"},
		// kube_pod_windows_container_resource_memory_limit joins the
		// un-aggregated record; duplicate targets make its right side non-unique.
		{"helm-charts #5243", `kube_pod_container_resource_limits{resource="memory", job="kube-state-metrics"}
			* on (container, pod, namespace, cluster) (` + podContainerAvailable + `)`, "many-to-many matching not allowed"},
	}

	var load strings.Builder
	fmt.Fprintf(&load, "load 1m\n")
	for _, s := range tg.InputSeries {
		fmt.Fprintf(&load, "  %s %s\n", s.Series, s.Values)
	}
	suite, err := promqltest.NewLazyLoader(load.String(), promqltest.LazyLoaderOpts{Parser: promqlParser})
	if err != nil {
		t.Fatal(err)
	}
	defer suite.Close()
	ts := time.Unix(0, 0).Add(5 * time.Minute)
	suite.WithSamplesTill(ts, func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	})
	for _, c := range cases {
		q, err := suite.QueryEngine().NewInstantQuery(suite.Context(), suite.Queryable(), nil, c.expr, ts)
		if err != nil {
			t.Fatalf("%s: %v", c.issue, err)
		}
		res := q.Exec(suite.Context())
		if res.Err == nil || !strings.Contains(res.Err.Error(), c.wantErr) {
			t.Errorf("%s: the fixture no longer reproduces the bug: got result %v, error %v; want error containing %q",
				c.issue, res.Value, res.Err, c.wantErr)
		}
	}
}
