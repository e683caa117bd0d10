package dashboards

//lint:file-ignore SA1019 The classic dashboard is the source this file converts from.

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/dashboardv2"
	"github.com/grafana/grafana-foundation-sdk/go/loki"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/resource"
)

// V2 returns a classic dashboard as a dashboard.grafana.app/v2 resource for
// Grafana 13: the same panels, queries, field configs (units, thresholds),
// options, transformations, variables and links, with each classic row as a
// row of grid items. Converting the built dashboard, rather than building
// the layout a second time, keeps one definition of every dashboard.
func V2(d dashboard.Dashboard) (resource.Manifest, error) {
	if d.Uid == nil || d.Title == nil {
		return resource.Manifest{}, fmt.Errorf("dashboard without uid or title")
	}
	spec := dashboardv2.NewDashboard()
	spec.Title = *d.Title
	spec.Description = d.Description
	spec.Tags = d.Tags
	spec.Editable = d.Editable
	spec.LiveNow = d.LiveNow
	if d.GraphTooltip != nil {
		spec.CursorSync = []dashboardv2.DashboardCursorSync{
			dashboardv2.DashboardCursorSyncOff, dashboardv2.DashboardCursorSyncCrosshair, dashboardv2.DashboardCursorSyncTooltip,
		}[*d.GraphTooltip]
	}
	spec.TimeSettings.Timezone = d.Timezone
	if d.Time != nil {
		spec.TimeSettings.From, spec.TimeSettings.To = d.Time.From, d.Time.To
	}
	if d.Refresh != nil {
		spec.TimeSettings.AutoRefresh = *d.Refresh
	}
	for _, l := range d.Links {
		link := dashboardv2.DashboardLink{
			Title: l.Title, Type: dashboardv2.DashboardLinkType(l.Type), Icon: l.Icon, Tooltip: l.Tooltip, Url: l.Url,
			Tags: l.Tags, AsDropdown: l.AsDropdown, TargetBlank: l.TargetBlank, IncludeVars: l.IncludeVars, KeepTime: l.KeepTime,
		}
		if l.Placement != nil {
			p := dashboardv2.DashboardLinkPlacement(*l.Placement)
			link.Placement = &p
		}
		spec.Links = append(spec.Links, link)
	}
	for _, v := range d.Templating.List {
		kind, err := variableV2(v)
		if err != nil {
			return resource.Manifest{}, fmt.Errorf("dashboard %s: variable %s: %w", *d.Uid, v.Name, err)
		}
		spec.Variables = append(spec.Variables, kind)
	}
	if err := layoutV2(d.Panels, spec); err != nil {
		return resource.Manifest{}, fmt.Errorf("dashboard %s: %w", *d.Uid, err)
	}
	if err := spec.Validate(); err != nil {
		return resource.Manifest{}, fmt.Errorf("dashboard %s: %w", *d.Uid, err)
	}
	return dashboardv2.Manifest(*d.Uid, built{*spec}).Build()
}

// built hands an assembled spec to the SDK's Manifest, which takes a builder.
type built struct{ d dashboardv2.Dashboard }

func (b built) Build() (dashboardv2.Dashboard, error) { return b.d, nil }

// layoutV2 turns classic panels into elements and a rows layout: every
// classic row becomes a row whose grid items are placed relative to it.
func layoutV2(panels []dashboard.PanelOrRowPanel, spec *dashboardv2.Dashboard) error {
	rows := &dashboardv2.RowsLayoutKind{Kind: "RowsLayout"}
	var row *dashboardv2.GridLayoutKind
	var rowY uint32
	for _, pr := range panels {
		if r := pr.RowPanel; r != nil {
			if len(r.Panels) > 0 {
				return fmt.Errorf("row %q: collapsed rows holding panels have no v2 conversion", deref(r.Title))
			}
			rs := dashboardv2.RowsLayoutRowSpec{
				Title: r.Title, Collapse: &r.Collapsed,
				Layout: dashboardv2.GridLayoutKindOrAutoGridLayoutKindOrTabsLayoutKindOrRowsLayoutKind{GridLayoutKind: &dashboardv2.GridLayoutKind{Kind: "GridLayout"}},
			}
			if r.Repeat != nil {
				rs.Repeat = &dashboardv2.RowRepeatOptions{Mode: dashboardv2.RepeatModeVariable, Value: *r.Repeat}
			}
			rows.Spec.Rows = append(rows.Spec.Rows, dashboardv2.RowsLayoutRowKind{Kind: "RowsLayoutRow", Spec: rs})
			row = rs.Layout.GridLayoutKind
			if r.GridPos != nil {
				rowY = r.GridPos.Y + 1
			}
			continue
		}
		p := pr.Panel
		if row == nil {
			return fmt.Errorf("panel %q before the first row", deref(p.Title))
		}
		name, el, err := panelV2(p)
		if err != nil {
			return err
		}
		spec.Elements[name] = el
		pos := dashboard.GridPos{}
		if p.GridPos != nil {
			pos = *p.GridPos
		}
		row.Spec.Items = append(row.Spec.Items, dashboardv2.GridLayoutItemKind{Kind: "GridLayoutItem", Spec: dashboardv2.GridLayoutItemSpec{
			X: int64(pos.X), Y: int64(pos.Y) - int64(rowY), Width: int64(pos.W), Height: int64(pos.H),
			Element: dashboardv2.ElementReference{Kind: "ElementReference", Name: name},
		}})
	}
	spec.Layout = dashboardv2.GridLayoutKindOrRowsLayoutKindOrAutoGridLayoutKindOrTabsLayoutKind{RowsLayoutKind: rows}
	return nil
}

// panelV2 converts one panel; its element name is panel-<id>.
func panelV2(p *dashboard.Panel) (string, dashboardv2.Element, error) {
	switch {
	case p.Id == nil:
		return "", dashboardv2.Element{}, fmt.Errorf("panel %q has no id", deref(p.Title))
	case p.Repeat != nil || p.LibraryPanel != nil:
		return "", dashboardv2.Element{}, fmt.Errorf("panel %q: repeated and library panels have no v2 conversion", deref(p.Title))
	}
	spec := dashboardv2.PanelSpec{
		Id: float64(*p.Id), Title: deref(p.Title), Description: p.Description, Transparent: p.Transparent, Links: []dashboardv2.DataLink{},
		Data: dashboardv2.QueryGroupKind{Kind: "QueryGroup", Spec: dashboardv2.QueryGroupSpec{
			Queries: []dashboardv2.PanelQueryKind{}, Transformations: []dashboardv2.TransformationKind{},
			QueryOptions: dashboardv2.QueryOptionsSpec{Interval: p.Interval, TimeFrom: p.TimeFrom, TimeShift: p.TimeShift},
		}},
		VizConfig: dashboardv2.VizConfigKind{Kind: "VizConfig", Group: p.Type, Spec: dashboardv2.VizConfigSpec{Options: p.Options}},
	}
	for _, l := range p.Links {
		spec.Links = append(spec.Links, dashboardv2.DataLink{Title: l.Title, Url: deref(l.Url), TargetBlank: &l.TargetBlank})
	}
	for _, t := range p.Targets {
		q, err := queryV2(t, p.Datasource)
		if err != nil {
			return "", dashboardv2.Element{}, fmt.Errorf("panel %q: %w", deref(p.Title), err)
		}
		spec.Data.Spec.Queries = append(spec.Data.Spec.Queries, q)
	}
	for _, t := range p.Transformations {
		ts := dashboardv2.TransformationSpec{Disabled: t.Disabled, Options: t.Options}
		if err := recast(t.Filter, &ts.Filter); err != nil {
			return "", dashboardv2.Element{}, err
		}
		if err := recast(t.Topic, &ts.Topic); err != nil {
			return "", dashboardv2.Element{}, err
		}
		spec.Data.Spec.Transformations = append(spec.Data.Spec.Transformations, dashboardv2.TransformationKind{Kind: "Transformation", Group: t.Id, Spec: ts})
	}
	// Field configs share their JSON form between the two schemas; the
	// plugin's custom part keeps its SDK type.
	if err := recast(p.FieldConfig, &spec.VizConfig.Spec.FieldConfig); err != nil {
		return "", dashboardv2.Element{}, fmt.Errorf("panel %q: field config: %w", deref(p.Title), err)
	}
	if p.FieldConfig != nil {
		spec.VizConfig.Spec.FieldConfig.Defaults.Custom = p.FieldConfig.Defaults.Custom
	}
	if spec.VizConfig.Spec.FieldConfig.Overrides == nil {
		spec.VizConfig.Spec.FieldConfig.Overrides = []dashboardv2.Dashboardv2FieldConfigSourceOverrides{}
	}
	return fmt.Sprintf("panel-%d", *p.Id), dashboardv2.Element{PanelKind: &dashboardv2.PanelKind{Kind: "Panel", Spec: spec}}, nil
}

// queryV2 moves a classic target's datasource, refId and hide flag out of
// the query body, where v2 keeps them. The body keeps its SDK type, as the
// SDK decodes it back.
func queryV2(classic any, panelDS *common.DataSourceRef) (dashboardv2.PanelQueryKind, error) {
	var q target
	var err error
	switch t := classic.(type) {
	case prometheus.Dataquery:
		q, err = splitQuery(t)
	case *prometheus.Dataquery:
		q, err = splitQuery(*t)
	case loki.Dataquery:
		q, err = splitQuery(t)
	case *loki.Dataquery:
		q, err = splitQuery(*t)
	default:
		err = fmt.Errorf("query of type %T has no v2 conversion", classic)
	}
	if err != nil {
		return dashboardv2.PanelQueryKind{}, err
	}
	if q.Datasource == nil {
		q.Datasource = panelDS
	}
	if q.Datasource == nil || q.Datasource.Type == nil || q.Datasource.Uid == nil {
		return dashboardv2.PanelQueryKind{}, fmt.Errorf("query without a datasource")
	}
	return dashboardv2.PanelQueryKind{Kind: "PanelQuery", Spec: dashboardv2.PanelQuerySpec{
		RefId: q.RefID, Hidden: q.Hide, Query: dataQuery(*q.Datasource, q.body),
	}}, nil
}

// target is a classic target taken apart: what v2 keeps beside the query,
// and the rest.
type target struct {
	RefID      string                `json:"refId"`
	Datasource *common.DataSourceRef `json:"datasource"`
	Hide       bool                  `json:"hide"`
	body       any
}

// splitQuery takes a target apart; its body is a T without those fields.
func splitQuery[T any](t T) (target, error) {
	var q target
	var fields map[string]json.RawMessage
	if err := recast(t, &q); err != nil {
		return q, err
	}
	if err := recast(t, &fields); err != nil {
		return q, err
	}
	delete(fields, "refId")
	delete(fields, "datasource")
	delete(fields, "hide")
	body := new(T)
	if err := recast(fields, body); err != nil {
		return q, err
	}
	q.body = body
	return q, nil
}

func dataQuery(ds common.DataSourceRef, spec any) dashboardv2.DataQueryKind {
	return dashboardv2.DataQueryKind{
		Kind: "DataQuery", Group: *ds.Type, Version: "v0",
		Datasource: &dashboardv2.Dashboardv2DataQueryKindDatasource{Name: ds.Uid}, Spec: spec,
	}
}

// variableV2 converts the variable kinds winobs's dashboards use.
func variableV2(v dashboard.VariableModel) (dashboardv2.VariableKind, error) {
	query := ""
	if v.Query != nil && v.Query.String != nil {
		query = *v.Query.String
	}
	empty := ""
	current := dashboardv2.VariableOption{Text: dashboardv2.StringOrArrayOfString{String: &empty}, Value: dashboardv2.StringOrArrayOfString{String: &empty}}
	if v.Current != nil {
		if err := recast(v.Current, &current); err != nil {
			return dashboardv2.VariableKind{}, err
		}
	}
	hide := dashboardv2.VariableHideDontHide
	if v.Hide != nil {
		hide = []dashboardv2.VariableHide{dashboardv2.VariableHideDontHide, dashboardv2.VariableHideHideLabel,
			dashboardv2.VariableHideHideVariable, dashboardv2.VariableHideInControlsMenu}[*v.Hide]
	}
	switch v.Type {
	case dashboard.VariableTypeDatasource:
		return dashboardv2.VariableKind{DatasourceVariableKind: &dashboardv2.DatasourceVariableKind{Kind: "DatasourceVariable", Spec: dashboardv2.DatasourceVariableSpec{
			Name: v.Name, PluginId: query, Label: v.Label, Hide: hide, Current: current, Options: []dashboardv2.VariableOption{},
			Refresh: dashboardv2.VariableRefreshOnDashboardLoad, Regex: deref(v.Regex), Multi: derefBool(v.Multi), IncludeAll: derefBool(v.IncludeAll),
		}}}, nil
	case dashboard.VariableTypeQuery:
		if v.Datasource == nil || v.Datasource.Type == nil || v.Datasource.Uid == nil {
			return dashboardv2.VariableKind{}, fmt.Errorf("query variable without a datasource")
		}
		refresh := dashboardv2.VariableRefreshOnDashboardLoad
		if v.Refresh != nil {
			refresh = []dashboardv2.VariableRefresh{dashboardv2.VariableRefreshNever, dashboardv2.VariableRefreshOnDashboardLoad,
				dashboardv2.VariableRefreshOnTimeRangeChanged}[*v.Refresh]
		}
		sort := dashboardv2.VariableSortDisabled
		if v.Sort != nil {
			sort = variableSorts[*v.Sort]
		}
		return dashboardv2.VariableKind{QueryVariableKind: &dashboardv2.QueryVariableKind{Kind: "QueryVariable", Spec: dashboardv2.QueryVariableSpec{
			Name: v.Name, Label: v.Label, Hide: hide, Current: current, Options: []dashboardv2.VariableOption{},
			// Grafana's own classic-to-v2 migration keeps a string query
			// under this key; definition shows it in the editor.
			Query: dataQuery(*v.Datasource, map[string]any{"__legacyStringValue": query}), Definition: &query,
			Refresh: refresh, Sort: sort, Regex: deref(v.Regex), Multi: derefBool(v.Multi), IncludeAll: derefBool(v.IncludeAll),
			AllValue: v.AllValue, AllowCustomValue: derefBool(v.AllowCustomValue),
		}}}, nil
	case dashboard.VariableTypeCustom:
		return dashboardv2.VariableKind{CustomVariableKind: &dashboardv2.CustomVariableKind{Kind: "CustomVariable", Spec: dashboardv2.CustomVariableSpec{
			Name: v.Name, Query: query, Label: v.Label, Hide: hide, Current: current, Options: []dashboardv2.VariableOption{},
			Multi: derefBool(v.Multi), IncludeAll: derefBool(v.IncludeAll), AllValue: v.AllValue, AllowCustomValue: derefBool(v.AllowCustomValue),
		}}}, nil
	case dashboard.VariableTypeTextbox:
		return dashboardv2.VariableKind{TextVariableKind: &dashboardv2.TextVariableKind{Kind: "TextVariable", Spec: dashboardv2.TextVariableSpec{
			Name: v.Name, Query: query, Label: v.Label, Hide: hide, Current: current,
		}}}, nil
	}
	return dashboardv2.VariableKind{}, fmt.Errorf("variable type %q has no v2 conversion", v.Type)
}

var variableSorts = []dashboardv2.VariableSort{
	dashboardv2.VariableSortDisabled, dashboardv2.VariableSortAlphabeticalAsc, dashboardv2.VariableSortAlphabeticalDesc,
	dashboardv2.VariableSortNumericalAsc, dashboardv2.VariableSortNumericalDesc, dashboardv2.VariableSortAlphabeticalCaseInsensitiveAsc,
	dashboardv2.VariableSortAlphabeticalCaseInsensitiveDesc, dashboardv2.VariableSortNaturalAsc, dashboardv2.VariableSortNaturalDesc,
}

// recast copies a value between two types that share a JSON form.
func recast(from, to any) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return err
	}
	if string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, to)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefBool(b *bool) bool { return b != nil && *b }
