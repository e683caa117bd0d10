package azuremonitor_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/rulefmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed/azuremonitor"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/fixture"
)

// amaRead reads a settings ConfigMap as ama-metrics does
// (Azure/prometheus-collector, otelcollector/shared/helpers.go at 39583fd:
// ParseV1Config, lines 354-410, one section a data key; ParseMetricsFiles
// and parseMetricsFileInto, lines 266-350, for v2's cluster-metrics, whose
// "<name>: |-" lines open a section, and prometheus-collector-settings;
// RemoveQuotes, line 258; configmapparser.go lines 172-190: the schema
// chooses the parser). Every line holding '=' is key = value, both
// trimmed, the value unquoted; '#' lines are comments; a later line wins.
func amaRead(t *testing.T, cm corev1.ConfigMap) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	parse := func(section, text string, nested bool) {
		for _, line := range strings.Split(text, "\n") {
			l := strings.TrimSpace(line)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if nested && strings.HasSuffix(l, ": |-") {
				section = strings.TrimSuffix(l, ": |-")
				continue
			}
			if k, v, ok := strings.Cut(l, "="); ok {
				v = strings.TrimSpace(v)
				if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
					v = v[1 : len(v)-1]
				}
				if out[section] == nil {
					out[section] = map[string]string{}
				}
				out[section][strings.TrimSpace(k)] = v
			}
		}
	}
	v2 := strings.TrimSpace(cm.Data["schema-version"]) == "v2"
	for key, text := range cm.Data {
		switch {
		case key == "schema-version" || key == "config-version":
		case v2 && key == "cluster-metrics":
			parse("prometheus-collector-settings", text, true)
		case v2 && key != "prometheus-collector-settings":
			// v2 reads cluster-metrics and prometheus-collector-settings alone
		default:
			parse(key, text, false)
		}
	}
	return out
}

// keeps reports whether ama-metrics keeps the metric name for a default
// target, from its settings as amaRead read them
// (tomlparser-default-targets-metrics-keep-list.go: the minimal profile,
// on unless "false", ORs the list with Azure's own; off, the list is used
// as it is, an empty one keeping everything). Azure's own list is left
// out: a name winobs needs must be kept by the list itself.
func keeps(s map[string]map[string]string, v2 bool, target, name string) bool {
	minimal := s["default-targets-metrics-keep-list"]["minimalingestionprofile"] != "false"
	if v2 {
		minimal = s["minimal-ingestion-profile"]["enabled"] != "false"
	}
	list := s["default-targets-metrics-keep-list"][target]
	if list == "" {
		return !minimal
	}
	return regexp.MustCompile("^(?:" + list + ")$").MatchString(name)
}

// asKubectlPrints is a settings file as kubectl get -o yaml prints the
// ConfigMap made from it: the server's metadata added, comments gone.
func asKubectlPrints(t *testing.T, raw []byte, edit func(*corev1.ConfigMap)) []byte {
	t.Helper()
	var cm corev1.ConfigMap
	if err := sigyaml.UnmarshalStrict(raw, &cm); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&cm)
	}
	cm.ResourceVersion, cm.UID = "4711", "0c6a6d4e-8a1e-4d0c-9a57-3f1b2f6c1a2b"
	cm.CreationTimestamp = metav1.Now()
	cm.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1"}`, "team": "platform"}
	cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate}}
	out, err := sigyaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// setLine replaces the line "key = …" of a section's text, or of the
// section named in v2's cluster-metrics text ("section/key"), or fails.
func setLine(t *testing.T, text, key, line string) string {
	t.Helper()
	section, key, nested := strings.Cut(key, "/")
	if !nested {
		key = section
	}
	lines := strings.Split(text, "\n")
	in := !nested
	for i, l := range lines {
		switch tl := strings.TrimSpace(l); {
		case nested && strings.HasSuffix(tl, ": |-"):
			in = tl == section+": |-"
		case in && strings.HasPrefix(tl, key+" = "):
			lines[i] = l[:len(l)-len(strings.TrimLeft(l, " "))] + line
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("no %s line in %q", key, text)
	return ""
}

func mergeInputs(t *testing.T, cfg *config.Config) (view.Managed, rulefmt.RuleGroups) {
	t.Helper()
	v := view.Of(cfg).Managed
	groups, err := rules.Build(v.Rules)
	if err != nil {
		t.Fatal(err)
	}
	return v, groups
}

// Issue 66: a user's customised settings survive the merge. Azure's own
// sample ConfigMaps (testdata/azure, v1 and v2), customised as users do (a
// kubelet keep-list of their own, the minimal ingestion profile set,
// kube-state-metrics' list narrowed), as kubectl prints them, merged with
// winobs's needs: read back as ama-metrics reads them, every key the user
// had keeps its value but the keep-lists winobs extends, which still keep
// what they kept; every name winobs reads is kept; kube-state-metrics'
// target is on; schema-version and config-version are the user's; the
// server's metadata is gone but resourceVersion.
func TestMergeKeepsTheUsersSettings(t *testing.T) {
	cfg := azureConfig(t, "aks-prod")
	v, groups := mergeInputs(t, cfg)
	need, err := azuremonitor.NeedsOf(v, groups)
	if err != nil {
		t.Fatal(err)
	}
	v1 := fixture.Read(t, "azure", "ama-metrics-settings-configmap-v1.yaml")
	v2 := fixture.Read(t, "azure", "ama-metrics-settings-configmap-v2.yaml")
	for _, tc := range []struct {
		name   string
		sample []byte
		edit   func(*corev1.ConfigMap)
		// stillKept are names the user's lists kept before, by target.
		stillKept map[string][]string
		note      string
	}{
		{"v2 as shipped, its own windows-exporter target on", v2, nil, nil, "windowsexporter = true is kept"},
		{"v2, kubelet list customised, minimal profile off", v2, func(cm *corev1.ConfigMap) {
			cm.Data["cluster-metrics"] = setLine(t, cm.Data["cluster-metrics"], "default-targets-metrics-keep-list/kubelet", `kubelet = "kubelet_node_name|my_kubelet_metric"`)
			cm.Data["cluster-metrics"] = setLine(t, cm.Data["cluster-metrics"], "minimal-ingestion-profile/enabled", `enabled = false`)
			cm.Data["cluster-metrics"] = setLine(t, cm.Data["cluster-metrics"], "default-targets-metrics-keep-list/kubestate", `kubestate = "kube_node_.*|kube_deployment_labels"`)
		}, map[string][]string{"kubestate": {"kube_node_info", "kube_node_labels", "kube_deployment_labels"}}, ""},
		{"v2, minimal profile on, kube-state-metrics' list narrowed", v2, func(cm *corev1.ConfigMap) {
			cm.Data["cluster-metrics"] = setLine(t, cm.Data["cluster-metrics"], "default-targets-metrics-keep-list/kubestate", `kubestate = "kube_pod_labels"`)
			cm.Data["cluster-metrics"] = setLine(t, cm.Data["cluster-metrics"], "default-targets-scrape-enabled/windowsexporter", `windowsexporter = false`)
		}, map[string][]string{"kubestate": {"kube_pod_labels"}}, ""},
		{"v1, kubelet list customised, minimal profile off", v1, func(cm *corev1.ConfigMap) {
			cm.Data["default-targets-metrics-keep-list"] = setLine(t, cm.Data["default-targets-metrics-keep-list"], "kubelet", `kubelet = "kubelet_node_name|my_kubelet_metric"`)
			cm.Data["default-targets-metrics-keep-list"] = setLine(t, cm.Data["default-targets-metrics-keep-list"], "minimalingestionprofile", `minimalingestionprofile = false`)
			cm.Data["default-targets-metrics-keep-list"] = setLine(t, cm.Data["default-targets-metrics-keep-list"], "windowsexporter", `windowsexporter = "windows_cpu_.*"`)
		}, map[string][]string{"windowsexporter": {"windows_cpu_time_total", "windows_cpu_interrupts_total"}}, ""},
		{"v1, partial: no keep-list or interval section", v1, func(cm *corev1.ConfigMap) {
			delete(cm.Data, "default-targets-metrics-keep-list")
			delete(cm.Data, "default-targets-scrape-interval-settings")
		}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			current := asKubectlPrints(t, tc.sample, tc.edit)
			var before corev1.ConfigMap
			if err := sigyaml.Unmarshal(current, &before); err != nil {
				t.Fatal(err)
			}
			raw, notes, err := azuremonitor.Merge(v, groups, current)
			if err != nil {
				t.Fatal(err)
			}
			if tc.note != "" && !strings.Contains(strings.Join(notes, "\n"), tc.note) {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
			var after corev1.ConfigMap
			if err := sigyaml.UnmarshalStrict(raw, &after); err != nil {
				t.Fatal(err)
			}
			if after.Name != "ama-metrics-settings-configmap" || after.Namespace != "kube-system" || after.ResourceVersion != "4711" ||
				after.UID != "" || after.ManagedFields != nil || !after.CreationTimestamp.IsZero() ||
				after.Annotations["team"] != "platform" || after.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" {
				t.Errorf("metadata: %+v", after.ObjectMeta)
			}
			for _, k := range []string{"schema-version", "config-version"} {
				if after.Data[k] != before.Data[k] {
					t.Errorf("%s %q, was %q", k, after.Data[k], before.Data[k])
				}
			}
			isV2 := strings.TrimSpace(before.Data["schema-version"]) == "v2"
			was, is := amaRead(t, before), amaRead(t, after)
			for section, keys := range was {
				for k, val := range keys {
					if section == "default-targets-metrics-keep-list" && (k == "kubestate" || k == "windowsexporter") {
						continue
					}
					if is[section][k] != val {
						t.Errorf("%s/%s is %q, was %q", section, k, is[section][k], val)
					}
				}
			}
			for target, names := range need.Keep {
				for _, n := range names {
					if !keeps(is, isV2, target, n) {
						t.Errorf("%s: %s is not kept", target, n)
					}
				}
			}
			for target, names := range tc.stillKept {
				for _, n := range names {
					if !keeps(was, isV2, target, n) || !keeps(is, isV2, target, n) {
						t.Errorf("%s: %s was kept and is not", target, n)
					}
				}
			}
			scrape := "default-scrape-settings-enabled"
			if isV2 {
				scrape = "default-targets-scrape-enabled"
			}
			if is[scrape]["kubestate"] != "true" {
				t.Errorf("kube-state-metrics' target: %q", is[scrape]["kubestate"])
			}
			if _, ok := is["prometheus-collector-settings"]["cluster_alias"]; ok && is["prometheus-collector-settings"]["cluster_alias"] != "" {
				t.Errorf("an alias written: %v", is["prometheus-collector-settings"])
			}
		})
	}
}

// Issue 66: what winobs cannot work with is named, every conflict at once,
// and nothing is written: kube-state-metrics' target off, a keep-list that
// is no regular expression, and an alias of the user's that renames the
// cluster label away from winobs's cluster.name. An alias that gives
// winobs's own label is kept; winobs's alias is added where none is.
func TestMergeNamesConflicts(t *testing.T) {
	v1 := fixture.Read(t, "azure", "ama-metrics-settings-configmap-v1.yaml")
	current := asKubectlPrints(t, v1, func(cm *corev1.ConfigMap) {
		cm.Data["default-scrape-settings-enabled"] = setLine(t, cm.Data["default-scrape-settings-enabled"], "kubestate", "kubestate = false")
		cm.Data["default-targets-metrics-keep-list"] = setLine(t, cm.Data["default-targets-metrics-keep-list"], "windowsexporter", `windowsexporter = "windows_(cpu"`)
		cm.Data["prometheus-collector-settings"] = setLine(t, cm.Data["prometheus-collector-settings"], "cluster_alias", `cluster_alias = "prod-we"`)
	})
	v, groups := mergeInputs(t, azureConfig(t, "aks-prod"))
	raw, _, err := azuremonitor.Merge(v, groups, current)
	var conflicts azuremonitor.Conflicts
	if raw != nil || !errors.As(err, &conflicts) || len(conflicts) != 3 {
		t.Fatalf("want 3 conflicts and no output, got %d bytes, %v", len(raw), err)
	}
	for i, want := range []string{"kubestate = false", `windowsexporter = "windows_(cpu" is not a regular expression`,
		`cluster_alias = "prod-we": ama-metrics labels every series of the cluster cluster="prod_we"`} {
		if !strings.Contains(conflicts[i], want) {
			t.Errorf("conflict %d: %q, want %q", i, conflicts[i], want)
		}
	}

	// The user's alias gives winobs's label: kept. None: winobs's added.
	for _, alias := range []string{`cluster_alias = "prod-we"`, `cluster_alias = ""`} {
		current = asKubectlPrints(t, v1, func(cm *corev1.ConfigMap) {
			cm.Data["prometheus-collector-settings"] = setLine(t, cm.Data["prometheus-collector-settings"], "cluster_alias", alias)
		})
		v, groups = mergeInputs(t, azureAliased(t, "prod.we", true))
		raw, _, err = azuremonitor.Merge(v, groups, current)
		if err != nil {
			t.Fatal(err)
		}
		var cm corev1.ConfigMap
		if err := sigyaml.Unmarshal(raw, &cm); err != nil {
			t.Fatal(err)
		}
		got := amaRead(t, cm)["prometheus-collector-settings"]["cluster_alias"]
		if label := config.AzureClusterLabel(cluster, got); label != "prod_we" {
			t.Errorf("%s: cluster_alias %q gives the label %q, want prod_we", alias, got, label)
		}
	}

	// Not a settings ConfigMap, or a schema ama-metrics ignores.
	for _, bad := range []struct{ body, want string }{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: kube-system}\n", "want ConfigMap kube-system/ama-metrics-settings-configmap"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ama-metrics-settings-configmap, namespace: kube-system}\ndata: {schema-version: v3}\n", `schema-version "v3"`},
		{"{not yaml", "not one ConfigMap"},
	} {
		if _, _, err := azuremonitor.Merge(v, groups, []byte(bad.body)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.body, err, bad.want)
		}
	}
}
