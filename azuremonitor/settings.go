package azuremonitor

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/rulefmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winobs/winobs/dashboards"
	"github.com/winobs/winobs/render"
	"github.com/winobs/winobs/view"
	"github.com/winobs/winobs/vocab"
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

// Settings is the ama-metrics settings ConfigMap winobs needs for groups'
// and the dashboards' metrics, with a header that says how to merge it
// into one the cluster has.
func Settings(v view.Managed, groups rulefmt.RuleGroups) ([]byte, error) {
	k, err := Keep(v, groups)
	if err != nil {
		return nil, err
	}
	data := map[string]string{
		"schema-version": "v1",
		"config-version": "winobs",
		// ama-metrics' own windows-exporter target labels no series with
		// the node, which every winobs rule groups by; winobs's exporter is
		// scraped through its azmonitoring PodMonitor instead, job and node
		// relabelled as the rules read them. Both would scrape it twice.
		"default-scrape-settings-enabled": "kubestate = true\nwindowsexporter = false",
		"default-targets-metrics-keep-list": fmt.Sprintf("kubestate = %q\nwindowsexporter = %q",
			strings.Join(k.KubeState, "|"), strings.Join(k.WindowsExporter, "|")),
		"default-targets-scrape-interval-settings": fmt.Sprintf("windowsexporter = %q", v.ScrapeInterval.Model().String()),
	}
	if v.Azure.ClusterAlias {
		// Asked for: ama-metrics then labels every series of the cluster
		// with the alias, rewritten; cluster.name is already that form
		// (config.Resolve), which the rewrite leaves as it is.
		data["prometheus-collector-settings"] = fmt.Sprintf("cluster_alias = %q", v.Cluster.Name)
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
	keys := make([]string, 0, len(data))
	for key := range data {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	b.WriteString("# The ama-metrics settings winobs needs (Azure Monitor managed Prometheus). Without a settings\n" +
		"# ConfigMap in kube-system: kubectl apply -f this file (ama-metrics restarts within minutes). With one: add\n" +
		"# each line below to the section of the same name in yours (a key yours sets: keep one value; a keep-list:\n" +
		"# join the two regexes with |); ama-metrics keeps its default for every key a section does not name.\n" +
		"# kubectl delete -k never removes it: it is not in kustomization.yaml.\n")
	b.Write(raw)
	return b.Bytes(), nil
}
