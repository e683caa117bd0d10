package vocab

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

var (
	grafanaVar  = regexp.MustCompile(`\$\{([A-Za-z_]\w*)(?::\w+)?\}|\$([A-Za-z_]\w*)`)
	labelValues = regexp.MustCompile(`^label_values\((.*), *\w+\)$`)
	readParser  = parser.NewParser(parser.Options{})
)

// MetricsRead are the metric names the PromQL queries select, sorted and
// once each: rule expressions and dashboard queries alike (Grafana's
// variables are given a value first, as Grafana does before it sends a
// query; a label_values() variable reads its selector). A name matched by a
// regular expression (__name__=~…) cannot be listed: it is an error, so no
// keep-list built from this misses what such a query reads.
func MetricsRead(queries []string) ([]string, error) {
	var names []string
	for _, q := range queries {
		if m := labelValues.FindStringSubmatch(q); m != nil {
			q = m[1]
		}
		q = grafanaVar.ReplaceAllStringFunc(q, func(v string) string {
			if strings.HasPrefix(strings.TrimLeft(v, "${"), "__") {
				return "5m" // $__rate_interval, $__range, $__auto
			}
			return "x"
		})
		expr, err := readParser.ParseExpr(q)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", err, q)
		}
		var bad error
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			if vs.Name != "" {
				names = append(names, vs.Name)
				return nil
			}
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type != labels.MatchEqual {
					bad = fmt.Errorf("%s selects metric names by %s: list each name instead", vs, m.Type)
				} else if m.Name == model.MetricNameLabel {
					names = append(names, m.Value)
				}
			}
			return nil
		})
		if bad != nil {
			return nil, bad
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
