package dashboards

import (
	"encoding/json"
	"fmt"

	"github.com/winobs/winobs/gen/view"
)

// PromQueries are the PromQL the dashboards send to Prometheus: every
// target of a Prometheus panel and every Prometheus query variable, as
// Grafana reads them from the dashboards' JSON (Grafana's variables left
// in). A managed Prometheus that drops unlisted metrics is told to keep
// what these read.
func PromQueries(v view.Dashboards) ([]string, error) {
	ds, err := Build(v)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(ds)
	if err != nil {
		return nil, err
	}
	type source struct {
		Type string `json:"type"`
	}
	var parsed []struct {
		Panels []struct {
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource source `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type       string `json:"type"`
				Query      any    `json:"query"`
				Datasource source `json:"datasource"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &parsed); err != nil {
		return nil, fmt.Errorf("reading the dashboards' queries: %w", err)
	}
	var out []string
	for _, d := range parsed {
		for _, p := range d.Panels {
			for _, t := range p.Targets {
				if t.Datasource.Type == "prometheus" && t.Expr != "" {
					out = append(out, t.Expr)
				}
			}
		}
		for _, v := range d.Templating.List {
			if q, ok := v.Query.(string); ok && v.Type == "query" && v.Datasource.Type == "prometheus" {
				out = append(out, q)
			}
		}
	}
	return out, nil
}
