package tests

import (
	"testing"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/internal/testkit/fixture"
)

// knownMetrics is every metric a rule may select: what the exporters,
// Prometheus and the shipper export (fixture.KnownMetrics) and our records.
func knownMetrics(t *testing.T, groups []rulefmt.RuleGroup) map[string]string {
	known := fixture.KnownMetrics(t)
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				known[r.Record] = "winobs record"
			}
		}
	}
	return known
}
