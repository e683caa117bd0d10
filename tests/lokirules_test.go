package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/winobs/winobs/internal/lokiproc"
	"github.com/winobs/winobs/internal/lokirules"
)

// lokiRuleTests are the Loki rule test files: every Loki rule gen renders
// is tested in them, on a real Loki (internal/lokirules).
var lokiRuleTests = []string{"loki/windows-events.yaml"}

// The Loki rules, tested as promtool tests Prometheus rules, on a real
// Loki built from the Go module proxy (tests/loki/build.sh): its LogQL
// engine computes every value, `| json`, `line_format` and `regexp` stages
// and structured metadata included. Every rendered Loki alert has a test
// that fires it and one that must not, and each test holds labels and
// annotations exactly.
func TestLokiRules(t *testing.T) {
	loki := lokiproc.Start(t, lokiproc.Options{Tenants: true})
	// Lines 100 minutes back: every test's evaluations end before now, and
	// Loki's queriers still ask the ingesters, which hold them
	// (query_ingesters_within, 3h).
	start := time.Now().UTC().Add(-100 * time.Minute).Truncate(time.Minute)
	fires, quiet := map[string]bool{}, map[string]bool{}
	var rendered []string
	for i, path := range lokiRuleTests {
		f, rules, err := lokirules.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		failures, err := f.Run(context.Background(), lokirules.HTTP{URL: loki.URL}, rules, start, fmt.Sprintf("file%d-", i))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, fail := range failures {
			t.Errorf("%s: %v", path, fail)
		}
		for _, r := range rules {
			rendered = append(rendered, r.Alert)
		}
		for _, test := range f.Tests {
			for _, at := range test.AlertTests {
				if len(at.ExpAlerts) > 0 {
					fires[at.AlertName] = true
				} else {
					quiet[at.AlertName] = true
				}
			}
		}
	}
	slices.Sort(rendered)
	for _, a := range slices.Compact(rendered) {
		if !fires[a] || !quiet[a] {
			t.Errorf("%s: a test where it fires %v, one where it must not %v: want both", a, fires[a], quiet[a])
		}
	}
	if len(rendered) == 0 {
		t.Error("no Loki rules read")
	}
}

// The rule files the Loki rule tests read are the rendered ones.
func TestLokiRuleTestsReadTheRender(t *testing.T) {
	for _, path := range lokiRuleTests {
		f, _, err := lokirules.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, rf := range f.RuleFiles {
			if got := filepath.Clean(filepath.Join(filepath.Dir(path), rf)); got != filepath.Clean("../manifests/ruler/loki/winobs-windows-events.yaml") {
				t.Errorf("%s reads %s, not the rendered Loki rules", path, got)
			}
		}
	}
}
