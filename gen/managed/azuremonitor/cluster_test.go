package azuremonitor_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/winobs/winobs/gen/bundle"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed/azuremonitor"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/view"
)

// Issue 66: a render for an AKS cluster selects exactly the cluster label
// ama-metrics writes for it, whatever the cluster is called: every rule
// group's clusterName, the settings (read back through the model of
// ama-metrics' parser, config.AzureClusterLabel), the dashboards' cluster
// variable, the log agents' cluster label and doctor's selectors. A name
// ama-metrics rewrites appears nowhere in the render as the user wrote it.
func TestRenderSelectsTheLabelAmaMetricsWrites(t *testing.T) {
	const id = sub + "/resourceGroups/rg-aks/providers/Microsoft.ContainerService/managedClusters/"
	for _, tc := range []struct {
		aks, name string
		alias     bool
		label     string // ama-metrics' label, by hand from its rule
	}{
		{"prod-westeurope-01", "prod-westeurope-01", false, "prod-westeurope-01"},
		{"prod-westeurope-01", "", false, "prod-westeurope-01"},
		{"Aks_Prod-2", "Aks_Prod-2", false, "Aks_Prod-2"},
		{"aks-7f3a", "prod-westeurope-01", true, "prod_westeurope_01"},
		{"aks-7f3a", "Prod.WestEurope 01", true, "Prod_WestEurope_01"},
		{"aks-7f3a", "-eu..prod-", true, "eu_prod"},
	} {
		t.Run(tc.name+"/"+fmt.Sprint(tc.alias), func(t *testing.T) {
			body := fmt.Sprintf("cluster:\n  name: %q\nprometheus:\n  platform: azure-monitor\n  azure:\n    workspace: %s\n    location: westeurope\n    cluster: %s\n    clusterAlias: %t\n",
				tc.name, workspace, id+tc.aks, tc.alias)
			path := filepath.Join(t.TempDir(), "winobs.yaml")
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, _, err := config.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			files, err := bundle.Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			data, _, err := render.Encode(files)
			if err != nil {
				t.Fatal(err)
			}
			var tmpl azuremonitor.ARMTemplate
			if err := json.Unmarshal(data["azure-monitor/prometheus-rule-groups.json"], &tmpl); err != nil {
				t.Fatal(err)
			}
			for _, g := range tmpl.Resources {
				if g.Properties.ClusterName != tc.label {
					t.Errorf("group %s: clusterName %q, want %q", g.Name, g.Properties.ClusterName, tc.label)
				}
			}
			var cm corev1.ConfigMap
			if err := sigyaml.UnmarshalStrict(data["azure-monitor/ama-metrics-settings-configmap.yaml"], &cm); err != nil {
				t.Fatal(err)
			}
			alias := ""
			if m := regexp.MustCompile(`(?m)^cluster_alias = "(.*)"$`).FindStringSubmatch(cm.Data["prometheus-collector-settings"]); m != nil {
				alias = m[1]
			}
			if got := config.AzureClusterLabel(id+tc.aks, alias); got != tc.label || (alias != "") != tc.alias {
				t.Errorf("ama-metrics reads cluster_alias %q as the label %q, want %q", alias, got, tc.label)
			}
			want := fmt.Sprintf(`cluster = %q`, tc.label)
			if !strings.Contains(string(data["alloy/config.alloy"]), want) {
				t.Errorf("alloy's config holds no %s", want)
			}
			current := 0
			for path, raw := range data {
				if strings.HasPrefix(path, "dashboards/") {
					current += len(regexp.MustCompile(fmt.Sprintf(`"text": %q,\s+"value": %q`, tc.label, tc.label)).FindAll(raw, -1))
				}
				if tc.name != tc.label && tc.name != "" && strings.Contains(string(raw), tc.name) {
					t.Errorf("%s holds the name as written, %q, which ama-metrics writes as %q", path, tc.name, tc.label)
				}
			}
			if current < 4 {
				t.Errorf("%d dashboards choose the cluster %q", current, tc.label)
			}
			if sel := view.ForDoctor(cfg).Terms.Cluster().String(); sel != fmt.Sprintf(`{cluster=%q}`, tc.label) {
				t.Errorf("doctor selects %s", sel)
			}
		})
	}
}
