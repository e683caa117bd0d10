package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
	"github.com/winobs/winobs/internal/testkit/lokirules"
)

// lokiRuleTests are the Loki rule test files: every Loki rule gen renders
// is tested in them, on a real Loki (internal/testkit/lokirules).
var lokiRuleTests = []string{"loki/windows-events.yaml"}

// The Loki rules, tested as promtool tests Prometheus rules, on a real
// Loki built from the Go module proxy (tests/loki/build.sh): its LogQL
// engine computes every value, `| json`, `line_format` and `regexp` stages
// and structured metadata included. Every rendered Loki alert has a test
// that fires it and one that must not, and each test holds labels and
// annotations exactly.
//
// Both event layouts (issue 67): with structured metadata on a current
// Loki, the rules as rendered; and without it on a Loki configured as an
// upgraded install is (lokiproc.Options.Upgraded: structured metadata
// disallowed), the rules rendered with logs.structuredMetadata: false and
// the same tests' lines pushed in that layout (the channel a stream label,
// no metadata): every alert fires and stays quiet where it does in the
// other.
func TestLokiRules(t *testing.T) {
	for _, metadata := range []bool{true, false} {
		t.Run(fmt.Sprintf("structuredMetadata=%t", metadata), func(t *testing.T) {
			t.Parallel()
			runLokiRuleTests(t, metadata)
		})
	}
}

func runLokiRuleTests(t *testing.T, metadata bool) {
	loki := lokiproc.Start(t, lokiproc.Options{Tenants: true, Upgraded: !metadata})
	var layout []rulefmt.Rule
	if !metadata {
		cfg := config.Default()
		cfg.Logs.StructuredMetadata = false
		layout = lokiRules(t, cfg)
	}
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
		if !metadata {
			if len(layout) != len(rules) {
				t.Fatalf("%d rules rendered without metadata, %d with", len(layout), len(rules))
			}
			f.WithoutMetadata, rules = true, layout
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
					fires[at.Alertname] = true
				} else {
					quiet[at.Alertname] = true
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
		// Load makes the paths relative to the working directory (promtest.Read).
		for _, rf := range f.RuleFiles {
			if got := filepath.Clean(rf); got != filepath.Clean("../manifests/ruler/loki/winobs-windows-events.yaml") {
				t.Errorf("%s reads %s, not the rendered Loki rules", path, got)
			}
		}
	}
}
