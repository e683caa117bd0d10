package logqlcheck

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/winobs/winobs/internal/testkit/fixture"
)

// EventLineFields is every key LogQL's json parser makes of the golden
// Alloy lines (nested objects joined with _), so a field the queries use
// exists in what the agents write.
func TestEventLineFieldsCoverTheGoldenLines(t *testing.T) {
	seen := map[string]bool{}
	var flatten func(prefix string, v any)
	flatten = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, child := range m {
				if prefix != "" {
					k = prefix + "_" + k
				}
				flatten(k, child)
			}
			return
		}
		seen[prefix] = true
	}
	for file, line := range fixture.ExpectedLines(t) {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		flatten("", v)
	}
	for k := range seen {
		if !slices.Contains(EventLineFields, k) {
			t.Errorf("the golden lines have %q, which EventLineFields lacks", k)
		}
	}
	if len(seen) < 12 {
		t.Errorf("only %d fields in the golden lines", len(seen))
	}
}

// Selects applies selectors and label filters as Loki does: equality and
// regex, negated or not, anchored, a missing name empty, filters over
// structured metadata too; a query it cannot read is an error.
func TestSelects(t *testing.T) {
	labels := map[string]string{"job": "windows-pods", "namespace": "shop"}
	metadata := map[string]string{"source": ".NET Runtime", "event_id": "1026"}
	for q, want := range map[string]bool{
		`{job="windows-pods"}`:                                                             true,
		`{job="windows-pods", namespace!="shop"}`:                                          false,
		`{job=~"windows-.*"} | source=~"Application Error|\\.NET Runtime"`:                 true,
		`{job="windows-pods"} | source=~"NET Runtime"`:                                     false, // anchored
		`{job="windows-pods"} | event_id!~"1000|1002"`:                                     true,
		`{job="windows-pods"} | level="error"`:                                             false, // missing: ""
		`{job="windows-pods"} | level=""`:                                                  true,
		`sum by (pod) (count_over_time({job="windows-pods"} | event_id="1026" [10m])) > 0`: true,
	} {
		got, err := Selects(q, labels, metadata)
		if err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", q, got, err, want)
		}
	}
	if _, err := Selects(`{job=~"("}`, labels, nil); err == nil {
		t.Error("a bad regex accepted")
	}
}
