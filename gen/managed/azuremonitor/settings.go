package azuremonitor

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/rulefmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winobs/winobs/gen/dashboards"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

// The ama-metrics settings ConfigMap (Azure/prometheus-collector,
// otelcollector/configmaps/ama-metrics-settings-configmap-v1.yaml): a
// section a key, each a few TOML lines. Its parser keeps the default of
// every key a section does not name, so winobs writes its own keys alone.
const (
	SettingsName      = "ama-metrics-settings-configmap"
	SettingsNamespace = "kube-system"
)

// KeepLists are the metric names the rules and dashboards read, by the
// ama-metrics default target that scrapes them: with its minimal ingestion
// profile (on by default) a default target keeps only Azure's short list
// ORed with this, and Azure's windowsexporter list holds neither
// windows_memory_committed_bytes nor windows_memory_commit_limit.
type KeepLists struct {
	// WindowsExporter: windows_exporter's names, and the eventlog-shipper's
	// that its textfile collector serves.
	WindowsExporter []string
	// KubeState: kube-state-metrics' names.
	KubeState []string
}

// Keep derives the keep-lists from what the rules (groups, as rules.Build
// makes them) and the dashboards read: every metric name any of their
// PromQL selects, but the records (the rules write those) and up (no
// scrape drops it).
func Keep(v view.Managed, groups rulefmt.RuleGroups) (KeepLists, error) {
	var queries []string
	records := map[string]bool{"up": true}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			queries = append(queries, r.Expr)
			records[r.Record] = true
		}
	}
	dq, err := dashboards.PromQueries(v.Dashboards)
	if err != nil {
		return KeepLists{}, err
	}
	names, err := vocab.MetricsRead(append(queries, dq...))
	if err != nil {
		return KeepLists{}, err
	}
	var k KeepLists
	for _, n := range names {
		switch {
		case records[n]:
		case strings.HasPrefix(n, "windows_"), strings.HasPrefix(n, "winobs_"):
			k.WindowsExporter = append(k.WindowsExporter, n)
		case strings.HasPrefix(n, "kube_"):
			k.KubeState = append(k.KubeState, n)
		default:
			return KeepLists{}, fmt.Errorf("metric %s: read by the rules or dashboards, and no ama-metrics target is known to scrape it", n)
		}
	}
	return k, nil
}

// The default targets whose settings winobs names (ama-metrics' keys).
const (
	TargetKubeState       = "kubestate"
	TargetWindowsExporter = "windowsexporter"
)

// Needs is what winobs needs of ama-metrics' settings, by default target:
// kube-state-metrics' target on (the rules read it) and ama-metrics' own
// windows-exporter target off (it labels no series with the node, which
// every rule groups by; winobs's exporter is scraped through its
// azmonitoring PodMonitor instead, and both would scrape it twice); the
// keep-lists of every name read; the exporter target's interval; and the
// cluster_alias, only when asked for (config.AzureClusterLabel).
type Needs struct {
	Scrape   map[string]bool
	Keep     map[string][]string
	Interval map[string]string
	Alias    string
}

// NeedsOf derives Needs from the view, groups as rules.Build makes them.
func NeedsOf(v view.Managed, groups rulefmt.RuleGroups) (Needs, error) {
	k, err := Keep(v, groups)
	if err != nil {
		return Needs{}, err
	}
	n := Needs{
		Scrape:   map[string]bool{TargetKubeState: true, TargetWindowsExporter: false},
		Keep:     map[string][]string{TargetKubeState: k.KubeState, TargetWindowsExporter: k.WindowsExporter},
		Interval: map[string]string{TargetWindowsExporter: v.ScrapeInterval.Model().String()},
	}
	if v.Azure.ClusterAlias {
		// ama-metrics then labels every series of the cluster with the
		// alias, rewritten; cluster.name is already that form
		// (config.Resolve), which the rewrite leaves as it is.
		n.Alias = v.Cluster.Name
	}
	return n, nil
}

// Settings is the ama-metrics settings ConfigMap winobs needs for groups'
// and the dashboards' metrics (schema v1, winobs's keys alone), with a
// header that says how to merge it into one the cluster has.
func Settings(v view.Managed, groups rulefmt.RuleGroups) ([]byte, error) {
	n, err := NeedsOf(v, groups)
	if err != nil {
		return nil, err
	}
	data := map[string]string{
		"schema-version": "v1",
		"config-version": "winobs",
		sectionScrapeV1:  fmt.Sprintf("%s = %t\n%s = %t", TargetKubeState, n.Scrape[TargetKubeState], TargetWindowsExporter, n.Scrape[TargetWindowsExporter]),
		sectionKeep: fmt.Sprintf("%s = %q\n%s = %q", TargetKubeState, strings.Join(n.Keep[TargetKubeState], "|"),
			TargetWindowsExporter, strings.Join(n.Keep[TargetWindowsExporter], "|")),
		sectionInterval: fmt.Sprintf("%s = %q", TargetWindowsExporter, n.Interval[TargetWindowsExporter]),
	}
	if n.Alias != "" {
		data[sectionCollector] = fmt.Sprintf("%s = %q", keyAlias, n.Alias)
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: SettingsName, Namespace: SettingsNamespace},
		Data:       data,
	}
	raw, err := render.EncodeObjects([]any{cm})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# The ama-metrics settings winobs needs (Azure Monitor managed Prometheus). Without a settings\n" +
		"# ConfigMap in kube-system (kubectl get cm -n kube-system " + SettingsName + " finds none): kubectl create -f this file.\n" +
		"# With one, never apply this file over it: merge yours with gen azure-settings (docs/platforms.md):\n" +
		"#   kubectl get cm -n kube-system " + SettingsName + " -o yaml > current.yaml\n" +
		"#   go run ./cmd/gen azure-settings --config <your config> --current current.yaml --out merged.yaml\n" +
		"#   kubectl replace -f merged.yaml\n" +
		"# ama-metrics restarts within minutes. kubectl delete -k never removes it: it is not in kustomization.yaml.\n")
	b.Write(raw)
	return b.Bytes(), nil
}
