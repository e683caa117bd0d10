package bundle_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/winobs/winobs/gen/bundle"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/kubecheck"
)

// Every rendered object passes what the API server would check on create:
// the CRD schemas prometheus-operator publishes for PrometheusRule,
// PodMonitor and ServiceMonitor, and apimachinery's field rules for the core
// kinds. Over the default and every config variant.
func TestManifestsPassAPIServerValidation(t *testing.T) {
	checker, err := kubecheck.New(fixture.Path(t, "crds"), fixture.Path(t, "managed-crds"))
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range configs(t) {
		t.Run(name, func(t *testing.T) {
			files := renderAll(t, cfg)
			kinds, apis := map[string]int{}, map[string]int{}
			for _, path := range kustomizationResources(t, files) {
				for i, doc := range kubecheck.Split(files[path]) {
					for _, e := range checker.Document(doc) {
						t.Errorf("%s #%d: %s", path, i, e)
					}
					var meta struct{ Kind, APIVersion string }
					yaml.Unmarshal(doc, &meta)
					kinds[meta.Kind]++
					apis[meta.APIVersion]++
				}
			}
			// Azure Monitor reads no PrometheusRule, and its cluster has no
			// monitoring.coreos.com CRD: apply -k must not meet one.
			switch cfg.Prometheus.Managed {
			case managed.AzureMonitor:
				if kinds["PrometheusRule"] != 0 || kinds["PodMonitor"] != 1 || apis["monitoring.coreos.com/v1"] != 0 || apis["azmonitoring.coreos.com/v1"] != 1 {
					t.Errorf("checked kinds %v, APIs %v: want the exporter's PodMonitor in azmonitoring.coreos.com alone", kinds, apis)
				}
			case managed.AMP, managed.GMP:
				// Their clusters have no monitoring.coreos.com CRD; GMP's
				// rules are one ClusterRules or GlobalRules.
				if apis["monitoring.coreos.com/v1"] != 0 || (cfg.Prometheus.Managed == managed.GMP) != (kinds["ClusterRules"]+kinds["GlobalRules"] == 1) {
					t.Errorf("checked kinds %v, APIs %v", kinds, apis)
				}
			}
			if cfg.Prometheus.Managed == "" && (kinds["PrometheusRule"] != 2 || kinds["DaemonSet"] < 2) {
				t.Errorf("checked kinds %v: want both PrometheusRules and the agents' DaemonSets", kinds)
			}
		})
	}
}

// `kubectl apply -k out/` works: kustomize builds the rendered directory, and
// its object set is exactly the objects in the files.
func TestKustomizeBuildsTheOutput(t *testing.T) {
	for name, cfg := range configs(t) {
		t.Run(name, func(t *testing.T) {
			files, err := bundle.Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "out")
			if _, err := render.Write(dir, files); err != nil {
				t.Fatal(err)
			}
			resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
			if err != nil {
				t.Fatalf("kustomize build: %v", err)
			}
			var built []string
			for _, r := range resources.Resources() {
				built = append(built, fmt.Sprintf("%s %s/%s", r.GetKind(), r.GetNamespace(), r.GetName()))
			}
			encoded := renderAll(t, cfg)
			var want []string
			for _, path := range kustomizationResources(t, encoded) {
				for _, doc := range kubecheck.Split(encoded[path]) {
					var m struct {
						Kind     string
						Metadata struct{ Name, Namespace string }
					}
					if err := yaml.Unmarshal(doc, &m); err != nil {
						t.Fatal(err)
					}
					want = append(want, fmt.Sprintf("%s %s/%s", m.Kind, m.Metadata.Namespace, m.Metadata.Name))
				}
			}
			slices.Sort(built)
			slices.Sort(want)
			if !slices.Equal(built, want) {
				t.Errorf("kustomize built\n  %v\nthe files hold\n  %v", built, want)
			}
		})
	}
}

func kustomizationResources(t *testing.T, files map[string][]byte) []string {
	t.Helper()
	var kust struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(files[render.KustomizationFile], &kust); err != nil {
		t.Fatal(err)
	}
	if len(kust.Resources) == 0 {
		t.Fatal("kustomization.yaml lists no resources")
	}
	return kust.Resources
}
