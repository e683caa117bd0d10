package dashboards

//lint:file-ignore SA1019 The classic dashboard is what the v2 output is compared with.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/dashboardv2"
	"github.com/grafana/grafana-foundation-sdk/go/resource"

	"github.com/winobs/winobs/gen/config"
)

// v2Manifest is a v2 resource with its spec in the SDK's dashboard type.
type v2Manifest struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Metadata   resource.Metadata     `json:"metadata"`
	Spec       dashboardv2.Dashboard `json:"spec"`
}

func twoClusters(c *config.Config) { c.Cluster.Name = "lab" }

// The v2 resources decode into the SDK's types (panel options, field configs
// and queries into their plugin types), validate, and encode to the same
// bytes. One part does not survive by design of the SDK: its typed
// Prometheus and Loki queries have no field for __legacyStringValue, the
// key Grafana's own classic-to-v2 migration uses for a string variable
// query; definition carries the same text and does survive.
func TestV2RoundTripsThroughSDKTypes(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	for _, d := range build(t, twoClusters) {
		m, err := V2(d)
		if err != nil {
			t.Fatal(err)
		}
		first, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back v2Manifest
		if err := json.Unmarshal(first, &back); err != nil {
			t.Fatalf("%s: %v", *d.Uid, err)
		}
		if back.APIVersion != "dashboard.grafana.app/v2" || back.Kind != "Dashboard" || back.Metadata.Name != *d.Uid {
			t.Errorf("%s: %s %s %q", *d.Uid, back.APIVersion, back.Kind, back.Metadata.Name)
		}
		if err := back.Spec.Validate(); err != nil {
			t.Errorf("%s: %v", *d.Uid, err)
		}
		queryVars := 0
		for _, v := range back.Spec.Variables {
			if q := v.QueryVariableKind; q != nil {
				queryVars++
				if q.Spec.Definition == nil || *q.Spec.Definition == "" {
					t.Errorf("%s: variable %s lost its definition", *d.Uid, q.Spec.Name)
				}
				// Put back what the SDK's typed query cannot hold.
				q.Spec.Query.Spec = map[string]any{"__legacyStringValue": *q.Spec.Definition}
			}
		}
		if queryVars == 0 {
			t.Errorf("%s: no query variable", *d.Uid)
		}
		second, _ := json.Marshal(back)
		if !bytes.Equal(first, second) {
			t.Errorf("%s does not round-trip through the SDK types:\n%s\n%s", *d.Uid, first, second)
		}
	}
}

// Every panel of the classic dashboard is in the v2 one with the same id,
// title, description, type, options, field config (units, thresholds,
// overrides) and transformations, every query with the same refId, text and
// datasource, every variable with the same query, and the same links.
func TestV2KeepsPanelsQueriesThresholdsAndLinks(t *testing.T) {
	for _, d := range build(t, twoClusters) {
		m, err := V2(d)
		if err != nil {
			t.Fatal(err)
		}
		v2 := m.Spec.(dashboardv2.Dashboard)
		// Rows: the same titles, repeats and collapse state, in order; each
		// panel placed in its row at its classic position, relative to the row.
		placed := map[string]bool{}
		var v2Rows, classicRows []string
		for _, row := range v2.Layout.RowsLayoutKind.Spec.Rows {
			repeat := ""
			if row.Spec.Repeat != nil {
				repeat = string(row.Spec.Repeat.Mode) + ":" + row.Spec.Repeat.Value
			}
			v2Rows = append(v2Rows, fmt.Sprint(*row.Spec.Title, "|", repeat, "|", *row.Spec.Collapse))
			for _, it := range row.Spec.Layout.GridLayoutKind.Spec.Items {
				placed[it.Spec.Element.Name] = true
			}
		}
		for _, pr := range d.Panels {
			if r := pr.RowPanel; r != nil {
				repeat := ""
				if r.Repeat != nil {
					repeat = "variable:" + *r.Repeat
				}
				classicRows = append(classicRows, fmt.Sprint(*r.Title, "|", repeat, "|", r.Collapsed))
			}
		}
		if !reflect.DeepEqual(v2Rows, classicRows) {
			t.Errorf("%s: rows %v, want %v", *d.Uid, v2Rows, classicRows)
		}
		panels := 0
		for _, pr := range d.Panels {
			p := pr.Panel
			if p == nil {
				continue
			}
			panels++
			name := "panel-" + jsonOf(t, *p.Id)
			el, ok := v2.Elements[name]
			if !ok || el.PanelKind == nil || !placed[name] {
				t.Errorf("%s: panel %q missing or not placed", *d.Uid, *p.Title)
				continue
			}
			s := el.PanelKind.Spec
			if s.Title != *p.Title || !reflect.DeepEqual(s.Description, p.Description) || s.VizConfig.Group != p.Type {
				t.Errorf("%s/%s: title, description or type differ", *d.Uid, *p.Title)
			}
			if jsonOf(t, s.VizConfig.Spec.Options) != jsonOf(t, p.Options) {
				t.Errorf("%s/%s: options differ", *d.Uid, *p.Title)
			}
			if jsonOf(t, s.VizConfig.Spec.FieldConfig) != jsonOf(t, p.FieldConfig) {
				t.Errorf("%s/%s: field config differs:\n%s\n%s", *d.Uid, *p.Title, jsonOf(t, s.VizConfig.Spec.FieldConfig), jsonOf(t, p.FieldConfig))
			}
			if len(s.Data.Spec.Transformations) != len(p.Transformations) {
				t.Errorf("%s/%s: transformations differ", *d.Uid, *p.Title)
			}
			if got, want := v2Queries(t, s.Data.Spec.Queries), classicQueries(t, p); !reflect.DeepEqual(got, want) {
				t.Errorf("%s/%s: queries differ:\n%v\n%v", *d.Uid, *p.Title, got, want)
			}
		}
		if panels == 0 || len(v2.Elements) != panels {
			t.Errorf("%s: %d classic panels, %d v2 elements", *d.Uid, panels, len(v2.Elements))
		}
		if !sameJSON(t, v2.Links, d.Links) {
			t.Errorf("%s: links differ", *d.Uid)
		}
		if len(v2.Variables) != len(d.Templating.List) {
			t.Fatalf("%s: %d variables, want %d", *d.Uid, len(v2.Variables), len(d.Templating.List))
		}
		for i, cv := range d.Templating.List {
			if q := v2.Variables[i].QueryVariableKind; q != nil {
				if q.Spec.Name != cv.Name || *q.Spec.Definition != *cv.Query.String ||
					*q.Spec.Query.Datasource.Name != *cv.Datasource.Uid || q.Spec.Query.Group != *cv.Datasource.Type {
					t.Errorf("%s: variable %s differs", *d.Uid, cv.Name)
				}
			}
		}
	}
}

type queryText struct{ ref, datasource, expr string }

func v2Queries(t *testing.T, qs []dashboardv2.PanelQueryKind) []queryText {
	var out []queryText
	for _, q := range qs {
		var body struct{ Expr string }
		if err := json.Unmarshal([]byte(jsonOf(t, q.Spec.Query.Spec)), &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, queryText{q.Spec.RefId, q.Spec.Query.Group + "/" + *q.Spec.Query.Datasource.Name, body.Expr})
	}
	return out
}

func classicQueries(t *testing.T, p *dashboard.Panel) []queryText {
	var out []queryText
	for _, q := range p.Targets {
		var body struct {
			Expr       string
			RefID      string `json:"refId"`
			Datasource struct {
				Type string
				UID  string `json:"uid"`
			}
		}
		if err := json.Unmarshal([]byte(jsonOf(t, q)), &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, queryText{body.RefID, body.Datasource.Type + "/" + body.Datasource.UID, body.Expr})
	}
	return out
}

// sameJSON: a and b encode to the same JSON value, whatever the key order.
func sameJSON(t *testing.T, a, b any) bool {
	var x, y any
	if err := json.Unmarshal([]byte(jsonOf(t, a)), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(jsonOf(t, b)), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
