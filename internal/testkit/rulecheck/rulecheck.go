// Package rulecheck reads facts off rule expressions for tests: which
// thresholds an alert compares a winobs record with.
package rulecheck

import (
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// Threshold is a `record <op> value` comparison of an alert.
type Threshold struct {
	Record string
	Value  float64
}

// RecordThresholds returns the comparisons of a winobs record (a name with
// ":winobs_") with a number in e.
func RecordThresholds(e parser.Expr) []Threshold {
	var out []Threshold
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		b, ok := n.(*parser.BinaryExpr)
		if !ok || !b.Op.IsComparisonOperator() {
			return nil
		}
		vs, lhs := b.LHS.(*parser.VectorSelector)
		num, rhs := b.RHS.(*parser.NumberLiteral)
		if lhs && rhs && strings.Contains(vs.Name, ":winobs_") {
			out = append(out, Threshold{vs.Name, num.Val})
		}
		return nil
	})
	return out
}
