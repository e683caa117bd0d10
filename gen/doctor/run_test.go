package doctor

import (
	"context"
	"strings"
	"testing"

	"github.com/winobs/winobs/gen/rules"
)

// A check whose needs the facts lack is skipped with the reason, naming the
// check that found the cause; its function is never called, so it cannot
// pass on missing facts. With the needs met, it runs.
func TestChecksSkipOnUnmetNeeds(t *testing.T) {
	ran := 0
	probe := func(_ *run, _ context.Context, c Check) Check { ran++; c.Status = Pass; return c }
	specs := []spec{
		{"a", "needs an exporter", []need{exporterUp}, probe},
		{"b", "needs the records", []need{exporterUp, groupLoaded(rules.RecordsGroup)}, probe},
		{"c", "needs nothing", nil, probe},
	}
	r := &run{facts: facts{loaded: map[string]bool{}}}
	got := r.do(context.Background(), specs)
	if ran != 1 || got[0].Status != Skip || got[1].Status != Skip || got[2].Status != Pass ||
		!strings.Contains(got[0].Evidence[0], "see windows-nodes-scraped") {
		t.Errorf("no facts: ran %d, %+v", ran, got)
	}
	r.exportersUp = 2
	got = r.do(context.Background(), specs)
	if got[0].Status != Pass || got[1].Status != Skip || !strings.Contains(got[1].Evidence[0], "see rules-loaded") {
		t.Errorf("exporters, no records group: %+v", got)
	}
	r.loaded[rules.RecordsGroup] = true
	for _, c := range r.do(context.Background(), specs) {
		if c.Status != Pass || c.ID == "" || c.Title == "" {
			t.Errorf("every need met: %+v", c)
		}
	}
}

// The checklist's ids are unique: the JSON report names each once.
func TestCheckIDsAreUnique(t *testing.T) {
	seen := map[string]bool{"prometheus-reachable": true, "loki-reachable": true, "loki": true, "windows-nodes": true, "config": true}
	for _, s := range append(append([]spec{}, prometheusChecks...), lokiChecks...) {
		if seen[s.id] {
			t.Errorf("check id %s twice", s.id)
		}
		seen[s.id] = true
	}
}
