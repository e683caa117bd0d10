package bundle_test

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/winobs/winobs/gen/alloy"
	"github.com/winobs/winobs/gen/bundle"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/managed/gmp"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/shipperdeploy"
	"github.com/winobs/winobs/internal/testkit/managedrules"
	"github.com/winobs/winobs/shipper/shipconfig"
)

// renderAll encodes everything gen renders for cfg, as gen would write it.
func renderAll(t *testing.T, cfg *config.Config) map[string][]byte {
	t.Helper()
	files, err := bundle.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := render.Encode(files)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// typed returns an empty object of the Go type for a kind; every kind winobs
// renders must be listed.
func typed(kind string) any {
	switch kind {
	case "ClusterRules", "GlobalRules":
		return &gmp.Rules{}
	case "ConfigMap":
		return &corev1.ConfigMap{}
	case "Namespace":
		return &corev1.Namespace{}
	case "ServiceAccount":
		return &corev1.ServiceAccount{}
	case "Service":
		return &corev1.Service{}
	case "DaemonSet":
		return &appsv1.DaemonSet{}
	case "ClusterRole":
		return &rbacv1.ClusterRole{}
	case "ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}
	case "PrometheusRule":
		return &monitoringv1.PrometheusRule{}
	case "PodMonitor":
		return &monitoringv1.PodMonitor{}
	case "ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	}
	return nil
}

// objects decodes every document of every object file strictly (an unknown
// or misspelt field fails) into its typed struct.
func objects(t *testing.T, files map[string][]byte) []any {
	t.Helper()
	var out []any
	var kust struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(files[render.KustomizationFile], &kust); err != nil {
		t.Fatal(err)
	}
	for _, path := range kust.Resources {
		data, ok := files[path]
		if !ok {
			t.Errorf("kustomization lists %s, which is not rendered", path)
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s #%d: %v", path, i, err)
			}
			obj := typed(meta.Kind)
			if obj == nil {
				t.Errorf("%s #%d: kind %q has no typed check", path, i, meta.Kind)
				continue
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Errorf("%s #%d (%s): %v", path, i, meta.Kind, err)
			}
			out = append(out, obj)
		}
	}
	for path := range files {
		if strings.HasSuffix(path, ".yaml") && !slices.Contains(kust.Resources, path) && path != render.KustomizationFile &&
			!strings.HasPrefix(path, "rules/") && !strings.HasPrefix(path, "loki-rules/") && !strings.HasPrefix(path, "ruler/") &&
			// ama-metrics' settings go to kube-system by hand: an uninstall
			// (delete -k) must never remove them (azuremonitor's tests
			// decode them); AMP's and GMP's exporter monitor is for a
			// self-run collector, whose CRD their clusters lack.
			!strings.HasPrefix(path, "azure-monitor/") && !strings.HasPrefix(path, "amp/") && !strings.HasSuffix(path, "/windows-exporter-monitor.yaml") {
			t.Errorf("%s holds objects but is not in kustomization.yaml", path)
		}
	}
	return out
}

func configs(t *testing.T) map[string]*config.Config {
	variants := map[string]func(*config.Config){
		"default":        nil,
		"with shipper":   func(c *config.Config) { c.Shipper.Deploy = true },
		"ServiceMonitor": func(c *config.Config) { c.WindowsExporter.Monitor = config.ServiceMonitor; c.Shipper.Deploy = true },
		"kps exporter":   func(c *config.Config) { c.WindowsExporter.Deploy = false; c.Shipper.Deploy = true },
		"multi-cluster":  func(c *config.Config) { c.Cluster.Name = "lab"; c.CreateNamespace = false },
		"shipper agent":  func(c *config.Config) { c.LogAgent.Default = config.AgentShipper; c.Shipper.Deploy = true },
		"amp":            func(c *config.Config) { managedrules.OnService(c, managed.AMP) },
		"gmp":            func(c *config.Config) { c.Prometheus.Managed = managed.GMP },
		"gmp global": func(c *config.Config) {
			c.Prometheus.Managed, c.Prometheus.GMP.Scope = managed.GMP, config.GMPScopeGlobal
		},
		"azure-monitor": func(c *config.Config) { managedrules.OnService(c, managed.AzureMonitor) },
	}
	out := map[string]*config.Config{}
	for name, mutate := range variants {
		cfg, err := config.Load("")
		if err != nil {
			t.Fatal(err)
		}
		if mutate != nil {
			mutate(cfg)
		}
		out[name] = cfg
	}
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	for name, cfg := range configs(t) {
		t.Run(name, func(t *testing.T) {
			for _, o := range objects(t, renderAll(t, cfg)) {
				if m, ok := o.(interface{ GetNamespace() string }); ok && m.GetNamespace() != cfg.Namespace {
					switch o.(type) {
					case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *corev1.Namespace, *gmp.Rules: // cluster-scoped
					default:
						t.Errorf("%T %v is not in namespace %s", o, o.(interface{ GetName() string }).GetName(), cfg.Namespace)
					}
				}
			}
		})
	}
}

// HostProcess pods are admitted only at Pod Security level privileged: the
// rendered namespace (winobs's own, by default) says so for enforce, audit
// and warn, and is absent with createNamespace: false (a shared namespace
// is the user's to label).
func TestNamespacePodSecurity(t *testing.T) {
	for name, cfg := range configs(t) {
		var found *corev1.Namespace
		for _, o := range objects(t, renderAll(t, cfg)) {
			if ns, ok := o.(*corev1.Namespace); ok {
				found = ns
			}
		}
		if (found != nil) != cfg.CreateNamespace {
			t.Errorf("%s: namespace rendered %v, createNamespace %v", name, found != nil, cfg.CreateNamespace)
			continue
		}
		if found == nil {
			continue
		}
		for _, mode := range []string{"enforce", "audit", "warn"} {
			if found.Name != cfg.Namespace || found.Labels["pod-security.kubernetes.io/"+mode] != "privileged" {
				t.Errorf("%s: namespace %s labels %v", name, found.Name, found.Labels)
			}
		}
	}
}

// Least privilege: the only API access is Alloy's get/list/watch on pods.
func TestRBACIsLeastPrivilege(t *testing.T) {
	for _, o := range objects(t, renderAll(t, configs(t)["default"])) {
		switch r := o.(type) {
		case *rbacv1.ClusterRole:
			got := fmt.Sprint(r.Rules)
			want := fmt.Sprint([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}})
			if r.Name != alloy.Name || got != want {
				t.Errorf("ClusterRole %s grants %s", r.Name, got)
			}
		case *rbacv1.ClusterRoleBinding:
			if r.RoleRef.Name != alloy.Name || len(r.Subjects) != 1 || r.Subjects[0].Name != alloy.Name {
				t.Errorf("ClusterRoleBinding %s binds %v to %v", r.Name, r.RoleRef, r.Subjects)
			}
		}
	}
}

// HostProcess DaemonSets share the node's network: each runs only on Windows
// nodes, and agents bind their HTTP servers to loopback.
func TestDaemonSetsOnWindowsNodes(t *testing.T) {
	n := 0
	cfg := configs(t)["with shipper"]
	for _, o := range objects(t, renderAll(t, cfg)) {
		ds, ok := o.(*appsv1.DaemonSet)
		if !ok {
			continue
		}
		n++
		pod := ds.Spec.Template.Spec
		if pod.NodeSelector["kubernetes.io/os"] != "windows" || pod.OS == nil || pod.OS.Name != corev1.Windows {
			t.Errorf("%s is not pinned to Windows nodes", ds.Name)
		}
		if pod.SecurityContext == nil || !*pod.SecurityContext.WindowsOptions.HostProcess || !pod.HostNetwork {
			t.Errorf("%s is not a HostProcess pod", ds.Name)
		}
		for _, c := range pod.Containers {
			for _, a := range c.Args {
				if strings.Contains(a, "listen-addr=") && !strings.Contains(a, "=127.0.0.1:") {
					t.Errorf("%s/%s listens beyond loopback: %s", ds.Name, c.Name, a)
				}
			}
			// Every agent is probed; an exec probe asks a loopback URL that
			// parses (an HTTP probe cannot reach a loopback listener), or,
			// for the shipper, reads the health file in its state directory
			// (which no connection held open can starve).
			for kind, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				if p == nil {
					t.Errorf("%s/%s has no %s probe", ds.Name, c.Name, kind)
					continue
				}
				if p.Exec == nil {
					continue
				}
				cmd := p.Exec.Command
				if n := len(cmd); c.Name == "eventlog-shipper" && n == 4 && cmd[1] == "probe" {
					want := map[string]string{"readiness": "ready", "liveness": "live"}[kind]
					if cmd[2] != cfg.Shipper.StateDir+`\`+shipconfig.HealthFile || cmd[3] != want {
						t.Errorf("%s/%s %s probe runs %q", ds.Name, c.Name, kind, cmd)
					}
					continue
				}
				last := cmd[len(cmd)-1]
				if u, err := url.Parse(last); err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "" {
					t.Errorf("%s/%s %s probe asks %q", ds.Name, c.Name, kind, last)
				}
			}
		}
	}
	if n != 3 {
		t.Errorf("want the Alloy, exporter and shipper DaemonSets, got %d", n)
	}
}

// The two log agents' DaemonSets select complementary nodes through the
// configured node label (exactly-one is proven in package hostprocess).
func TestLogAgentsSplitTheNodes(t *testing.T) {
	cfg := configs(t)["with shipper"]
	ops := map[string]string{}
	for _, o := range objects(t, renderAll(t, cfg)) {
		if ds, ok := o.(*appsv1.DaemonSet); ok && ds.Spec.Template.Spec.Affinity != nil {
			req := ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
			if req.Key != cfg.LogAgent.NodeLabel {
				t.Errorf("%s selects on %s", ds.Name, req.Key)
			}
			ops[ds.Name] = fmt.Sprint(req.Operator, req.Values)
		}
	}
	if ops[alloy.Name] != "NotIn[shipper]" || ops[shipperdeploy.Name] != "In[shipper]" {
		t.Errorf("agent affinities %v", ops)
	}
}

// Every object, and every pod template, carries the Kubernetes recommended
// labels, from one helper (package meta).
func TestRecommendedLabels(t *testing.T) {
	keys := []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component",
		"app.kubernetes.io/part-of", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}
	for name, cfg := range configs(t) {
		for _, o := range objects(t, renderAll(t, cfg)) {
			m, ok := o.(interface {
				GetName() string
				GetLabels() map[string]string
			})
			if !ok {
				t.Fatalf("%T has no metadata", o)
			}
			labelSets := map[string]map[string]string{m.GetName(): m.GetLabels()}
			if ds, ok := o.(*appsv1.DaemonSet); ok {
				labelSets[m.GetName()+" pod template"] = ds.Spec.Template.Labels
			}
			for what, labels := range labelSets {
				for _, k := range keys {
					if labels[k] == "" {
						t.Errorf("%s: %s lacks %s", name, what, k)
					}
				}
			}
		}
	}
}

// docs/upgrade.md's prune command lists exactly the kinds gen renders (for
// every switch of the config), except Namespace, which must never be pruned;
// every object carries the label the prune selects.
func TestPruneAllowlistCoversEveryKind(t *testing.T) {
	doc, err := os.ReadFile("../../docs/upgrade.md")
	if err != nil {
		t.Fatal(err)
	}
	allow := map[string]bool{}
	for _, m := range regexp.MustCompile(`--prune-allowlist=(\S+)`).FindAllStringSubmatch(string(doc), -1) {
		allow[m[1]] = true
	}
	variants := map[string]func(*config.Config){
		"default":           func(*config.Config) {},
		"ServiceMonitor":    func(c *config.Config) { c.WindowsExporter.Monitor = config.ServiceMonitor },
		"createNamespace":   func(c *config.Config) { c.CreateNamespace = true },
		"no exporter":       func(c *config.Config) { c.WindowsExporter.Deploy = false },
		"no Loki ConfigMap": func(c *config.Config) { c.LokiRules.ConfigMap = false },
		"shipper default":   func(c *config.Config) { c.LogAgent.Default = config.AgentShipper },
	}
	rendered := map[string]bool{}
	for name, mutate := range variants {
		cfg := config.Default()
		mutate(cfg)
		for path, b := range renderAll(t, cfg) {
			if !strings.HasSuffix(path, ".yaml") || path == "kustomization.yaml" {
				continue
			}
			for _, d := range bytes.Split(b, []byte("\n---\n")) {
				var obj struct {
					APIVersion string `json:"apiVersion"`
					Kind       string `json:"kind"`
					Metadata   struct {
						Name   string            `json:"name"`
						Labels map[string]string `json:"labels"`
					} `json:"metadata"`
				}
				if err := yaml.Unmarshal(d, &obj); err != nil || obj.Kind == "" {
					continue // rule files and other plain YAML
				}
				gv := obj.APIVersion
				if !strings.Contains(gv, "/") {
					gv = "core/" + gv
				}
				key := gv + "/" + obj.Kind
				rendered[key] = true
				if obj.Metadata.Labels["app.kubernetes.io/part-of"] != "winobs" {
					t.Errorf("%s: %s %s lacks app.kubernetes.io/part-of=winobs", name, key, obj.Metadata.Name)
				}
				if obj.Kind == "Namespace" {
					if allow[key] {
						t.Error("Namespace is in the prune allowlist: pruning it would delete what else lives there")
					}
				} else if !allow[key] {
					t.Errorf("%s: %s is rendered but not in docs/upgrade.md's --prune-allowlist", name, key)
				}
			}
		}
	}
	for key := range allow {
		if !rendered[key] {
			t.Errorf("docs/upgrade.md allows pruning %s, which gen never renders", key)
		}
	}
}
