// Package dashboards builds winobs's Grafana dashboards for Windows nodes,
// pods, event logs and the log pipeline with grafana-foundation-sdk. Queries
// live in queries.go, layouts in one file per dashboard.
package dashboards

//lint:file-ignore SA1019 Classic dashboard JSON is what kube-prometheus-stack's Grafana sidecar provisions; the SDK marks it deprecated in favour of dashboardv2, which winobs renders only as an opt-in.

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/winobs/winobs/gen/meta"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/view"
)

// Stable dashboard uids: links and bookmarks survive regeneration.
const (
	NodesUID    = "winobs-windows-nodes"
	PodsUID     = "winobs-windows-pods"
	EventsUID   = "winobs-windows-events"
	PipelineUID = "winobs-windows-log-pipeline"
)

var titles = map[string]string{
	NodesUID:    "Windows / Nodes",
	PodsUID:     "Windows / Pods",
	EventsUID:   "Windows / Event log",
	PipelineUID: "Windows / Log pipeline",
}

// order is the order of the dashboards in links and output.
var order = []string{NodesUID, PodsUID, EventsUID, PipelineUID}

// Build returns the four dashboards.
func Build(v view.Dashboards) ([]dashboard.Dashboard, error) {
	q := queries{v.Terms}
	builders := map[string]*dashboard.DashboardBuilder{
		NodesUID:    nodes(v, q),
		PodsUID:     pods(v, q),
		EventsUID:   events(v, q),
		PipelineUID: pipeline(v, q),
	}
	out := make([]dashboard.Dashboard, 0, len(order))
	for _, uid := range order {
		d, err := builders[uid].Build()
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", uid, err)
		}
		numberPanels(&d)
		out = append(out, d)
	}
	return out, nil
}

// Files renders every dashboard as JSON (dashboards/<uid>.json, for import or
// provisioning) and as a ConfigMap that the Grafana sidecar of
// kube-prometheus-stack loads into the configured folder; with
// dashboards.v2, also as a dashboard.grafana.app/v2 resource
// (dashboards-v2/<uid>.json).
func Files(v view.Dashboards) ([]render.File, error) {
	ds, err := Build(v)
	if err != nil {
		return nil, err
	}
	var files []render.File
	for _, d := range ds {
		raw, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return nil, err
		}
		raw = append(raw, '\n')
		uid := *d.Uid
		cm := &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: withAnnotation(meta.Object(v.Namespace, "winobs-dashboard-"+uid[len("winobs-"):], meta.ComponentDashboards,
				map[string]string{v.Dashboards.SidecarLabel: v.Dashboards.SidecarLabelValue}),
				v.Dashboards.FolderAnnotation, v.Dashboards.Folder),
			Data: map[string]string{uid + ".json": string(raw)},
		}
		files = append(files,
			render.File{Path: "dashboards/" + uid + ".json", Raw: raw},
			render.File{Path: "dashboards/" + uid + ".yaml", Objects: []any{cm}},
		)
		if v.Dashboards.V2 {
			m, err := V2(d)
			if err != nil {
				return nil, err
			}
			raw, err := json.MarshalIndent(m, "", "  ")
			if err != nil {
				return nil, err
			}
			files = append(files, render.File{Path: "dashboards-v2/" + uid + ".json", Raw: append(raw, '\n')})
		}
	}
	return files, nil
}

// newDashboard starts a dashboard with what all four share: uid, tags,
// datasource (and cluster) variables, and links to the other three.
func newDashboard(v view.Dashboards, q queries, uid, desc string, datasources ...string) *dashboard.DashboardBuilder {
	b := dashboard.NewDashboardBuilder(titles[uid]).Uid(uid).Description(desc).
		Tags(v.Dashboards.Tags).Editable().Timezone("browser").Refresh("1m").
		Time("now-6h", "now").Tooltip(dashboard.DashboardCursorSyncCrosshair)
	for _, ds := range datasources {
		b.WithVariable(dashboard.NewDatasourceVariableBuilder(ds).Label(map[string]string{promVar: "Prometheus", lokiVar: "Loki"}[ds]).Type(ds))
	}
	if v.Cluster.Multi() {
		// Loki's streams carry the cluster wherever the agents ship (they
		// write it), Prometheus' series only where something puts it on
		// them: a dashboard with Loki lists the clusters from Loki, so its
		// LogQL selects the cluster's streams while its PromQL also takes
		// series without the label (vocab.VarOrAbsent).
		ds, values := promDS, q.clusterValues()
		if slices.Contains(datasources, lokiVar) {
			ds, values = lokiDS, q.clusterLogValues()
		}
		cluster := queryVar("cluster", ds, values, false)
		b.WithVariable(cluster.Current(dashboard.VariableOption{Text: str(v.Cluster.Name), Value: str(v.Cluster.Name)}))
	}
	for _, other := range order {
		if other != uid {
			b.Link(dashboard.NewDashboardLinkBuilder(titles[other]).Type(dashboard.DashboardLinkTypeLink).
				Url("/d/" + other).KeepTime(true).IncludeVars(true).Icon("dashboard").TargetBlank(false).AsDropdown(false).Tooltip(""))
		}
	}
	return b
}

// queryVar is a variable filled from label values; multi adds "All" (.*).
func queryVar(name string, ds common.DataSourceRef, def string, multi bool) *dashboard.QueryVariableBuilder {
	v := dashboard.NewQueryVariableBuilder(name).Label(name).Datasource(ds).
		Query(dashboard.StringOrMap{String: cog.ToPtr(def)}).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc).
		AllowCustomValue(false)
	if multi {
		v.Multi(true).IncludeAll(true).AllValue(".*")
	}
	return v
}

// hiddenListVar is a hidden variable holding every value of its query,
// formatted by Grafana as a regex of exactly those values (no ".*" all
// value), so a selector =~ it reads only the series it lists.
func hiddenListVar(name string, ds common.DataSourceRef, def string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).Label(name).Datasource(ds).
		Query(dashboard.StringOrMap{String: cog.ToPtr(def)}).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).IncludeAll(true).Hide(dashboard.VariableHideHideVariable).
		Current(dashboard.VariableOption{Text: str("All"), Value: str("$__all")})
}

func str(s string) dashboard.StringOrArrayOfString {
	return dashboard.StringOrArrayOfString{String: &s}
}

// numberPanels gives every panel and row a unique, stable id (the SDK sets
// none), so viewPanel links and provisioning diffs stay stable.
func numberPanels(d *dashboard.Dashboard) {
	id := uint32(1)
	for i := range d.Panels {
		switch p := d.Panels[i]; {
		case p.Panel != nil:
			p.Panel.Id = cog.ToPtr(id)
		case p.RowPanel != nil:
			p.RowPanel.Id = id
		}
		id++
	}
}

func withAnnotation(m metav1.ObjectMeta, key, value string) metav1.ObjectMeta {
	m.Annotations = map[string]string{key: value}
	return m
}
