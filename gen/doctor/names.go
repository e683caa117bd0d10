package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/vocab"
)

// exporterPrefix starts every windows_exporter metric name.
const exporterPrefix = "windows_"

// exporterNames: every windows_exporter metric name a rendered record or
// alert reads is served by the exporters this Prometheus scrapes, or the
// check names the rules that go empty for want of it, records and the
// rules that read them included. An exporter upgraded past the tested
// range (0.32 renames the commit limit), or a collector turned off,
// empties rules without an error anywhere; the rules' own data checks see
// only some of it.
func (r *run) exporterNames(ctx context.Context, c Check) Check {
	served, err := r.servedNames(ctx)
	if err != nil {
		return failed(c, err)
	}
	empty, read, err := r.emptyRules(served)
	if err != nil {
		return failed(c, err)
	}
	if len(empty) == 0 {
		c.Status = Pass
		var other []string
		for n := range read {
			if !served[n] {
				other = append(other, n)
			}
		}
		c.Evidence = []string{fmt.Sprintf("every rule has the exporter metrics it reads: %d of the %d names the rules read are served", len(read)-len(other), len(read))}
		if len(other) > 0 {
			c.Evidence = append(c.Evidence, "not served, read as other exporter versions' names of a served one: "+names(other))
		}
		return c
	}
	// By missing name: the rules it empties.
	byName := map[string][]string{}
	for rule, missing := range empty {
		for _, n := range missing {
			byName[n] = append(byName[n], rule)
		}
	}
	c.Status = Fail
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s is not served by any exporter: empties %s", n, names(byName[n])))
	}
	c.Fix = "a collector is off (windowsExporter.collectors) or the exporter is outside the tested range (" +
		contract.ExporterRange + "): turn the collector on, or run a tested exporter version (see exporter-version)"
	return c
}

// emptyRules evaluates, for every rendered record and alert, whether it
// goes empty when only the served exporter names exist, and for want of
// which names; read are the exporter names the rules read.
func (r *run) emptyRules(served map[string]bool) (empty map[string][]string, read map[string]bool, err error) {
	p := parser.NewParser(parser.Options{})
	exprs := map[string]parser.Expr{}
	var order []string
	records := map[string]bool{}
	for _, g := range r.rules.Groups {
		for _, rule := range g.Rules {
			e, err := p.ParseExpr(rule.Expr)
			if err != nil {
				return nil, nil, fmt.Errorf("%s%s: %w", rule.Record, rule.Alert, err)
			}
			name := rule.Record + rule.Alert
			if rule.Record != "" {
				records[rule.Record] = true
			}
			if _, seen := exprs[name]; !seen {
				order = append(order, name)
			}
			// Alerts of one name (one per threshold) are judged together:
			// the name is empty only when every rule of it is.
			if prev, ok := exprs[name]; ok {
				e = &parser.BinaryExpr{Op: parser.LOR, LHS: prev, RHS: e}
			}
			exprs[name] = e
		}
	}
	read = map[string]bool{}
	memo := map[string][]string{}
	var missing func(e parser.Node) []string // nil: not empty
	recordMissing := func(name string) []string {
		if m, ok := memo[name]; ok {
			return m
		}
		memo[name] = nil // a record read by itself is not empty for it
		memo[name] = missing(exprs[name])
		return memo[name]
	}
	missing = func(e parser.Node) []string {
		switch e := e.(type) {
		case *parser.VectorSelector:
			switch {
			case records[e.Name]:
				return recordMissing(e.Name)
			case strings.HasPrefix(e.Name, exporterPrefix):
				read[e.Name] = true
				if !served[e.Name] {
					return []string{e.Name}
				}
			}
			return nil
		case *parser.Call:
			switch e.Func.Name {
			case "absent", "absent_over_time", "vector", "time", "scalar":
				for _, a := range e.Args {
					missing(a) // names read, never empty for it
				}
				return nil
			}
		case *parser.BinaryExpr:
			l, r := missing(e.LHS), missing(e.RHS)
			lVec, rVec := e.LHS.Type() == parser.ValueTypeVector, e.RHS.Type() == parser.ValueTypeVector
			switch {
			case e.Op == parser.LOR:
				if l != nil && r != nil {
					return append(l, r...)
				}
				return nil
			case e.Op == parser.LUNLESS:
				return l
			case lVec && rVec: // and, and every one-to-one or grouped operation
				return append(l, r...)
			case lVec:
				return l
			case rVec:
				return r
			}
			return nil
		}
		// Anything else (a matrix, parentheses, an aggregation, a function,
		// a subquery) is empty when a vector it reads is.
		var all []string
		for _, c := range parser.Children(e) {
			all = append(all, missing(c)...)
		}
		return all
	}
	empty = map[string][]string{}
	for _, name := range order {
		var m []string
		if records[name] {
			m = recordMissing(name)
		} else {
			m = missing(exprs[name])
		}
		if len(m) > 0 {
			sort.Strings(m)
			empty[name] = slices.Compact(m)
		}
	}
	return empty, read, nil
}

// servedNames are the exporter metric names the exporters serve: every
// windows_ name in one query; on Azure Monitor, whose query API takes one
// metric a selector, each name the rules read.
func (r *run) servedNames(ctx context.Context) (map[string]bool, error) {
	if !r.oneMetric() {
		ss, err := r.query(ctx, "count by (__name__) ("+r.t.Exporter(vocab.Re("__name__", exporterPrefix+".+")).String()+")")
		if err != nil {
			return nil, err
		}
		served := map[string]bool{}
		for _, s := range ss {
			served[s.Metric["__name__"]] = true
		}
		return served, nil
	}
	_, read, err := r.emptyRules(map[string]bool{})
	if err != nil {
		return nil, err
	}
	return r.present(ctx, slices.Sorted(maps.Keys(read)), r.t.Exporter)
}
