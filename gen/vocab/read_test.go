package vocab_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/winobs/winobs/gen/vocab"
)

// The names a query reads, from rule expressions and from dashboard
// queries with Grafana's variables in them.
func TestMetricsRead(t *testing.T) {
	got, err := vocab.MetricsRead([]string{
		`max by (cluster, instance, node) (windows_memory_committed_bytes{job="windows-exporter"}) / (max by (cluster, instance, node) (windows_memory_commit_limit{job="windows-exporter"}) > 0)`,
		`sum by (node) (rate(windows_cpu_time_total{k8s_cluster=~"${cluster:regex}|", instance=~"$instance", mode!="idle"}[$__rate_interval]))`,
		`label_values(kube_node_info{os_image=~"(?i).*windows.*"}, node)`,
		`{__name__="windows_exporter_build_info"}`,
		`node:windows_commit:ratio > 0.9`,
	})
	want := []string{"kube_node_info", "node:windows_commit:ratio", "windows_cpu_time_total", "windows_exporter_build_info", "windows_memory_commit_limit", "windows_memory_committed_bytes"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v %v, want %v", got, err, want)
	}
	if _, err := vocab.MetricsRead([]string{`{__name__=~"windows_memory_.*"}`}); err == nil || !strings.Contains(err.Error(), "list each name") {
		t.Errorf("a regex over names: %v", err)
	}
	if _, err := vocab.MetricsRead([]string{`sum(`}); err == nil {
		t.Error("a query that does not parse was read")
	}
}
