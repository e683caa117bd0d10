package dashboards

//lint:file-ignore SA1019 Classic dashboard JSON is what kube-prometheus-stack's Grafana sidecar provisions; the SDK marks it deprecated in favour of dashboardv2, which winobs renders only as an opt-in.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/view"
)

func build(t *testing.T, mutate func(*config.Config)) []dashboard.Dashboard {
	t.Helper()
	cfg := config.Default()
	if mutate != nil {
		mutate(cfg)
	}
	ds, err := Build(view.Of(cfg).Dashboards)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// The JSON decodes back into the SDK's types and encodes to the same bytes.
// (Plain json.Unmarshal: the SDK's strict decoder rejects its own output.)
func TestRoundTrip(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	for _, d := range build(t, nil) {
		first, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back dashboard.Dashboard
		if err := json.Unmarshal(first, &back); err != nil {
			t.Fatalf("%s: %v", *d.Uid, err)
		}
		second, _ := json.Marshal(back)
		if !bytes.Equal(first, second) {
			t.Errorf("%s does not round-trip through the SDK types", *d.Uid)
		}
	}
}

// Panel ids are unique, every panel has a unit, every target a unique refId
// and a datasource variable.
func TestPanelsAreComplete(t *testing.T) {
	uids := map[string]bool{}
	for _, d := range build(t, nil) {
		uids[*d.Uid] = true
		ids := map[uint32]bool{}
		for _, pr := range d.Panels {
			if pr.RowPanel != nil {
				ids[pr.RowPanel.Id] = true
				continue
			}
			p := pr.Panel
			if p.Id == nil || ids[*p.Id] {
				t.Errorf("%s/%v: missing or duplicate panel id", *d.Uid, p.Title)
				continue
			}
			ids[*p.Id] = true
			if p.FieldConfig == nil || p.FieldConfig.Defaults.Unit == nil || *p.FieldConfig.Defaults.Unit == "" {
				t.Errorf("%s/%s: no unit", *d.Uid, *p.Title)
			}
			if p.Description == nil || *p.Description == "" {
				t.Errorf("%s/%s: no description", *d.Uid, *p.Title)
			}
			refs := map[string]bool{}
			raw, _ := json.Marshal(p.Targets)
			var targets []struct {
				RefID      string `json:"refId"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			}
			json.Unmarshal(raw, &targets)
			if len(targets) == 0 {
				t.Errorf("%s/%s: no targets", *d.Uid, *p.Title)
			}
			for _, tg := range targets {
				if tg.RefID == "" || refs[tg.RefID] {
					t.Errorf("%s/%s: missing or duplicate refId %q", *d.Uid, *p.Title, tg.RefID)
				}
				refs[tg.RefID] = true
				if tg.Datasource.UID != "${prometheus}" && tg.Datasource.UID != "${loki}" {
					t.Errorf("%s/%s: target datasource %q is not a variable", *d.Uid, *p.Title, tg.Datasource.UID)
				}
			}
		}
	}
	if len(uids) != 4 {
		t.Errorf("want 4 dashboards with distinct uids, got %v", uids)
	}
}

// Thresholds come from the alert config: one source of truth.
func TestThresholdsFollowAlertConfig(t *testing.T) {
	ds := build(t, func(c *config.Config) {
		c.Alerts.NodeCommit.Warning, c.Alerts.NodeCommit.Critical = 0.81, 0.93
		c.Alerts.ContainerCommit.Warning = 0.77
	})
	all, _ := json.Marshal(ds)
	for _, want := range []string{`"value":0.81`, `"value":0.93`, `"value":0.77`} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("no threshold step %s", want)
		}
	}
}

// A configured cluster adds the variable and narrows every query.
func TestClusterVariable(t *testing.T) {
	single, _ := json.Marshal(build(t, nil))
	if bytes.Contains(single, []byte("$cluster")) || bytes.Contains(single, []byte("${cluster")) {
		t.Error("single-cluster dashboards select on $cluster")
	}
	ds := build(t, func(c *config.Config) { c.Cluster.Name, c.Cluster.Label = "lab", "k8s_cluster" })
	for _, d := range ds[:2] { // the Prometheus dashboards
		raw, _ := json.Marshal(d)
		if !bytes.Contains(raw, []byte("k8s_cluster=~`${cluster:regex}|`")) || !strings.Contains(string(raw), `"name":"cluster"`) {
			t.Errorf("%s: no cluster variable or matcher", *d.Uid)
		}
	}
}

// No variable's query refers to itself, in any of the forms Grafana
// interpolates ($name, ${name…}, [[name…]]): the cluster variable filtered
// on the cluster it holds could only ever list that one, and one Grafana
// for many clusters is why it exists.
func TestNoVariableQueriesItself(t *testing.T) {
	for _, mutate := range []func(*config.Config){nil, func(c *config.Config) { c.Cluster.Name = "prod-eu-1" }} {
		for _, d := range build(t, mutate) {
			for _, v := range d.Templating.List {
				raw, _ := json.Marshal(v.Query)
				q := string(raw)
				for _, ref := range []string{"$" + v.Name, "${" + v.Name, "[[" + v.Name} {
					if i := strings.Index(q, ref); i >= 0 && !isNameChar(q, i+len(ref)) {
						t.Errorf("%s: variable %s queries itself: %s", *d.Uid, v.Name, q)
					}
				}
			}
		}
	}
}

// A row repeated per value of a variable never opens on All: Grafana
// (dashboard-scene/utils/variables.ts: defaultToAll = includeAll) opens an
// includeAll variable without a saved value on All, one row per node of the
// cluster before the user picked anything.
func TestRepeatedRowsDoNotOpenOnAll(t *testing.T) {
	for _, d := range build(t, nil) {
		vars := map[string]dashboard.VariableModel{}
		for _, v := range d.Templating.List {
			vars[v.Name] = v
		}
		for _, p := range d.Panels {
			if p.RowPanel == nil || p.RowPanel.Repeat == nil {
				continue
			}
			if v := vars[*p.RowPanel.Repeat]; v.IncludeAll != nil && *v.IncludeAll {
				t.Errorf("%s: a row repeats over %s, which opens on All", *d.Uid, v.Name)
			}
		}
	}
}

// The fleet table of Windows / Nodes shows every node whatever the instance
// variable holds (it opens on one node), and each node's name opens it,
// keeping the cluster where there is one.
func TestFleetTableShowsEveryNodeAndLinksIntoOne(t *testing.T) {
	for name, mutate := range map[string]func(*config.Config){"single": nil, "multi-cluster": func(c *config.Config) { c.Cluster.Label, c.Cluster.Name = "cluster", "eu" }} {
		var fleet *dashboard.Panel
		for _, d := range build(t, mutate) {
			for _, pr := range d.Panels {
				if *d.Uid == NodesUID && pr.Panel != nil && *pr.Panel.Title == "Windows nodes" {
					fleet = pr.Panel
				}
			}
		}
		if fleet == nil {
			t.Fatalf("%s: no fleet table", name)
		}
		raw, _ := json.Marshal(fleet)
		if strings.Contains(string(raw), "$instance") {
			t.Errorf("%s: the fleet table narrows to the picked nodes", name)
		}
		var url string
		for _, o := range fleet.FieldConfig.Overrides {
			m, _ := json.Marshal(o.Matcher.Options)
			for _, prop := range o.Properties {
				if string(m) == `"instance"` && prop.Id == "links" {
					url = fmt.Sprint(prop.Value)
				}
			}
		}
		if !strings.Contains(url, "/d/"+NodesUID+"?") || !strings.Contains(url, "var-instance=${__value.raw}") {
			t.Errorf("%s: the instance column does not open the node: %q", name, url)
		}
		if want := mutate != nil; strings.Contains(url, "${cluster:queryparam}") != want {
			t.Errorf("%s: the link keeps the cluster: %v, want %v (%s)", name, !want, want, url)
		}
	}
}

// isNameChar: the byte at i continues a variable name ($cluster_x is
// another variable than $cluster).
func isNameChar(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func TestLinksReachTheOtherDashboards(t *testing.T) {
	for _, d := range build(t, nil) {
		if len(d.Links) != 3 {
			t.Errorf("%s has %d links, want 3", *d.Uid, len(d.Links))
		}
		for _, l := range d.Links {
			if l.Url == nil || !strings.HasPrefix(*l.Url, "/d/winobs-windows-") || *l.Url == "/d/"+*d.Uid {
				t.Errorf("%s: bad link %v", *d.Uid, l.Url)
			}
		}
	}
}
