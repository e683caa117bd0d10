package config

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 66: the cluster label ama-metrics writes, as its settings parser
// decides it (Azure/prometheus-collector, otelcollector/shared/configmap/
// mp/tomlparser-prometheus-collector-settings.go, lines 20-31 and 123-133):
// an alias with every run of characters outside [0-9a-zA-Z] made one '_',
// '_' trimmed at both ends, ignored when nothing is left; else the last
// segment of the cluster's resource id. The expected labels are written
// by hand from that rule, not computed.
func TestAzureClusterLabelAsAmaMetricsWritesIt(t *testing.T) {
	const id = "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/rg-aks/providers/Microsoft.ContainerService/managedClusters/"
	for _, tc := range []struct{ clusterID, alias, want string }{
		{id + "prod-westeurope-01", "", "prod-westeurope-01"}, // no alias: the resource name, hyphens and all
		{id + "Aks_Prod", "", "Aks_Prod"},
		{id + "aks", "prod-westeurope-01", "prod_westeurope_01"},
		{id + "aks", "prod.westeurope.01", "prod_westeurope_01"},
		{id + "aks", "Prod WestEurope", "Prod_WestEurope"}, // upper case kept
		{id + "aks", "  -prod--west..europe-  ", "prod_west_europe"},
		{id + "aks", "__aks__prod__", "aks_prod"},
		{id + "aks", `"aks-prod"`, "aks_prod"}, // quotes are characters outside the class too
		{id + "aks", "prød", "pr_d"},           // a non-ASCII letter is outside [0-9a-zA-Z]
		{id + "aks", "---", "aks"},             // nothing left: ignored
		{id + "aks", "  ", "aks"},
		{"", "aks-prod", "aks_prod"},
	} {
		if got := AzureClusterLabel(tc.clusterID, tc.alias); got != tc.want {
			t.Errorf("cluster %q, alias %q: %q, want %q", tc.clusterID[strings.LastIndex(tc.clusterID, "/")+1:], tc.alias, got, tc.want)
		}
	}
}

// Issue 66: on Azure Monitor, cluster.name is the label ama-metrics writes.
// Without an alias: the AKS resource name (the default when the AKS
// cluster is named), any other name refused at its line naming both; a
// name no AKS cluster can have refused even when the cluster is not named.
// With clusterAlias: the rewritten form, used everywhere, with a warning
// that names both and says what it renames.
func TestAzureClusterName(t *testing.T) {
	const sub = "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/rg/providers/"
	azure := func(cluster, name string, alias bool) string {
		s := "cluster:\n  name: " + fmt.Sprintf("%q", name) + "\nprometheus:\n  platform: azure-monitor\n  azure:\n    workspace: " + sub +
			"Microsoft.Monitor/accounts/amw\n    location: westeurope\n"
		if cluster != "" {
			s += "    cluster: " + sub + "Microsoft.ContainerService/managedClusters/" + cluster + "\n"
		}
		if alias {
			s += "    clusterAlias: true\n"
		}
		return s
	}
	for _, tc := range []struct {
		name, cluster, clusterName string
		alias                      bool
		want                       string // the resolved cluster.name
		problem, warning           string
	}{
		{name: "the AKS name", cluster: "prod-westeurope-01", clusterName: "prod-westeurope-01", want: "prod-westeurope-01"},
		{name: "empty: the AKS name", cluster: "prod-westeurope-01", want: "prod-westeurope-01"},
		{name: "another name", cluster: "prod-westeurope-01", clusterName: "prod-we",
			problem: `:2: cluster.name: is "prod-we", but ama-metrics labels this cluster's series cluster="prod-westeurope-01", the AKS resource name`},
		{name: "the rewritten form without an alias", cluster: "prod-westeurope-01", clusterName: "prod_westeurope_01",
			problem: `cluster.name: is "prod_westeurope_01", but ama-metrics labels this cluster's series cluster="prod-westeurope-01"`},
		{name: "a dot, no AKS cluster named", clusterName: "prod.westeurope",
			problem: `:2: cluster.name: is "prod.westeurope", which no AKS cluster can be named`},
		{name: "a possible AKS name, not checked", clusterName: "prod-westeurope-01", want: "prod-westeurope-01",
			warning: `cluster.name: cannot be checked against the cluster label ama-metrics writes`},
		{name: "an alias", cluster: "aks-7f3a", clusterName: "prod-westeurope-01", alias: true, want: "prod_westeurope_01",
			warning: `prometheus.azure.clusterAlias: is true: ama-metrics labels every series of this cluster cluster="prod_westeurope_01" (ama-metrics rewrites "prod-westeurope-01" as "prod_westeurope_01"`},
		{name: "an alias already rewritten", cluster: "aks-7f3a", clusterName: "prod_we", alias: true, want: "prod_we",
			warning: `Azure's own recommended rules and dashboards`},
		{name: "an alias of punctuation", clusterName: "-.-", alias: true,
			problem: `cluster.name: is written as ama-metrics' cluster_alias (prometheus.azure.clusterAlias: true), and has no letter or digit`},
		{name: "an alias of nothing", alias: true, problem: `prometheus.azure.clusterAlias: is true, but cluster.name is empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, warnings, err := Read(writeConfig(t, azure(tc.cluster, tc.clusterName, tc.alias)))
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("want %q, got %v", tc.problem, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Cluster.Name != tc.want {
				t.Errorf("cluster.name %q, want %q", c.Cluster.Name, tc.want)
			}
			if got := fmt.Sprint(warnings); tc.warning != "" && !strings.Contains(got, tc.warning) || tc.warning == "" && strings.Contains(got, "ama-metrics") {
				t.Errorf("warnings %s, want %q", got, tc.warning)
			}
		})
	}
	// The same name on another platform is left as it is.
	c, err := Load(writeConfig(t, "cluster:\n  name: prod.westeurope\n"))
	if err != nil || c.Cluster.Name != "prod.westeurope" {
		t.Errorf("off Azure: %v %v", c, err)
	}
}

// Issue 66, the same trap on GMP: its collectors and rule evaluator write
// and select the GKE cluster's name, which a name with a dot or upper
// case can never be: a warning at cluster.name.
func TestGMPClusterName(t *testing.T) {
	for name, warned := range map[string]bool{"prod-europe-1": false, "Prod.Europe": true, "prod_europe": true} {
		_, warnings, err := Read(writeConfig(t, "cluster:\n  name: "+name+"\nprometheus:\n  platform: gmp\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(fmt.Sprint(warnings), "which no GKE cluster can be named"); got != warned {
			t.Errorf("%s: warned %v, want %v: %v", name, got, warned, warnings)
		}
	}
}
