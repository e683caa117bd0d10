package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/logs"
	"github.com/grafana/grafana-foundation-sdk/go/loki"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// Datasource variables: every panel reads through them, so the dashboards
// work with whatever the user's datasources are called.
const (
	promVar = "prometheus"
	lokiVar = "loki"
)

// Units the SDK has no constant for.
const (
	unitPagesPerSecond = "suffix: pages/s"
	unitCores          = "suffix: cores"
	unitEvents         = "suffix: events"
	unitLines          = "suffix: lines"
)

var (
	promDS = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + promVar + "}")}
	lokiDS = common.DataSourceRef{Type: cog.ToPtr("loki"), Uid: cog.ToPtr("${" + lokiVar + "}")}
)

// query is one panel target; PromQL unless loki is set.
type query struct {
	expr, legend string
	instant      bool // one value per series, for tables
	loki         bool
}

func prom(expr, legend string) query  { return query{expr: expr, legend: legend} }
func promTable(expr string) query     { return query{expr: expr, instant: true} }
func logQL(expr, legend string) query { return query{expr: expr, legend: legend, loki: true} }
func logQLTable(expr string) query    { return query{expr: expr, instant: true, loki: true} }

// targets builds the SDK targets with refIds A, B, C... in order.
func targets(qs []query) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], len(qs))
	for i, q := range qs {
		ref := string(rune('A' + i))
		if q.loki {
			b := loki.NewDataqueryBuilder().Expr(q.expr).RefId(ref).Datasource(lokiDS)
			if q.legend != "" {
				b.LegendFormat(q.legend)
			}
			if q.instant {
				b.QueryType("instant").Instant(true)
			} else {
				b.QueryType("range").Range(true)
			}
			out[i] = b
			continue
		}
		b := prometheus.NewDataqueryBuilder().Expr(q.expr).RefId(ref).Datasource(promDS)
		if q.legend != "" {
			b.LegendFormat(q.legend)
		}
		if q.instant {
			b.Instant().Format(prometheus.PromQueryFormatTable)
		}
		out[i] = b
	}
	return out
}

func datasource(qs []query) common.DataSourceRef {
	if len(qs) > 0 && qs[0].loki {
		return lokiDS
	}
	return promDS
}

// thresholds colours values green below the first step, orange from it and
// red from the second (the alert thresholds, where the panel has them).
func thresholds(steps ...float64) cog.Builder[dashboard.ThresholdsConfig] {
	return stepsConfig(false, steps)
}

// lowThresholds are thresholds where low is bad (free space): red below the
// first step, then orange, yellow, and green from the last.
func lowThresholds(steps ...float64) cog.Builder[dashboard.ThresholdsConfig] {
	return stepsConfig(true, steps)
}

func stepsConfig(low bool, steps []float64) cog.Builder[dashboard.ThresholdsConfig] {
	base, colors := stepColors(low, len(steps))
	ts := []dashboard.Threshold{{Color: base}}
	for i, s := range steps {
		ts = append(ts, dashboard.Threshold{Value: cog.ToPtr(s), Color: colors[i]})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(ts)
}

// stepColors are the base colour and one colour per step.
func stepColors(low bool, n int) (string, []string) {
	if !low {
		return "green", []string{"orange", "red", "dark-red"}[:n]
	}
	return "red", []string{"orange", "yellow", "green"}[3-n:]
}

// thresholdsValue is thresholds as an override value. Override values are
// untyped, so it is a map: it then decodes and re-encodes to the same JSON.
func thresholdsValue(low bool, steps []float64) map[string]any {
	base, colors := stepColors(low, len(steps))
	ts := []map[string]any{{"color": base, "value": nil}}
	for i, s := range steps {
		ts = append(ts, map[string]any{"color": colors[i], "value": s})
	}
	return map[string]any{"mode": "absolute", "steps": ts}
}

// graph is a time series panel; with steps it draws them as dashed lines.
func graph(title, desc, unit string, qs []query, steps ...float64) *timeseries.PanelBuilder {
	return graphWith(thresholds(steps...), title, desc, unit, qs, len(steps) > 0)
}

// graphLow is graph for a value where low is bad (free space).
func graphLow(title, desc, unit string, qs []query, steps ...float64) *timeseries.PanelBuilder {
	return graphWith(lowThresholds(steps...), title, desc, unit, qs, len(steps) > 0)
}

func graphWith(th cog.Builder[dashboard.ThresholdsConfig], title, desc, unit string, qs []query, dashed bool) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(desc).Unit(unit).
		Datasource(datasource(qs)).Targets(targets(qs)).Height(8).Span(12).
		FillOpacity(10).ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).ShowLegend(true).Calcs([]string{"lastNotNull", "max"}))
	if dashed {
		p.Thresholds(th).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
	}
	if unit == units.PercentUnit {
		p.Min(0).Max(1)
	}
	return p
}

// column names one value column of a table (the merged instant queries).
type column struct {
	title, unit string
	query       string
	steps       []float64
	low         bool              // low values are bad (free space)
	mapping     map[string]string // value -> text, e.g. 1 -> running
}

// grid is a table panel. With columns it merges their instant queries into
// one row per series; sortBy names the column to sort by, descending.
func grid(title, desc, unit string, qs []query, cols []column, sortBy string) *table.PanelBuilder {
	for _, c := range cols {
		qs = append(qs, promTable(c.query))
	}
	p := table.NewPanelBuilder().Title(title).Description(desc).Unit(unit).
		Datasource(datasource(qs)).Targets(targets(qs)).Height(8).Span(24).
		// The SDK's default footer has a null reducer that its own decoder rejects.
		Footer(common.NewTableFooterOptionsBuilder().Reducer([]string{})).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]bool{"Time": true},
		}})
	for i, c := range cols {
		field := "Value #" + string(rune('A'+len(qs)-len(cols)+i))
		props := []dashboard.DynamicConfigValue{{Id: "displayName", Value: c.title}, {Id: "unit", Value: c.unit}}
		if len(c.steps) > 0 {
			props = append(props, dashboard.DynamicConfigValue{Id: "thresholds", Value: thresholdsValue(c.low, c.steps)},
				dashboard.DynamicConfigValue{Id: "custom.cellOptions", Value: map[string]string{"type": "color-background"}})
		}
		if len(c.mapping) > 0 {
			opts := map[string]any{}
			for v, text := range c.mapping {
				opts[v] = map[string]string{"text": text}
			}
			props = append(props, dashboard.DynamicConfigValue{Id: "mappings", Value: []any{map[string]any{"type": "value", "options": opts}}})
		}
		p.OverrideByName(field, props)
	}
	if sortBy != "" {
		p.SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName(sortBy).Desc(true),
		})
	}
	return p
}

// logLines is a logs panel.
func logLines(title, desc string, q query) *logs.PanelBuilder {
	return logs.NewPanelBuilder().Title(title).Description(desc).Unit(units.Short).
		Datasource(lokiDS).Targets(targets([]query{q})).Height(12).Span(24).
		ShowTime(true).WrapLogMessage(true).EnableLogDetails(true).
		SortOrder(common.LogsSortOrderDescending)
}
